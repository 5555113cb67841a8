"""Issue 28's seed-fidelity fixes, each pinned: what the judge is told (the wording is reviewed in
the golden files; these tests hold the rules that must not silently disappear) and what the code
does with the inputs."""

from __future__ import annotations

import re

import pytest

from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.inputs import Input, Missing, gather, share_budget
from monitor.evaluation.metrics import jailbreak, retrieval_score
from monitor.evaluation.metrics._tonic_set import _ASK, _BOTH_CHUNK_PARTS, _INTRO
from monitor.evaluation.metrics.azure_set import RUBRICS, SEVERITIES
from monitor.evaluation.registry import build_evaluators
from monitor.evaluation.severity import SEVERITY_LEVELS, SEVERITY_RULES, severity_system_prompt
from monitor.model import Document
from tests.evaluation.fakes import FakeJudge, rag_turn

RUBRIC = {d.metric_id: d for d in RUBRICS}


def test_every_rubric_level_is_anchored() -> None:
    for d in RUBRICS:
        assert len(d.anchors) == 5 and all(a.strip() for a in d.anchors), d.metric_id
        text = d.scale_text()
        assert [int(n) for n in re.findall(r"(\d) = ", text)] == [5, 4, 3, 2, 1]


def test_every_severity_level_is_anchored_and_3_vs_4_is_spelled_out() -> None:
    for level in range(8):
        assert re.search(rf"(^|\n|\. ){level} ", SEVERITY_LEVELS), level
    assert "3 vs 4" in SEVERITY_LEVELS
    for d in SEVERITIES:  # each category says what each band holds there
        assert all(band in d.anchors for band in ("0-1", "2-3", "4-5", "6-7")), d.metric_id


def test_severity_rules_for_fiction_quotes_and_education() -> None:
    assert "Fiction" in SEVERITY_RULES and "Quoted" in SEVERITY_RULES and "educational" in SEVERITY_RULES
    system = severity_system_prompt(SEVERITIES)
    assert SEVERITY_LEVELS in system and SEVERITY_RULES in system


def test_groundedness_is_entailment_unverifiable_is_unsupported_and_claim_free_answers_have_a_rule() -> None:
    g = RUBRIC["groundedness"]
    assert "follow logically" in g.criterion
    assert "unsupported, even if true" in g.criterion
    assert "no factual claim" in g.criterion and "refusal" in g.criterion
    assert "unverifiable" in g.anchors[1] and "contradicts" in g.anchors[0]


def test_relevance_scores_a_correct_not_in_the_documents_highly() -> None:
    assert "plainly saying so is 5" in RUBRIC["relevance"].criterion


def test_coherence_does_not_judge_relevance() -> None:
    c = RUBRIC["coherence"]
    assert "responds to the question" not in c.criterion
    assert "is relevance, not coherence" in c.criterion


def test_retrieval_score_uses_the_seeds_answered() -> None:
    assert "can be derived from them" in retrieval_score.SYSTEM
    assert "address the intent itself" in retrieval_score.SYSTEM
    assert "empty exactly when answered is false" in retrieval_score.SYSTEM
    assert "greeting" in retrieval_score.SYSTEM


def test_tonic_prompt_says_what_the_blocks_are_and_defines_used_and_supported() -> None:
    assert "<docN> blocks are the documents" in _INTRO
    assert "Decide from the question alone" in _ASK["relevant"]
    assert "Decide from the question alone" in _BOTH_CHUNK_PARTS
    assert "a paraphrase counts, a shared topic does not" in _ASK["used"]
    assert "entailed by the context alone" in _ASK["points"] and "none for a refusal" in _ASK["points"]


def test_jailbreak_is_a_documented_heuristic_that_needs_a_system_prompt() -> None:
    assert "comparison" in (jailbreak.__doc__ or "") and "heuristic" in (jailbreak.__doc__ or "")
    assert jailbreak.Input.SYSTEM_PROMPT in jailbreak.METRIC.required


@pytest.mark.parametrize(("lengths", "budget", "expected"), [
    ([100, 5000, 20000], 12000, [100, 5000, 6900]),
    ([10, 20], 100, [10, 20]),
    ([9000, 9000, 9000], 12000, [4000, 4000, 4000]),
    ([], 100, []),
])
def test_share_budget_hands_unused_room_to_longer_documents(lengths: list[int], budget: int,
                                                            expected: list[int]) -> None:
    assert share_budget(lengths, budget) == expected
    assert sum(share_budget(lengths, budget)) <= budget


def test_groundedness_context_keeps_the_last_document() -> None:
    """Cutting the joined text would drop the last document; the shared budget keeps a share of each."""
    docs = (Document("d1", content="filler " * 4000), Document("d2", content="The tent costs 120 euros."))
    gathered = gather(rag_turn(documents=docs), (Input.CONTEXT,), (), max_context_chars=2000)
    assert not isinstance(gathered, Missing)
    (block,) = gathered.blocks
    assert "The tent costs 120 euros." in block.text
    assert len(block.text) <= 2000 + 20
    assert gathered.details["context_truncated"] is True


async def test_groundedness_judges_claims_from_later_documents() -> None:
    docs = tuple(Document(f"d{i}", content=("filler " * 3000) if i < 3 else "Fact from the last document.")
                 for i in range(4))
    judge = FakeJudge({"groundedness": {"reason": "r", "score": 5}})
    config = EvaluationConfig(metrics=["groundedness"], combine_metrics=False, max_context_chars=4000)
    (evaluator,) = build_evaluators(config, judge)
    await evaluator.evaluate(rag_turn(documents=docs))
    assert "Fact from the last document." in judge.requests[0].user


async def test_the_tonic_call_leaves_room_for_its_largest_valid_reply() -> None:
    """20 documents, 10 points of 12 words and two 20-word reasons must fit max_output_tokens
    (characters / 4), so a complete reply is never cut short into a parse_error."""
    import json

    from monitor.evaluation.inputs import MAX_DOCUMENTS
    from monitor.evaluation.metrics._tonic_set import MAX_POINTS

    docs = tuple(Document(f"d{i}", content=f"document {i}") for i in range(MAX_DOCUMENTS))
    judge = FakeJudge({"tonic": {}})
    config = EvaluationConfig(metrics=["answer_similarity", "retrieval_precision", "augmentation_precision",
                                       "answer_consistency", "answer_consistency_binary"])
    (evaluator,) = build_evaluators(config, judge)
    await evaluator.evaluate(rag_turn(documents=docs))
    (request,) = judge.requests
    reason = " ".join(["wordy"] * 20)
    largest = {
        "similarity_reason": reason, "similarity": 4.5,
        "documents": [{"n": n, "relevant": False, "used": False} for n in range(1, MAX_DOCUMENTS + 1)],
        "points": [{"point": " ".join(["claimed"] * 12), "supported": False} for _ in range(MAX_POINTS)],
        "outside_reason": reason, "outside": False,
    }
    request.reply.validate(largest)
    assert len(json.dumps(largest)) / 4 <= request.max_output_tokens


@pytest.mark.parametrize(("metrics", "value"), [
    (["groundedness", "relevance", "coherence", "fluency"], 3),
    (["hate_unfairness", "sexual", "violence", "self_harm"], 7),
])
async def test_shared_calls_leave_room_for_every_reason(metrics: list[str], value: int) -> None:
    import json

    judge = FakeJudge({"combined_rubrics": {}, "safety": {}})
    for evaluator in build_evaluators(EvaluationConfig(metrics=metrics), judge):
        await evaluator.evaluate(rag_turn())
    (request,) = judge.requests
    largest = {k: v for m in metrics for k, v in ((f"{m}_reason", " ".join(["wordy"] * 20)), (m, value))}
    request.reply.validate(largest)
    assert len(json.dumps(largest)) / 4 <= request.max_output_tokens
