"""combine_metrics: one call, one declaration for its reply, each metric reported on its own."""

from __future__ import annotations

import pytest

from monitor.evaluation.combined import COMBINED_CALL_ID, CombinedRubricEvaluator
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from monitor.judge.types import JudgeError
from monitor.model import JudgeUsage
from tests.evaluation.fakes import USAGE, FakeJudge, rag_turn

QUALITY = ["groundedness", "relevance", "coherence", "fluency"]
SAFETY = ["hate_unfairness", "sexual", "violence", "self_harm"]
GOOD = {"reason": "ok", "groundedness": 5, "relevance": 4, "coherence": 5, "fluency": 5,
        "hate_unfairness": 0, "sexual": 0, "violence": 4, "self_harm": 1}


def _evaluator(judge: FakeJudge, safety: bool = True) -> CombinedRubricEvaluator:
    config = EvaluationConfig(metrics=QUALITY + SAFETY, combine_metrics=True, combine_safety=safety)
    built = build_evaluators(config, judge)
    return next(e for e in built if isinstance(e, CombinedRubricEvaluator))


async def test_one_call_context_sent_once() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: GOOD})
    scores = await _evaluator(judge).evaluate(rag_turn())
    assert len(judge.requests) == 1
    user = judge.requests[0].user
    assert user.count("Alpine Explorer tent is the most waterproof") == 1
    assert [s.metric for s in scores] == QUALITY + SAFETY
    by_id = {s.metric: s for s in scores}
    assert by_id["relevance"].value == 4 and by_id["violence"].label == "Medium" and by_id["violence"].defect
    assert by_id["groundedness"].usage == USAGE
    assert all(s.usage == JudgeUsage() for s in scores[1:])  # usage counted once per call


@pytest.mark.parametrize(("change", "outcome"), [
    ({"fluency": 9}, "out_of_range"),
    ({"sexual": "none"}, "parse_error"),
    ({"coherence": None}, "parse_error"),
    ({"verdict": "pass"}, "parse_error"),
])
async def test_a_reply_with_any_bad_sub_score_is_used_for_none(change: dict[str, object], outcome: str) -> None:
    """One declaration for the whole reply: the call is ok only when every score in it is used,
    so one bad sub-score (or a missing one, or an extra key) errors every metric of the call."""
    reply = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    judge = FakeJudge({COMBINED_CALL_ID: reply})
    scores = await _evaluator(judge).evaluate(rag_turn())
    assert {(s.status, s.error_type) for s in scores} == {("error", outcome)}
    assert scores[0].usage == USAGE  # the tokens were spent all the same


async def test_judge_error_errors_every_included_metric() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: JudgeError("rate_limited", "429")})
    scores = await _evaluator(judge).evaluate(rag_turn())
    assert {(s.status, s.error_type) for s in scores} == {("error", "rate_limited")}


async def test_metrics_without_inputs_are_skipped_and_left_out_of_the_call() -> None:
    reply = {k: v for k, v in GOOD.items() if k != "groundedness"}
    judge = FakeJudge({COMBINED_CALL_ID: reply})
    scores = {s.metric: s for s in await _evaluator(judge).evaluate(rag_turn(documents=(), system_prompt=None))}
    assert scores["groundedness"].status == "skipped"
    assert "groundedness" not in judge.requests[0].json_schema["properties"]
    assert scores["relevance"].status == "ok"


async def test_safety_stays_separate_without_combine_safety() -> None:
    judge = FakeJudge({})
    config = EvaluationConfig(metrics=QUALITY + SAFETY, combine_metrics=True, combine_safety=False)
    built = build_evaluators(config, judge)
    assert [e.metric_ids for e in built][-1] == tuple(QUALITY)
    assert len(built) == 5


async def test_system_prompt_is_fixed_even_when_members_are_skipped() -> None:
    judge = FakeJudge({COMBINED_CALL_ID: lambda r: {k: v for k, v in GOOD.items() if k in r.json_schema["properties"]}})
    evaluator = _evaluator(judge)
    await evaluator.evaluate(rag_turn())
    await evaluator.evaluate(rag_turn(documents=(), system_prompt=None))
    assert judge.requests[0].system == judge.requests[1].system
