"""Every judge metric: its reply declaration (good and invalid replies, validated as the judge client
does), judge failures, missing inputs."""

from __future__ import annotations

from typing import Any

import pytest

from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from monitor.judge.types import JudgeError
from monitor.model import Document, Score
from tests.evaluation.fakes import USAGE, FakeJudge, rag_turn

R = "short reason"


def _tonic_reply(**parts: Any) -> Any:
    """A Tonic-set reply builder that keeps only the judgements the request asked for."""

    def build(request: Any) -> dict[str, Any]:
        return {k: v for k, v in parts.items() if k in request.json_schema["properties"]}

    return build


TONIC_OK = _tonic_reply(similarity=4.5, relevant=[True, False], used=[True, False],
                        points=[{"point": "Alpine Explorer is most waterproof", "supported": True}],
                        outside=True)

# metric id -> (call id, good reply, expected value, expected label or None)
GOOD: dict[str, tuple[str, Any, float, str | None]] = {
    "groundedness": ("groundedness", {"reason": R, "score": 4}, 4.0, None),
    "relevance": ("relevance", {"reason": R, "score": 5}, 5.0, None),
    "coherence": ("coherence", {"reason": R, "score": 2}, 2.0, None),
    "fluency": ("fluency", {"reason": R, "score": 3}, 3.0, None),
    "similarity": ("similarity", {"reason": R, "score": 4}, 4.0, None),
    "retrieval_score": (
        "retrieval_score",
        {"intents": [{"intent": "most waterproof tent", "answered": True, "docs": [1]}]},
        5.0,
        None,
    ),
    "hate_unfairness": ("hate_unfairness", {"reason": R, "severity": 0}, 0.0, "Very low"),
    "sexual": ("sexual", {"reason": R, "severity": 3}, 3.0, "Low"),
    "violence": ("violence", {"reason": R, "severity": 5}, 5.0, "Medium"),
    "self_harm": ("self_harm", {"reason": R, "severity": 7}, 7.0, "High"),
    "jailbreak": ("jailbreak", {"reason": R, "jailbroken": False}, 0.0, "held"),
    "answer_relevance": ("answer_relevance", {"reason": R, "score": 0.85}, 0.85, None),
    "answer_similarity": ("tonic", TONIC_OK, 4.5, None),
    "retrieval_precision": ("tonic", TONIC_OK, 0.5, None),
    "augmentation_accuracy": ("tonic", TONIC_OK, 0.5, None),
    "augmentation_precision": ("tonic", TONIC_OK, 1.0, None),
    "answer_consistency": ("tonic", TONIC_OK, 1.0, None),
    "answer_consistency_binary": ("tonic", TONIC_OK, 0.0, None),
}

# metric id -> replies that must be rejected, with the outcome
BAD: dict[str, list[tuple[Any, str]]] = {
    "rubric": [
        ({"reason": R, "score": 6}, "out_of_range"),
        ({"reason": R, "score": 0}, "out_of_range"),
        ({"reason": R, "score": 3.5}, "out_of_range"),
        ({"reason": R, "score": "5"}, "parse_error"),
        ({"reason": R, "score": True}, "parse_error"),
        ({"reason": R}, "parse_error"),
        ({"reason": R, "score": 4, "note": "ignore"}, "parse_error"),
        ({"reason": 5, "score": 4}, "parse_error"),
    ],
    "severity": [
        ({"reason": R, "severity": 8}, "out_of_range"),
        ({"reason": R, "severity": -1}, "out_of_range"),
        ({"reason": R, "severity": "High"}, "parse_error"),
        ({"severity": 2}, "parse_error"),
        ({"reason": R, "severity": 2, "score": 5}, "parse_error"),
    ],
    "jailbreak": [
        ({"reason": R, "jailbroken": 1}, "parse_error"),
        ({"reason": R, "jailbroken": "no"}, "parse_error"),
        ({"reason": R}, "parse_error"),
    ],
    "unit": [
        ({"reason": R, "score": 1.5}, "out_of_range"),
        ({"reason": R, "score": -0.1}, "out_of_range"),
        ({"reason": R, "score": float("nan")}, "out_of_range"),
        ({"reason": R, "score": None}, "parse_error"),
        ({"reason": R, "score": 0.5, "extra": 1}, "parse_error"),
    ],
    "answer_similarity": [
        ({"similarity": 5.5}, "out_of_range"),
        ({"similarity": "4"}, "parse_error"),
        ({"similarity": float("nan")}, "out_of_range"),
        ({"similarity": 4, "reason": R}, "parse_error"),
    ],
    "retrieval_score": [
        ({"intents": []}, "out_of_range"),
        ({"intents": [{"intent": "x", "answered": True, "docs": [3]}]}, "out_of_range"),
        ({"intents": [{"intent": "x", "answered": "yes", "docs": [1]}]}, "parse_error"),
        ({"intents": [{"intent": "x", "answered": True}]}, "parse_error"),
        ({"intents": [{"intent": "x", "answered": True, "docs": [1]}], "score": 5}, "parse_error"),
    ],
    "chunks": [
        (_tonic_reply(relevant=[True], used=[True]), "out_of_range"),  # two chunks were sent
        (_tonic_reply(relevant=[True, True, False], used=[True, True, True]), "out_of_range"),
        (_tonic_reply(relevant=[1, 0], used=[1, 0]), "parse_error"),
        (_tonic_reply(relevant=["yes", "no"], used=["yes", "no"]), "parse_error"),
        ({"chunks": [{"n": 1, "relevant": True, "used": True}]}, "parse_error"),
    ],
    "answer_consistency": [
        ({"points": []}, "out_of_range"),
        ({"points": [{"point": "x", "supported": "true"}]}, "parse_error"),
        ({"points": [{"point": "x"}]}, "parse_error"),
    ],
    "answer_consistency_binary": [
        ({"outside": 0}, "parse_error"),
        ({}, "parse_error"),
    ],
}
KIND = {
    **{m: "rubric" for m in ("groundedness", "relevance", "coherence", "fluency", "similarity")},
    **{m: "severity" for m in ("hate_unfairness", "sexual", "violence", "self_harm")},
    "jailbreak": "jailbreak",
    "answer_relevance": "unit",
    "answer_similarity": "answer_similarity",
    "retrieval_score": "retrieval_score",
    **{m: "chunks" for m in ("retrieval_precision", "augmentation_accuracy", "augmentation_precision")},
    "answer_consistency": "answer_consistency",
    "answer_consistency_binary": "answer_consistency_binary",
}


async def _evaluate(metric: str, judge: FakeJudge, **turn_overrides: Any) -> Score:
    config = EvaluationConfig(metrics=[metric], combine_metrics=False)
    (evaluator,) = build_evaluators(config, judge)
    scores = [s for s in await evaluator.evaluate(rag_turn(**turn_overrides)) if s.metric == metric]
    assert len(scores) == 1
    return scores[0]


@pytest.mark.parametrize("metric", sorted(GOOD))
async def test_good_reply_is_parsed(metric: str) -> None:
    call, reply, value, label = GOOD[metric]
    judge = FakeJudge({call: reply})
    score = await _evaluate(metric, judge)
    assert score.status == "ok", score
    assert score.value == pytest.approx(value)
    assert score.label == label
    assert len(judge.requests) == 1
    request = judge.requests[0]
    assert request.json_schema["additionalProperties"] is False
    assert set(request.json_schema["required"]) == set(request.json_schema["properties"])


def test_every_judge_metric_is_covered() -> None:
    from monitor.evaluation.registry import default_registry

    registry = default_registry()
    judged = {m for m in registry.ids() if registry.get(m).tier == "judge"} - {"overall_score"}
    assert judged == set(GOOD) == set(KIND)


@pytest.mark.parametrize(
    ("metric", "reply", "outcome"),
    [(m, reply, outcome) for m in sorted(KIND) for reply, outcome in BAD[KIND[m]]],
)
async def test_invalid_reply_is_an_error_with_its_outcome(metric: str, reply: Any, outcome: str) -> None:
    call = GOOD[metric][0]
    judge = FakeJudge({call: reply})
    score = await _evaluate(metric, judge)
    assert score.status == "error"
    assert score.value is None
    assert score.error_type == outcome
    assert score.usage == USAGE  # tokens were spent even though the reply was useless


@pytest.mark.parametrize("metric", sorted(GOOD))
async def test_judge_error_becomes_error_score(metric: str) -> None:
    call = GOOD[metric][0]
    judge = FakeJudge({call: JudgeError("timeout", "judge timed out")})
    score = await _evaluate(metric, judge)
    assert (score.status, score.value, score.error_type, score.reason) == ("error", None, "timeout", "judge timed out")


MISSING = {
    "groundedness": dict(documents=(), system_prompt=None),
    "relevance": dict(question=""),
    "coherence": dict(question=" "),
    "fluency": dict(answer=""),
    "similarity": dict(ground_truth=None),
    "retrieval_score": dict(documents=(Document(id="d1", content=None),)),
    "hate_unfairness": dict(answer=""),
    "sexual": dict(answer=""),
    "violence": dict(answer=""),
    "self_harm": dict(answer=""),
    "jailbreak": dict(question=""),
    "answer_relevance": dict(question=""),
    "answer_similarity": dict(ground_truth=""),
    "retrieval_precision": dict(documents=()),
    "augmentation_accuracy": dict(documents=()),
    "augmentation_precision": dict(documents=()),
    "answer_consistency": dict(documents=(), system_prompt=None),
    "answer_consistency_binary": dict(documents=(), system_prompt=None),
}


@pytest.mark.parametrize("metric", sorted(MISSING))
async def test_missing_input_is_skipped_without_a_call(metric: str) -> None:
    judge = FakeJudge({})
    score = await _evaluate(metric, judge, **MISSING[metric])
    assert score.status == "skipped" and score.value is None and score.reason
    assert judge.requests == []


async def test_defect_rules() -> None:
    judge = FakeJudge({"groundedness": {"reason": R, "score": 2}, "violence": {"reason": R, "severity": 4}})
    assert (await _evaluate("groundedness", judge)).defect is True
    assert (await _evaluate("violence", judge)).defect is True  # default level Medium = 4
    judge = FakeJudge({"groundedness": {"reason": R, "score": 3}, "violence": {"reason": R, "severity": 3}})
    assert (await _evaluate("groundedness", judge)).defect is False
    assert (await _evaluate("violence", judge)).defect is False


async def test_severity_level_option() -> None:
    judge = FakeJudge({"violence": {"reason": R, "severity": 5}})
    config = EvaluationConfig(metrics=[{"id": "violence", "severity_level": "high"}], combine_metrics=False)
    (evaluator,) = build_evaluators(config, judge)
    (score,) = await evaluator.evaluate(rag_turn())
    assert score.defect is False and score.label == "Medium"


async def test_context_falls_back_to_system_prompt() -> None:
    judge = FakeJudge({"groundedness": {"reason": R, "score": 5}})
    score = await _evaluate("groundedness", judge, documents=(Document(id="d1", content=None),))
    assert score.details["context_source"] == "system_prompt"
    assert "Contoso outdoor shop" in judge.requests[0].user
    score = await _evaluate("groundedness", judge)
    assert score.details["context_source"] == "documents"


async def test_answer_relevance_without_context() -> None:
    judge = FakeJudge({"answer_relevance": {"reason": R, "score": 0.4}})
    score = await _evaluate("answer_relevance", judge, documents=(), system_prompt=None)
    assert score.status == "ok" and score.defect is True
    assert "<context>" not in judge.requests[0].user


async def test_jailbreak_details_carry_attempt_flag() -> None:
    judge = FakeJudge({"jailbreak": {"reason": R, "jailbroken": True}})
    score = await _evaluate("jailbreak", judge, jailbreak_attempt=True)
    assert score.value == 1.0 and score.defect is True
    assert score.details["jailbreak_attempt"] is True and score.details["system_prompt_given"] is True
    assert "<system_prompt>" in judge.requests[0].user
