"""combine_metrics: the quality rubrics in one call, the four severities in another (answer and
question only); one reason per metric, stored on its own Score; a refused or filtered safety call
leaves the quality scores alone."""

from __future__ import annotations

from typing import Any

import pytest

from monitor.evaluation.combined import COMBINED_CALL_ID, CombinedRubricEvaluator
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from monitor.evaluation.runner import evaluate_turn
from monitor.evaluation.safety import SAFETY_CALL_ID, SafetyEvaluator
from monitor.judge.types import JudgeError
from monitor.model import JudgeUsage, Score
from tests.evaluation.fakes import USAGE, FakeJudge, rag_turn

QUALITY = ["groundedness", "relevance", "coherence", "fluency"]
SAFETY = ["hate_unfairness", "sexual", "violence", "self_harm"]
QUALITY_REPLY: dict[str, Any] = {k: v for m, n in zip(QUALITY, (5, 4, 5, 5))
                                 for k, v in ((f"{m}_reason", f"{m} reason"), (m, n))}
SAFETY_REPLY: dict[str, Any] = {k: v for m, n in zip(SAFETY, (0, 0, 4, 1))
                                for k, v in ((f"{m}_reason", f"{m} reason"), (m, n))}


def _built(judge: FakeJudge, **options: Any) -> tuple[Any, ...]:
    config = EvaluationConfig(metrics=QUALITY + SAFETY, combine_metrics=True, **options)
    return build_evaluators(config, judge)


def _quality(judge: FakeJudge) -> CombinedRubricEvaluator:
    return next(e for e in _built(judge) if isinstance(e, CombinedRubricEvaluator))


async def _all(judge: FakeJudge, **options: Any) -> dict[str, Score]:
    return {s.metric: s for s in await evaluate_turn(rag_turn(), _built(judge, **options))}


def test_two_calls_quality_and_safety() -> None:
    built = _built(FakeJudge({}))
    assert [type(e) for e in built if e.metric_ids[0] in QUALITY + SAFETY] == [CombinedRubricEvaluator,
                                                                                 SafetyEvaluator]
    assert [e.metric_ids for e in built] == [tuple(QUALITY), tuple(SAFETY)]


async def test_every_score_has_its_own_reason() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: QUALITY_REPLY, SAFETY_CALL_ID: SAFETY_REPLY})
    scores = await _all(judge)
    assert len(judge.requests) == 2
    for metric in QUALITY + SAFETY:
        assert scores[metric].reason == f"{metric} reason", metric
    assert scores["relevance"].value == 4
    assert scores["violence"].label == "Medium" and scores["violence"].defect
    assert scores["violence"].details["defect_level"] == 4


async def test_the_safety_call_sees_the_answer_and_question_only() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: QUALITY_REPLY, SAFETY_CALL_ID: SAFETY_REPLY})
    await _all(judge)
    (safety,) = [r for r in judge.requests if r.metric == SAFETY_CALL_ID]
    (quality,) = [r for r in judge.requests if r.metric == COMBINED_CALL_ID]
    assert "<answer>" in safety.user and "<question>" in safety.user
    assert "<context>" not in safety.user and "Alpine Explorer tent is the most waterproof" not in safety.user
    assert quality.user.count("Alpine Explorer tent is the most waterproof") == 1
    assert "groundedness" not in safety.system and "violence" not in quality.system
    assert set(safety.json_schema["properties"]) == set(SAFETY_REPLY)
    assert safety.metrics == tuple(SAFETY) and quality.metrics == tuple(QUALITY)


@pytest.mark.parametrize("refusal", [
    JudgeError("refused", "judge refused: I can't help with that"),
    JudgeError("refused", "the judge provider's content filter blocked the reply (content_filter)"),
])
async def test_a_refused_safety_call_leaves_quality_intact(refusal: JudgeError) -> None:
    judge = FakeJudge({COMBINED_CALL_ID: QUALITY_REPLY, SAFETY_CALL_ID: refusal})
    scores = await _all(judge)
    for metric in QUALITY:
        assert scores[metric].status == "ok" and scores[metric].reason == f"{metric} reason"
    for metric in SAFETY:
        score = scores[metric]
        assert (score.status, score.outcome, score.value, score.defect) == (
            "unscored_refused", "unscored_refused", None, None)
        assert score.reason == str(refusal)


async def test_a_refused_quality_call_is_unscored_refused_too() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: JudgeError("refused", "content_filter"), SAFETY_CALL_ID: SAFETY_REPLY})
    scores = await _all(judge)
    assert {scores[m].outcome for m in QUALITY} == {"unscored_refused"}
    assert {scores[m].status for m in SAFETY} == {"ok"}


@pytest.mark.parametrize(("level", "value", "defect"), [("high", 6.0, True), (3, 3.0, False)])
async def test_refused_severity_counts_a_refusal_at_the_chosen_level(level: object, value: float,
                                                                     defect: bool) -> None:
    judge = FakeJudge({COMBINED_CALL_ID: QUALITY_REPLY, SAFETY_CALL_ID: JudgeError("refused", "filtered")})
    scores = await _all(judge, refused_severity=level)
    for metric in SAFETY:
        score = scores[metric]
        assert (score.status, score.value, score.defect) == ("ok", value, defect)
        assert score.details["refused"] is True
    assert {scores[m].status for m in QUALITY} == {"ok"}


async def test_refused_severity_applies_to_standalone_severities() -> None:
    judge = FakeJudge({"violence": JudgeError("refused", "filtered")})
    config = EvaluationConfig(metrics=["violence"], combine_metrics=False, refused_severity="medium")
    (evaluator,) = build_evaluators(config, judge)
    (score,) = await evaluator.evaluate(rag_turn())
    assert (score.value, score.defect, score.label) == (4.0, True, "Medium")


@pytest.mark.parametrize(("change", "outcome"), [
    ({"fluency": 9}, "out_of_range"),
    ({"coherence": "5"}, "parse_error"),
    ({"coherence": None}, "parse_error"),
    ({"coherence_reason": None}, "parse_error"),
    ({"reason": "a shared reason"}, "parse_error"),
])
async def test_a_reply_with_any_bad_sub_score_is_used_for_none(change: dict[str, object], outcome: str) -> None:
    """One declaration for the whole reply: the call is ok only when every score in it is used,
    so one bad sub-score (or a missing one, or an extra key) errors every metric of the call."""
    reply = {k: v for k, v in {**QUALITY_REPLY, **change}.items() if v is not None}
    judge = FakeJudge({COMBINED_CALL_ID: reply})
    scores = await _quality(judge).evaluate(rag_turn())
    assert {(s.status, s.error_type) for s in scores} == {("error", outcome)}
    assert scores[0].usage == USAGE  # the tokens were spent all the same


async def test_usage_is_on_the_first_metric_only() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: QUALITY_REPLY})
    scores = await _quality(judge).evaluate(rag_turn())
    assert scores[0].usage == USAGE
    assert all(s.usage == JudgeUsage() for s in scores[1:])


async def test_judge_error_errors_every_included_metric() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: JudgeError("rate_limited", "429")})
    scores = await _quality(judge).evaluate(rag_turn())
    assert {(s.status, s.error_type) for s in scores} == {("error", "rate_limited")}


async def test_metrics_without_inputs_are_skipped_and_left_out_of_the_call() -> None:
    reply = {k: v for k, v in QUALITY_REPLY.items() if not k.startswith("groundedness")}
    judge = FakeJudge({COMBINED_CALL_ID: reply})
    scores = {s.metric: s for s in await _quality(judge).evaluate(rag_turn(documents=(), system_prompt=None))}
    assert scores["groundedness"].status == "skipped"
    assert "groundedness" not in judge.requests[0].json_schema["properties"]
    assert scores["relevance"].status == "ok"


async def test_system_prompt_is_fixed_even_when_members_are_skipped() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: lambda r: {k: v for k, v in QUALITY_REPLY.items()
                                                    if k in r.json_schema["properties"]}})
    evaluator = _quality(judge)
    await evaluator.evaluate(rag_turn())
    await evaluator.evaluate(rag_turn(documents=(), system_prompt=None))
    assert judge.requests[0].system == judge.requests[1].system


def test_combine_safety_is_removed_with_a_pointer() -> None:
    with pytest.raises(ValueError, match="combine_safety was removed"):
        EvaluationConfig(metrics=QUALITY, combine_safety=True)  # type: ignore[call-arg]
