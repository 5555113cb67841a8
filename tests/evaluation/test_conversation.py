"""Seed conversation format → turns; per-metric aggregation (mean/max, NaN-safe)."""

from __future__ import annotations

import math

import pytest

from monitor.evaluation.conversation import ConversationFormatError, aggregate_conversation, turns_from_conversation
from monitor.evaluation.scoring import failed, graded, refused, skipped

SEED = {
    "messages": [
        {"role": "system", "content": "You are Contoso's shop assistant."},
        {"role": "user", "content": "How can I check the status of my online order?"},
        {
            "role": "assistant",
            "content": "Please refer to your email for order confirmation and tracking information.",
            "context": {"citations": [{"id": "cHJvZHVjdF9pbmZvXzYubWQz", "title": "Information about product item_number: 6",
                                       "content": "# Information about product item_number: 6\n\nClean the EcoFire stove when cool."}]},
        },
        {"role": "user", "content": "And how do I clean the stove?"},
        {"role": "assistant", "content": "Let it cool, then brush off the ash."},
    ]
}


def test_each_assistant_message_is_a_turn_with_history_and_citations() -> None:
    first, second = turns_from_conversation(SEED, "conv-1")
    assert first.question == "How can I check the status of my online order?"
    assert first.history == () and first.system_prompt == "You are Contoso's shop assistant."
    assert first.documents[0].id == "cHJvZHVjdF9pbmZvXzYubWQz" and first.documents[0].title.startswith("Information")
    assert second.question == "And how do I clean the stove?"
    assert [m.role for m in second.history] == ["user", "assistant"]
    assert second.documents == ()
    assert (first.trace_id, second.trace_id, second.conversation_id) == ("conv-1:0", "conv-1:1", "conv-1")


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({}, "messages"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "assistant", "content": "x", "context": {"citations": "no"}}]}, "citations"),
    ],
)
def test_format_errors_say_where(data: dict[str, object], where: str) -> None:
    with pytest.raises(ConversationFormatError, match=where.replace("[", r"\[")):
        turns_from_conversation(data)


def test_aggregation_mean_for_quality_max_for_safety_nan_safe() -> None:
    turns = [
        [graded("groundedness", 5, (1, 5), False), graded("violence", 1, (0, 7), False)],
        [failed("groundedness", (1, 5), "timeout", "t"), graded("violence", 6, (0, 7), True)],
        [graded("groundedness", 2, (1, 5), True), skipped("violence", (0, 7), "no answer")],
    ]
    result = aggregate_conversation(turns)
    g, v = result["groundedness"], result["violence"]
    assert (g.method, g.value, g.turn_values, g.ok, g.errors) == ("mean", 3.5, (5.0, None, 2.0), 2, 1)
    assert (v.method, v.value, v.turn_values, v.skipped) == ("max", 6.0, (1.0, 6.0, None), 1)


def test_refused_turns_are_counted_apart_not_in_the_worst_turn() -> None:
    turns = [[graded("violence", 1, (0, 7), False)], [refused("violence", (0, 7), "content_filter")]]
    v = aggregate_conversation(turns)["violence"]
    assert (v.value, v.turn_values, v.ok, v.errors, v.skipped, v.refused) == (1.0, (1.0, None), 1, 0, 0, 1)


def test_aggregation_without_values_is_none_not_nan() -> None:
    result = aggregate_conversation([[failed("relevance", (1, 5), "timeout", "t")], []])
    agg = result["relevance"]
    assert agg.value is None and agg.turn_values == (None, None)
    assert not any(isinstance(v, float) and math.isnan(v) for v in agg.turn_values)
