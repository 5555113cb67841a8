"""Whole turns: every text field, numbering shared across the turn, counts per kind, config."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from monitor.config import load_config
from monitor.errors import ConfigError
from monitor.model import Document, Message, Turn
from monitor.redaction import REDACTIONS, RedactionConfig, Redactor
from monitor.telemetry import CountingTelemetry

EMAIL, OTHER = "jane.doe@example.com", "ops@example.org"


def turn(**fields: object) -> Turn:
    base: dict[str, object] = dict(trace_id="t1", conversation_id="c1", question="q", answer="a")
    base.update(fields)
    return Turn(**base)  # type: ignore[arg-type]


def test_every_text_field_is_redacted_with_numbering_shared_across_the_turn() -> None:
    counts = CountingTelemetry()
    original = turn(
        question=f"I am {EMAIL}, card 4111 1111 1111 1111. Who handles refunds?",
        answer=f"Write to {OTHER}; we will reply to {EMAIL}.",
        documents=(Document("d1", f"Refunds: {OTHER}, phone +1 202 555 0143.", 0.9, title=f"Owner {OTHER}"),
                   Document("d2", None)),
        history=(Message("user", f"my email is {EMAIL}"), Message("assistant", "")),
        system_prompt="Escalate to +1 202 555 0143.",
        ground_truth=f"Refunds are handled by {OTHER}.",
        error=f"upstream rejected {EMAIL}",
    )
    redacted = Redactor(RedactionConfig(), counts).redact_turn(original)
    assert redacted.question == "I am [EMAIL_1], card [CARD_NUMBER_1]. Who handles refunds?"
    assert redacted.answer == "Write to [EMAIL_2]; we will reply to [EMAIL_1]."
    assert redacted.documents[0] == Document("d1", "Refunds: [EMAIL_2], phone [PHONE_1].", 0.9,
                                             title="Owner [EMAIL_2]")
    assert redacted.documents[1] is original.documents[1]
    assert redacted.history == (Message("user", "my email is [EMAIL_1]"), Message("assistant", ""))
    assert redacted.system_prompt == "Escalate to [PHONE_1]."
    assert redacted.ground_truth == "Refunds are handled by [EMAIL_2]."
    assert redacted.error == "upstream rejected [EMAIL_1]"
    # Ids, labels and numbers are untouched.
    assert (redacted.trace_id, redacted.conversation_id, redacted.documents[0].id) == ("t1", "c1", "d1")
    assert counts.by_label(REDACTIONS, "kind") == {"email": 8, "card_number": 1, "phone": 2}


def test_numbering_ignores_case_and_formatting() -> None:
    text = Redactor(RedactionConfig()).redact_text(
        "Jane.Doe@Example.com or jane.doe@example.com; 415-555-2671 = (415) 555 2671; 212-555-0199")
    assert text == "[EMAIL_1] or [EMAIL_1]; [PHONE_1] = [PHONE_1]; [PHONE_2]"


def test_a_clean_turn_is_returned_as_it_is() -> None:
    counts = CountingTelemetry()
    original = turn(question="Which tent is waterproof?", answer="The Alpine Explorer, rated 3000 mm.")
    assert Redactor(RedactionConfig(), counts).redact_turn(original) is original
    assert not counts.by_label(REDACTIONS, "kind")


def test_custom_patterns_run_first_and_count_under_their_name() -> None:
    counts = CountingTelemetry()
    config = RedactionConfig(patterns=[{"name": "employee_id", "regex": r"EMP-\d{6}"},
                                       {"name": "ticket", "regex": r"tkt_[a-z0-9]{8}", "ignore_case": True}])
    text = Redactor(config, counts).redact_text("EMP-123456 opened TKT_ab12cd34 from 10.1.2.3")
    assert text == "[EMPLOYEE_ID_1] opened [TICKET_1] from [IP_ADDRESS_1]"
    assert counts.by_label(REDACTIONS, "kind") == {"employee_id": 1, "ticket": 1, "ip_address": 1}


def test_kinds_can_be_switched_off() -> None:
    config = RedactionConfig(kinds=("email",), national_ids=())
    assert Redactor(config).redact_text("a@b.io 192.168.0.1 SSN 123-45-6789") == "[EMAIL_1] 192.168.0.1 SSN 123-45-6789"


@pytest.mark.parametrize("data, field", [
    ({"kinds": ["email", "passport"]}, "passport"),
    ({"national_ids": ["xx_id"]}, "xx_id"),
    ({"patterns": [{"name": "Bad Name", "regex": "x"}]}, "name"),
    ({"patterns": [{"name": "broken", "regex": "(unclosed"}]}, "does not compile"),
    ({"patterns": [{"name": "empty", "regex": "a*"}]}, "empty string"),
    ({"patterns": [{"name": "email", "regex": "x"}]}, "already a detector"),
    ({"keep_texts": False}, "keep_texts"),
])
def test_config_errors_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        RedactionConfig.model_validate(data)


def test_redaction_is_on_by_default_and_configurable_from_yaml_and_env(tmp_path) -> None:
    assert load_config(None, environ={}).redaction.enabled
    path = tmp_path / "config.yaml"
    path.write_text("redaction:\n  keep_text: false\n  patterns:\n    - {name: order, regex: 'ORD-\\d+'}\n")
    config = load_config(path, environ={"RAG_MONITOR_REDACTION__ENABLED": "false"})
    assert not config.redaction.enabled and not config.redaction.keep_text
    assert config.redaction.patterns[0].name == "order"
    path.write_text("redaction:\n  kinds: [emails]\n")
    with pytest.raises(ConfigError, match="emails"):
        load_config(path, environ={})
