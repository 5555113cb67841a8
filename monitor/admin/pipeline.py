"""Pipeline health: the self-telemetry counters read back from the registry, as totals and as
counts over the last few minutes, for ``/api/pipeline``, the status page and the log watch.

An empty status page means one of many things — nothing sent, spans refused, traces without a
turn, nothing sampled, a judge failing — and the counters that tell them apart already exist
(``exporters.spec``). Reading them back from the one registry keeps a single source of truth and
costs nothing on the hot path: :func:`read_pipeline` collects only the families listed here.
:class:`PipelineHealth` keeps a bounded history of readings so that "recent" means the last
``recent_seconds`` rather than "since start".
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Mapping

from prometheus_client import CollectorRegistry

__all__ = ["COUNTERS", "Counts", "Reading", "read_pipeline", "PipelineHealth", "delta", "circuit_state"]

# family → (sample name, label that keys its counts). Other labels are summed over.
COUNTERS: dict[str, tuple[str, str]] = {
    "spans_received": ("rag_monitor_spans_received_total", "transport"),
    "logs_received": ("rag_monitor_logs_received_total", "transport"),
    "otlp_metrics_received": ("rag_monitor_otlp_metrics_requests_total", "outcome"),
    "spans_dropped": ("rag_monitor_spans_dropped_total", "reason"),
    "requests_rejected": ("rag_monitor_requests_rejected_total", "reason"),
    "turns_assembled": ("rag_monitor_turns_assembled_total", "convention"),
    "traces_without_turn": ("rag_monitor_traces_without_turn_total", "reason"),
    "sampling": ("rag_monitor_sampling_decisions_total", "decision"),
    "sampled_by_policy": ("rag_monitor_sampling_decisions_total", "policy"),
    "queue_dropped": ("rag_monitor_queue_dropped_total", "queue"),
    "evaluations": ("rag_monitor_evaluations_total", "outcome"),
    "judge_requests": ("rag_monitor_judge_requests_total", "outcome"),
}
_GAUGES = ("rag_monitor_queue_depth", "rag_monitor_queue_capacity", "rag_monitor_pending_traces",
           "rag_monitor_open_conversations", "rag_monitor_judge_circuit_open")

Counts = dict[str, dict[str, float]]


@dataclass(frozen=True, slots=True)
class Reading:
    at: float  # unix seconds
    counts: Counts  # family → key → total since start
    queues: dict[str, tuple[float, float]] = field(default_factory=dict)  # queue → (depth, capacity)
    gauges: dict[str, float] = field(default_factory=dict)


def _names() -> set[str]:
    return {sample for sample, _ in COUNTERS.values()} | set(_GAUGES)


def read_pipeline(registry: CollectorRegistry, now: float) -> Reading:
    """Collect the pipeline families from ``registry`` (blocking: call in a thread)."""
    counts: Counts = {family: {} for family in COUNTERS}
    by_sample: dict[str, list[tuple[str, str]]] = {}
    for family, (sample, key) in COUNTERS.items():
        by_sample.setdefault(sample, []).append((family, key))
    queues: dict[str, list[float]] = {}
    gauges: dict[str, float] = {}
    for metric in registry.restricted_registry(_names()).collect():
        for s in metric.samples:
            if s.name in by_sample:
                for family, key in by_sample[s.name]:
                    if family == "sampled_by_policy" and s.labels.get("decision") != "sampled":
                        continue
                    label = s.labels.get(key, "")
                    counts[family][label] = counts[family].get(label, 0.0) + s.value
            elif s.name in ("rag_monitor_queue_depth", "rag_monitor_queue_capacity"):
                slot = queues.setdefault(s.labels.get("queue", ""), [0.0, 0.0])
                slot[0 if s.name.endswith("depth") else 1] = s.value
            elif math.isfinite(s.value):
                gauges[s.name.removeprefix("rag_monitor_")] = s.value
    return Reading(now, counts, {q: (d, c) for q, (d, c) in queues.items()}, gauges)


def delta(new: Counts, old: Counts | None) -> Counts:
    """``new - old`` per family and key (a counter reset reads as the new total)."""
    out: Counts = {}
    for family, values in new.items():
        before = (old or {}).get(family, {})
        out[family] = {k: (v - before.get(k, 0.0)) if v >= before.get(k, 0.0) else v for k, v in values.items()}
    return out


def circuit_state(gauges: Mapping[str, float]) -> str:
    value = gauges.get("judge_circuit_open", 0.0)
    return "open" if value >= 1.0 else "half_open" if value > 0.0 else "closed"


class PipelineHealth:
    """Readings every ``interval_seconds`` (driven by :meth:`sample`), kept for ``recent_seconds``."""

    def __init__(self, registry: CollectorRegistry, *, clock: Callable[[], float] = time.time,
                 recent_seconds: float = 300.0, interval_seconds: float = 10.0) -> None:
        self._registry = registry
        self._clock = clock
        self.recent_seconds = recent_seconds
        self.interval_seconds = interval_seconds
        self.started_at = clock()
        self._history: deque[Reading] = deque(maxlen=math.ceil(recent_seconds / interval_seconds) + 2)
        self._lock = threading.Lock()
        # When a reading first saw more spans than the one before: "no spans for N s" on the page,
        # to the resolution of the readings (every interval, and on each /api/pipeline request).
        self._spans_seen = 0.0
        self.last_span_at: float | None = None

    def sample(self) -> Reading:
        """Read the registry now and keep the reading when the last kept one is an interval old.
        Blocking; thread-safe."""
        reading = read_pipeline(self._registry, self._clock())
        spans = sum(reading.counts.get("spans_received", {}).values())
        with self._lock:
            if spans > self._spans_seen:
                self.last_span_at = reading.at
            self._spans_seen = spans
            if not self._history or reading.at - self._history[-1].at >= self.interval_seconds * 0.9:
                self._history.append(reading)
        return reading

    def recent(self, reading: Reading) -> tuple[float, Counts]:
        """(start of the recent span, counts since then): from the newest kept reading at least
        ``recent_seconds`` old, or since start when the process is younger."""
        horizon = reading.at - self.recent_seconds
        with self._lock:
            base = next((r for r in reversed(self._history) if r.at <= horizon), None)
        if base is None:
            return self.started_at, delta(reading.counts, None)
        return base.at, delta(reading.counts, base.counts)
