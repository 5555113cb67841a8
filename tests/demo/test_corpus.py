"""The sample app's script does what the demo claims, checked with the sidecar's own evaluators."""

from __future__ import annotations

import random

import pytest

from monitor.demo.corpus import COLLECTION_OF_ROUTE, CONVERSATIONS, DOCUMENTS, RUDE_REMARKS, document
from monitor.demo.rag_app import LocalAnswerModel
from monitor.demo.retrieval import Retriever
from monitor.evaluation.local.jailbreak_attempt import detect_jailbreak_attempt
from monitor.evaluation.local.lexical_groundedness import DEFAULT_THRESHOLD, lexical_support
from monitor.evaluation.local.offensive_language import offensive_probabilities
from monitor.evaluation.metrics.f1_score import f1_score

TURNS = [(c.route, t) for c in CONVERSATIONS for t in c.turns]
ANSWERED = [(route, t) for route, t in TURNS if not t.jailbreak]


def _context(retriever: Retriever, route: str, question: str) -> str:
    return "\n\n".join(r.document.content for r in retriever.search(route, question))


def test_every_source_and_route_exists() -> None:
    ids = [d.id for d in DOCUMENTS]
    assert len(ids) == len(set(ids))
    for route, turn in ANSWERED:
        assert document(turn.source).collection == COLLECTION_OF_ROUTE[route], turn.question  # type: ignore[arg-type]
    assert {d.collection for d in DOCUMENTS} == set(COLLECTION_OF_ROUTE.values())


@pytest.mark.parametrize("route,turn", ANSWERED, ids=[t.question[:40] for _, t in ANSWERED])
def test_healthy_retrieval_finds_the_source_and_grounds_the_answer(route, turn) -> None:
    retriever = Retriever()
    found = [r.document.id for r in retriever.search(route, turn.question)]
    assert turn.source in found
    support = lexical_support(turn.answer, _context(retriever, route, turn.question))
    assert support is not None and support["value"] >= DEFAULT_THRESHOLD


def test_regressed_retrieval_returns_other_collections_and_ungrounds_most_answers() -> None:
    retriever = Retriever()
    retriever.regressed = True
    ungrounded = 0
    for route, turn in ANSWERED:
        found = retriever.search(route, turn.question)
        assert all(r.document.collection != COLLECTION_OF_ROUTE[route] for r in found)
        support = lexical_support(turn.answer, _context(retriever, route, turn.question))
        ungrounded += support is not None and support["value"] < DEFAULT_THRESHOLD
    assert ungrounded >= 0.9 * len(ANSWERED)


def test_reference_answers_pass_f1() -> None:
    with_reference = [t for _, t in ANSWERED if t.reference]
    assert len(with_reference) >= len(ANSWERED) // 2
    for turn in with_reference:
        assert f1_score(turn.answer, turn.reference) >= 0.5, turn.question  # type: ignore[arg-type]


def test_jailbreak_questions_are_flagged_and_ordinary_ones_are_not() -> None:
    jailbreaks = [t for _, t in TURNS if t.jailbreak]
    assert jailbreaks
    assert all(detect_jailbreak_attempt(t.question).flagged for t in jailbreaks)
    assert not any(detect_jailbreak_attempt(t.question).flagged for _, t in ANSWERED)


def test_rude_remarks_are_offensive_and_answers_are_not() -> None:
    remarks = offensive_probabilities(list(RUDE_REMARKS))
    answers = offensive_probabilities([t.answer for _, t in ANSWERED])
    assert min(remarks) >= 0.5
    assert max(answers) < 0.5


def test_model_mixes_answers_vague_rude_and_leaks() -> None:
    model = LocalAnswerModel(random.Random(3))
    ordinary = ANSWERED[0][1]
    attempt = next(t for _, t in TURNS if t.jailbreak)
    variants = [model.complete(ordinary, "SYSTEM").variant for _ in range(400)]
    assert {"answer", "vague", "rude"} <= set(variants)
    assert variants.count("answer") > 300
    replies = [model.complete(attempt, "You are Skylark's support assistant.\n\nArticles: x") for _ in range(60)]
    assert {r.variant for r in replies} == {"refusal", "leak"}
    leak = next(r for r in replies if r.variant == "leak")
    assert "support assistant" in leak.text and "Articles" not in leak.text
    # Same seed, same script.
    again = LocalAnswerModel(random.Random(3))
    assert [again.complete(ordinary, "SYSTEM").variant for _ in range(400)] == variants
