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


def _documents(relevant: list[bool] | None = None, used: list[bool] | None = None) -> Any:
    """The ``documents`` reply part for the judgements the request asked for."""

    def build(request: Any) -> list[dict[str, Any]]:
        keys = request.json_schema["properties"]["documents"]["items"]["properties"]
        flags = {"relevant": relevant, "used": used}
        count = len(relevant or used or [])
        return [{"n": n, **{k: flags[k][n - 1] for k in ("relevant", "used") if k in keys}}  # type: ignore[index]
                for n in range(1, count + 1)]

    return build


def _renumbered(documents: Any, numbers: dict[int, int]) -> Any:
    def build(request: Any) -> list[dict[str, Any]]:
        return [{**d, "n": numbers.get(d["n"], d["n"])} for d in documents(request)]

    return build


def _tonic(**parts: Any) -> Any:
    """A Tonic-set reply builder that keeps only the judgements the request asked for."""

    def build(request: Any) -> dict[str, Any]:
        wanted = request.json_schema["properties"]
        return {k: (v(request) if callable(v) else v) for k, v in parts.items() if k in wanted}

    return build


TONIC_OK = _tonic(similarity_reason="same fact", similarity=4.5,
                  documents=_documents([True, False], [True, False]),
                  points=[{"point": "Alpine Explorer is most waterproof", "supported": True}],
                  outside_reason="adds a claim", outside=True)

# metric id -> (call id, good reply, expected value, expected label or None)
GOOD: dict[str, tuple[str, Any, float, str | None]] = {
    "groundedness": ("groundedness", {"reason": R, "score": 4}, 4.0, None),
    "relevance": ("relevance", {"reason": R, "score": 5}, 5.0, None),
    "coherence": ("coherence", {"reason": R, "score": 2}, 2.0, None),
    "fluency": ("fluency", {"reason": R, "score": 3}, 3.0, None),
    "similarity": ("similarity", {"reason": R, "score": 4}, 4.0, None),
    "retrieval_score": (
        "retrieval_score",
        {"reason": R, "intents": [{"intent": "most waterproof tent", "answered": True, "docs": [1]}]},
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
        ({"similarity_reason": R, "similarity": 5.5}, "out_of_range"),
        ({"similarity_reason": R, "similarity": "4"}, "parse_error"),
        ({"similarity_reason": R, "similarity": float("nan")}, "out_of_range"),
        ({"similarity": 4}, "parse_error"),
        ({"similarity_reason": R, "similarity": 4, "reason": R}, "parse_error"),
    ],
    "retrieval_score": [
        ({"reason": R, "intents": [{"intent": "x", "answered": True, "docs": [3]}]}, "out_of_range"),
        ({"reason": R, "intents": [{"intent": "x", "answered": "yes", "docs": [1]}]}, "parse_error"),
        ({"reason": R, "intents": [{"intent": "x", "answered": True}]}, "parse_error"),
        ({"reason": R, "intents": [{"intent": "x", "answered": True, "docs": [1]}], "score": 5}, "parse_error"),
        ({"intents": [{"intent": "x", "answered": True, "docs": [1]}]}, "parse_error"),
        # The cited documents must agree with the verdict.
        ({"reason": R, "intents": [{"intent": "x", "answered": True, "docs": []}]}, "parse_error"),
        ({"reason": R, "intents": [{"intent": "x", "answered": False, "docs": [2]}]}, "parse_error"),
    ],
    "chunks": [
        (_tonic(documents=_documents([True], [True])), "out_of_range"),  # two chunks were sent
        (_tonic(documents=_documents([True, True, False], [True, True, True])), "out_of_range"),
        (_tonic(documents=[{"n": 1, "relevant": True, "used": True}, {"n": 1, "relevant": False, "used": False}]),
         "parse_error"),  # the same document twice: mapped by number, never by position
        (_tonic(documents=_renumbered(_documents([True, False], [True, False]), {2: 3})), "out_of_range"),
        (_tonic(documents=_documents([1, 0], [1, 0])), "parse_error"),  # type: ignore[list-item]
        ({"relevant": [True, False], "used": [True, False]}, "parse_error"),  # the old positional lists
    ],
    "answer_consistency": [
        ({"points": [{"point": "x", "supported": "true"}]}, "parse_error"),
        ({"points": [{"point": "x"}]}, "parse_error"),
        ({"points": [{"point": str(i), "supported": True} for i in range(11)]}, "out_of_range"),
    ],
    "answer_consistency_binary": [
        ({"outside_reason": R, "outside": 0}, "parse_error"),
        ({"outside": True}, "parse_error"),
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
    "jailbreak": dict(system_prompt=None),
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


@pytest.mark.parametrize("metric", sorted(GOOD))
async def test_every_score_carries_its_own_reason_and_prompt_version(metric: str) -> None:
    call, reply, _, _ = GOOD[metric]
    score = await _evaluate(metric, FakeJudge({call: reply}))
    assert score.reason and isinstance(score.reason, str), metric
    assert len(score.details["prompt_version"]) == 12


@pytest.mark.parametrize("metric", sorted(GOOD))
async def test_a_refusal_is_unscored_refused_not_an_error(metric: str) -> None:
    call = GOOD[metric][0]
    judge = FakeJudge({call: JudgeError("refused", "judge refused: I can't help with that")})
    score = await _evaluate(metric, judge)
    assert (score.status, score.outcome, score.value, score.error_type) == (
        "unscored_refused", "unscored_refused", None, "refused")


async def test_retrieval_score_skips_a_greeting_with_the_judges_reason() -> None:
    judge = FakeJudge({"retrieval_score": {"reason": "a greeting asks for nothing", "intents": []}})
    score = await _evaluate("retrieval_score", judge, question="Hi there!")
    assert score.status == "skipped" and "a greeting asks for nothing" in (score.reason or "")


async def test_answer_consistency_skips_an_answer_without_main_points() -> None:
    judge = FakeJudge({"tonic": {"points": []}})
    score = await _evaluate("answer_consistency", judge, answer="Sorry, I cannot help with that.")
    assert score.status == "skipped" and "no main point" in (score.reason or "")


async def test_tonic_documents_map_by_number_not_position() -> None:
    reply = _tonic(documents=[{"n": 2, "relevant": False, "used": False}, {"n": 1, "relevant": True, "used": True}])
    config = EvaluationConfig(metrics=["retrieval_precision", "augmentation_accuracy", "augmentation_precision"])
    (evaluator,) = build_evaluators(config, FakeJudge({"tonic": reply}))
    scores = {s.metric: s for s in await evaluator.evaluate(rag_turn())}
    assert scores["retrieval_precision"].details["chunks"] == [{"relevant": True, "used": True},
                                                               {"relevant": False, "used": False}]
    assert scores["retrieval_precision"].reason == "relevant: doc1; relevant and used: doc1" or \
        scores["retrieval_precision"].reason == "relevant to the question: doc1 (of 2)"
    assert scores["augmentation_accuracy"].reason == "used in the answer: doc1 (of 2)"
    assert scores["augmentation_precision"].value == 1.0


async def test_tonic_relevance_is_read_before_the_answer() -> None:
    judge = FakeJudge({"tonic": TONIC_OK})
    await _evaluate("retrieval_precision", judge)
    user = judge.requests[0].user
    assert user.index("<question>") < user.index("<doc1>") < user.index("<doc2>")
    assert "<answer>" not in user  # retrieval_precision alone never shows the answer
    judge = FakeJudge({"tonic": TONIC_OK})
    await _evaluate("augmentation_precision", judge)
    user = judge.requests[0].user
    assert user.index("<doc2>") < user.index("<answer>")


async def test_jailbreak_needs_a_system_prompt() -> None:
    judge = FakeJudge({})
    score = await _evaluate("jailbreak", judge, system_prompt=None)
    assert score.status == "skipped" and "no system prompt" in (score.reason or "")
    assert score.details["jailbreak_attempt"] is False
    assert judge.requests == []
