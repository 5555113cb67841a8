"""People's verdicts sent over OTLP: the GenAI evaluation event, marked as a person's.

An app or a review tool emits the same ``gen_ai.evaluation.result`` event the sidecar emits
(``exporters.evaluation_events``) on the judged trace, with ``rag_monitor.evaluation.source =
"human"``::

    gen_ai.evaluation.name         groundedness            (a configured metric)
    gen_ai.evaluation.score.label  pass | defect | fail    (fail is read as defect)  } one or
    gen_ai.evaluation.score.value  4                       (on the metric's scale)   } both
    rag_monitor.evaluation.source  human
    rag_monitor.reviewer.id        alice@example.com       (stored hashed)

The record's trace id is the judged turn's. :class:`HumanVerdictTap` sits in front of the
assembler: it takes such records out of every batch of log records and hands the rest on. Records
without the marker — including the sidecar's own events, should a collector route them back —
are never read as verdicts; a marked record from the sidecar's own instrumentation scope is
refused too (``own_event``), so the sidecar cannot count its own judgements as a person's.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Protocol, Sequence

from monitor.feedback.metrics import HUMAN_VERDICTS
from monitor.feedback.verdicts import DefectRule, HumanVerdict, VerdictError, make_verdict
from monitor.interfaces import SpanConsumer
from monitor.model import LogRecord, SpanRecord
from monitor.telemetry import LOGS_DROPPED, Telemetry

__all__ = ["HumanVerdictTap", "VerdictSink", "verdict_of", "EVENT_NAME", "SOURCE_ATTRIBUTE", "REVIEWER_ATTRIBUTE",
           "SIDECAR_SCOPE"]

EVENT_NAME = "gen_ai.evaluation.result"
SOURCE_ATTRIBUTE = "rag_monitor.evaluation.source"
REVIEWER_ATTRIBUTE = "rag_monitor.reviewer.id"
SIDECAR_SCOPE = "rag-monitor"  # the instrumentation scope of the sidecar's own events
_LABELS = {"pass": "pass", "defect": "defect", "fail": "defect"}
_ANONYMOUS = "otlp:anonymous"  # a verdict without a reviewer id: one per trace and metric


class VerdictSink(Protocol):
    def offer(self, verdict: HumanVerdict) -> None: ...


def is_human_verdict(record: LogRecord) -> bool:
    return record.event_name == EVENT_NAME and record.attributes.get(SOURCE_ATTRIBUTE) == "human"


def verdict_of(record: LogRecord, rules: Mapping[str, DefectRule], at: float) -> HumanVerdict:
    """The verdict a marked record carries; :class:`VerdictError` when it cannot be one."""
    if record.scope_name == SIDECAR_SCOPE:
        raise VerdictError("scope", "an event of the sidecar's own instrumentation scope is not a person's verdict")
    attrs = record.attributes
    label = attrs.get("gen_ai.evaluation.score.label")
    verdict = _LABELS.get(label.lower(), label) if isinstance(label, str) else label
    reviewer = attrs.get(REVIEWER_ATTRIBUTE) or _ANONYMOUS
    return make_verdict(rules, trace_id=record.trace_id, metric=attrs.get("gen_ai.evaluation.name"),
                        verdict=verdict, value=attrs.get("gen_ai.evaluation.score.value"), reviewer=reviewer,
                        source="otlp", at=at)


class HumanVerdictTap:
    """``SpanConsumer`` in front of the assembler: spans pass through; log records that are
    people's verdicts go to ``sink``, the others pass through."""

    def __init__(self, inner: SpanConsumer, sink: VerdictSink, rules: Mapping[str, DefectRule],
                 telemetry: Telemetry, clock: Callable[[], float] = time.time) -> None:
        self._inner = inner
        self._sink = sink
        self._rules = rules
        self._telemetry = telemetry
        self._clock = clock

    def consume_spans(self, spans: Sequence[SpanRecord]) -> Mapping[str, int]:
        return self._inner.consume_spans(spans)

    def consume_logs(self, logs: Sequence[LogRecord]) -> Mapping[str, int]:
        if not any(is_human_verdict(r) for r in logs):
            return self._inner.consume_logs(logs)
        rest: list[LogRecord] = []
        invalid = 0
        now = self._clock()
        for record in logs:
            if not is_human_verdict(record):
                rest.append(record)
                continue
            try:
                verdict = verdict_of(record, self._rules, now)
            except VerdictError:
                invalid += 1
                continue
            self._sink.offer(verdict)
        reasons = dict(self._inner.consume_logs(rest)) if rest else {}
        if invalid:
            # Not logged per record (an app's bug would flood the log): counted, and reported to
            # the sender in partial_success.
            self._telemetry.add(HUMAN_VERDICTS, invalid, source="otlp", state="invalid")
            self._telemetry.add(LOGS_DROPPED, invalid, reason="invalid_human_verdict")
            reasons["invalid_human_verdict"] = reasons.get("invalid_human_verdict", 0) + invalid
        return reasons
