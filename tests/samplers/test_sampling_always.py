"""always: rule language and probability 1."""

from __future__ import annotations

import pytest

from monitor.model import Turn
from samplers.always import AlwaysPolicy, Rule


def _turn(**kwargs: object) -> Turn:
    base: dict[str, object] = {"trace_id": "t", "conversation_id": "c", "question": "q", "answer": "a"}
    base.update(kwargs)
    return Turn(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rule", "turn", "signals", "expected"),
    [
        (Rule("error", "exists"), _turn(error="Timeout"), {}, True),
        (Rule("error", "exists"), _turn(), {}, False),
        (Rule("jailbreak_attempt", "==", True), _turn(jailbreak_attempt=True), {}, True),
        (Rule("jailbreak_attempt", "==", True), _turn(), {}, False),
        (Rule("jailbreak_attempt", "exists"), _turn(), {}, False),
        (Rule("labels.feedback", "<", 3.0), _turn(labels={"feedback": "2"}), {}, True),
        (Rule("labels.feedback", "<", 3.0), _turn(labels={"feedback": "4"}), {}, False),
        (Rule("labels.feedback", "<", 3.0), _turn(labels={"feedback": "bad"}), {}, False),
        (Rule("labels.feedback", "<", 3.0), _turn(), {}, False),
        (Rule("labels.route", "==", "billing"), _turn(labels={"route": "billing"}), {}, True),
        (Rule("labels.route", "!=", "billing"), _turn(labels={"route": "search"}), {}, True),
        (Rule("labels.route", "in", ("a", "b")), _turn(labels={"route": "b"}), {}, True),
        (Rule("signals.toxicity", ">=", 0.8), _turn(), {"toxicity": 0.8}, True),
        (Rule("signals.toxicity", ">=", 0.8), _turn(), {"toxicity": 0.79}, False),
        (Rule("signals.toxicity", ">=", 0.8), _turn(), {"toxicity": float("nan")}, False),
        (Rule("latency_seconds", ">", 10.0), _turn(latency_seconds=12.5), {}, True),
        (Rule("request_model", "==", "gpt-4o"), _turn(request_model="gpt-4o"), {}, True),
    ],
)
def test_rule(rule: Rule, turn: Turn, signals: dict[str, float], expected: bool) -> None:
    assert rule.matches(turn, signals) is expected


def test_any_and_all() -> None:
    rules = (Rule("error", "exists"), Rule("jailbreak_attempt", "==", True))
    only_error = _turn(error="boom")
    assert AlwaysPolicy("a", rules).plan(only_error, {}).probability == 1.0
    assert AlwaysPolicy("a", rules, match_all=True).plan(only_error, {}).probability == 0.0
    assert AlwaysPolicy("a", rules).plan(_turn(), {}).probability == 0.0


def test_unknown_op_rejected() -> None:
    with pytest.raises(ValueError, match="op"):
        Rule("error", "~=")
