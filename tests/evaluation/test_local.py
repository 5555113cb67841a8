"""Local tier: lexical groundedness and the offensive-language classifier (the jailbreak detector
has its own module: test_local_jailbreak.py)."""

from __future__ import annotations

from monitor.evaluation.local.lexical_groundedness import LexicalGroundednessEvaluator, lexical_support
from monitor.evaluation.local.offensive_language import OffensiveLanguageEvaluator, split_sentences
from monitor.model import Document
from tests.evaluation.fakes import rag_turn

def test_lexical_support_sanity() -> None:
    context = "The Alpine Explorer tent has a rainfly rated at 3000 mm and weighs 2 kg."
    grounded = lexical_support("The Alpine Explorer tent weighs 2 kg.", context)
    invented = lexical_support("The Summit Pro tent costs 500 dollars in Norway.", context)
    assert grounded is not None and invented is not None
    assert grounded["value"] == 1.0
    assert invented["value"] < 0.5
    assert "norway" in invented["unsupported_terms"]
    assert lexical_support("Yes, it is.", context) is None  # nothing but stopwords


async def test_lexical_groundedness_evaluator() -> None:
    (score,) = await LexicalGroundednessEvaluator().evaluate(rag_turn())
    assert score.status == "ok" and score.value == 1.0 and score.details["context_source"] == "documents"
    (score,) = await LexicalGroundednessEvaluator().evaluate(rag_turn(documents=(Document("d", None),)))
    assert score.details["context_source"] == "system_prompt"
    (score,) = await LexicalGroundednessEvaluator().evaluate(rag_turn(documents=(), system_prompt=None))
    assert score.status == "skipped"


def test_split_sentences() -> None:
    assert split_sentences("One. Two!\nThree?  ") == ["One.", "Two!", "Three?"]
    assert len(split_sentences(". ".join(["x"] * 300))) == 300  # no merged tail any more
    assert split_sentences("a" * 900) == ["a" * 400, "a" * 400, "a" * 100]


async def test_offensive_classifier_scores_offensive_text_higher() -> None:
    evaluator = OffensiveLanguageEvaluator()
    (clean,) = await evaluator.evaluate(rag_turn(answer="The Alpine Explorer Tent is the most waterproof."))
    (rude,) = await evaluator.evaluate(
        rag_turn(answer="The tent is waterproof. You are a fucking idiot and your question is shit.")
    )
    assert clean.value is not None and rude.value is not None
    assert rude.value > clean.value
    assert rude.defect is True and clean.defect is False
    assert rude.details["worst_sentence_index"] == 1
    (empty,) = await evaluator.evaluate(rag_turn(answer=" "))
    assert empty.status == "skipped"


def test_lexical_support_meets_inflections() -> None:
    context = "The batteries were charged overnight and the tents are tested in storms."
    support = lexical_support("The battery charges overnight; each tent was tested in a storm.", context)
    assert support is not None and support["value"] == 1.0


def test_lexical_support_reads_scripts_without_spaces() -> None:
    context = "这款帐篷防水性能很好，重量两公斤。"
    grounded = lexical_support("这款帐篷防水。", context)
    invented = lexical_support("这把椅子很便宜。", context)
    assert grounded is not None and invented is not None
    assert grounded["value"] == 1.0 and invented["value"] < 0.5


def test_a_flipped_negation_keeps_the_score_but_is_counted() -> None:
    context = "The Alpine Explorer tent is waterproof and weighs 2 kg."
    flipped = lexical_support("The Alpine Explorer tent is not waterproof.", context)
    faithful = lexical_support("The Alpine Explorer tent is waterproof.", context)
    assert flipped is not None and faithful is not None
    assert flipped["value"] == faithful["value"] == 1.0  # words cannot see meaning: documented
    assert flipped["negation_flips"] == 1 and faithful["negation_flips"] == 0
    agreeing = lexical_support("It is not heavy.", "The tent is not heavy at all.")
    assert agreeing is not None and agreeing["negation_flips"] == 0


def test_lexical_support_reads_a_bounded_view() -> None:
    huge = "tent " * 500_000
    support = lexical_support(huge, huge)
    assert support is not None and support["content_terms"] <= 20_480 // 5 + 10
