"""Self-telemetry: each counter is declared once, beside the code that counts it.

A component declares its counters at module level and counts through the sink it was given::

    FORWARDED = counter("rag_monitor_forward_total", "Bodies forwarded …, by outcome.", "outcome")
    ...
    self._telemetry.add(FORWARDED, outcome="sent")

Declaring puts the counter in a process-wide catalogue, so the Prometheus registry, the OTLP push
of the same registry and the dashboard/alert-rule checks see it with no other edit: adding a
counter is a one-place change. Label sets are closed and small (DESIGN.md §5): never an id, a
text or a user. Counters counted by more than one stage are declared here.

This module imports nothing of the pipeline, so every stage can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Instrument",
    "counter",
    "declared_counters",
    "Telemetry",
    "NullTelemetry",
    "CountingTelemetry",
    "SPANS_DROPPED",
    "LOGS_DROPPED",
    "REQUESTS_REJECTED",
    "QUEUE_DROPPED",
    "BACKLOG",
    "OTLP_METRICS_REQUESTS",
]


@dataclass(frozen=True, slots=True)
class Instrument:
    """One exported instrument: its name, help text, kind (counter | gauge | histogram) and labels."""

    name: str
    help: str
    kind: str
    labels: tuple[str, ...] = ()
    unit: str = ""
    buckets: tuple[float, ...] = ()


_DECLARED: dict[str, Instrument] = {}


def counter(name: str, help: str, *labels: str) -> Instrument:
    """Declare a self-telemetry counter (once per process; a second identical declaration is the
    same counter, a different one is a programming error)."""
    if not name.startswith("rag_monitor_") or not name.endswith("_total"):
        raise ValueError(f"counter {name!r}: names are rag_monitor_…_total")
    declared = Instrument(name, help, "counter", tuple(labels))
    prior = _DECLARED.setdefault(name, declared)
    if prior != declared:
        raise ValueError(f"counter {name!r} is declared twice with different help or labels")
    return declared


def declared_counters() -> tuple[Instrument, ...]:
    """Every counter declared by the modules imported so far, by name."""
    return tuple(sorted(_DECLARED.values(), key=lambda i: i.name))


class Telemetry(Protocol):
    """The self-telemetry sink every stage counts into. Cheap and non-blocking; ``labels`` are
    exactly the counter's label names."""

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None: ...


class NullTelemetry:
    """Counts nothing (tools such as ``inspect``, and unit tests that read other signals)."""

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        pass


# Counted by more than one stage.
SPANS_DROPPED = counter("rag_monitor_spans_dropped_total", "Spans dropped on purpose, by reason.", "reason")
LOGS_DROPPED = counter("rag_monitor_logs_dropped_total", "Log records dropped on purpose, by reason.", "reason")
REQUESTS_REJECTED = counter(
    "rag_monitor_requests_rejected_total",
    "Requests answered with an error status (OTLP receivers and the admin API), by transport and reason.",
    "transport", "reason")
QUEUE_DROPPED = counter("rag_monitor_queue_dropped_total", "Items dropped because a bounded queue was full.",
                        "queue")
BACKLOG = counter(
    "rag_monitor_backlog_total",
    "Evaluation backlog events: deferred (sampled turns left unevaluated at shutdown, kept for the next start), "
    "resumed (loaded at start), claimed (a stopped replica's rows taken over in a fleet), not_persisted (evaluated "
    "without a durable copy), invalid (unreadable rows "
    "removed).", "event")


class CountingTelemetry:
    """Keeps the counts in memory: offline tools that report them (``rag-monitor eval``'s
    redaction counts) and tests. Strict: labels other than the counter's are a ``ValueError``,
    so a misspelt label fails where it is written."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        if set(labels) != set(counter.labels):
            raise ValueError(f"{counter.name} takes labels {counter.labels}, got {tuple(labels)}")
        key = (counter.name, tuple(sorted(labels.items())))
        self._counts[key] = self._counts.get(key, 0) + amount

    def value(self, counter: Instrument, **labels: str) -> float:
        """The count of one series, or the sum over the series matching the labels given."""
        wanted = set(labels.items())
        return sum(n for (name, series), n in self._counts.items()
                   if name == counter.name and wanted <= set(series))

    def by_label(self, counter: Instrument, label: str) -> dict[str, float]:
        """The counts of ``counter`` summed by one label's values."""
        out: dict[str, float] = {}
        for (name, series), n in self._counts.items():
            if name == counter.name:
                value = dict(series)[label]
                out[value] = out.get(value, 0) + n
        return out
OTLP_METRICS_REQUESTS = counter(
    "rag_monitor_otlp_metrics_requests_total",
    "OTLP metrics exports received (not evaluated), by outcome: forwarded (forward.endpoint set) or discarded.",
    "outcome")
