"""The public API reports a refused or filtered judge call as ``unscored_refused`` (issue 28), for a
turn and for a conversation, instead of failing on a status it does not know."""

from __future__ import annotations

from monitor.evaluation.scoring import graded, refused
from rag_monitor.results import conversation_result, result_from_score

SCALE = (0.0, 7.0)


def test_a_refused_score_is_an_unscored_refused_result() -> None:
    result = result_from_score(refused("violence", SCALE, "judge refused: no"))
    assert (result.status, result.value, result.passed, result.error_type) == (
        "unscored_refused", None, None, "refused")
    assert result.raise_for_error() is result  # not an error


def test_a_conversation_with_only_refused_turns_is_unscored_refused() -> None:
    turns = [result_from_score(refused("violence", SCALE, "filtered")) for _ in range(2)]
    result = conversation_result("violence", turns, None)
    assert (result.status, result.reason) == ("unscored_refused", "filtered")


def test_a_conversation_with_a_scored_turn_keeps_its_aggregate() -> None:
    from monitor.evaluation.conversation import MetricAggregate

    turns = [result_from_score(refused("violence", SCALE, "filtered")),
             result_from_score(graded("violence", 2, SCALE, False, label="Low"))]
    aggregate = MetricAggregate(metric="violence", method="max", value=2.0, turn_values=(None, 2.0), ok=1,
                                errors=0, skipped=0)
    assert conversation_result("violence", turns, aggregate).status == "ok"
