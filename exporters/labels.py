"""Label values for evaluation metrics: an allow-list with a cardinality cap per label.

Every time series costs the Prometheus server memory for as long as it lives, and a label fed
from request data (a route with ids in it, a model name typed by a user) can create millions.
So each allow-listed label admits at most ``max_values`` distinct values, first come first
served; later values are reported as ``other`` and counted, so the dashboard can show that a cap
was hit. The service label gets the same treatment.
"""

from __future__ import annotations

import threading
from typing import Sequence

from monitor.model import EvaluationResult, Turn
from monitor.telemetry import NullTelemetry, Telemetry, counter

__all__ = ["OTHER", "UNKNOWN", "LabelPolicy"]

OTHER = "other"
UNKNOWN = "unknown"
_MAX_VALUE_CHARS = 120


def _builtin(name: str, turn: Turn, policy: str) -> str | None:
    if name == "model":
        return turn.response_model or turn.request_model
    if name == "provider":
        return turn.provider
    if name == "convention":
        return turn.convention
    if name == "jailbreak_attempt":
        return "true" if turn.jailbreak_attempt else "false"
    if name == "sampling_policy":
        return policy
    return turn.labels.get(name)


LABEL_VALUES_CAPPED = counter(
    "rag_monitor_label_values_capped_total",
    "Evaluation label values reported as 'other' because the label reached its cardinality cap.", "label")


class LabelPolicy:
    """Maps a result to its label values, in ``names`` order (``service`` first).

    Thread-safe: the Prometheus and OTLP exporters call it from the event loop, the scrape
    renderer from a worker thread.
    """

    def __init__(self, names: Sequence[str], max_values: int, telemetry: Telemetry | None = None) -> None:
        self.names: tuple[str, ...] = ("service", *names)
        self._max = max_values
        self._seen: dict[str, set[str]] = {n: set() for n in self.names}
        self._telemetry = telemetry or NullTelemetry()
        self._lock = threading.Lock()

    def admit(self, name: str, value: str | None, *, count: bool = True) -> str:
        """The exported value of label ``name`` for a raw ``value`` (e.g. a stored service).
        ``count=False`` for a second look at a value already admitted for the same result (the
        rolling windows), so one capped value is counted once."""
        return self._admit(name, value, count)

    def _admit(self, name: str, value: str | None, count: bool = True) -> str:
        if not value:
            value = UNKNOWN
        value = value[:_MAX_VALUE_CHARS]
        seen = self._seen[name]
        if value in seen:
            return value
        with self._lock:
            if value in seen:
                return value
            if len(seen) >= self._max:
                overflow = True
            else:
                seen.add(value)
                overflow = False
        if overflow:
            if count:
                self._telemetry.add(LABEL_VALUES_CAPPED, label=name)
            return OTHER
        return value

    def values(self, result: EvaluationResult) -> tuple[str, ...]:
        turn = result.turn
        out = [self._admit("service", turn.service)]
        for name in self.names[1:]:
            out.append(self._admit(name, _builtin(name, turn, result.sampling_policy)))
        return tuple(out)

    def as_dict(self, result: EvaluationResult) -> dict[str, str]:
        return dict(zip(self.names, self.values(result)))

    def distinct_values(self, name: str) -> int:
        return len(self._seen[name])
