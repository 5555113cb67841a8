"""Prometheus exposition of the self-telemetry on one private registry.

Counters are prometheus-client objects built from the spec table; values that belong to running
components (queue depths, pending traces) are read at scrape time by a custom collector, so the
hot path never updates a gauge.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.spec import SCRAPE_TIME, SELF_TELEMETRY, Instrument

__all__ = ["PrometheusTelemetry", "ScrapeTimeCollector"]


def _counter(inst: Instrument, registry: CollectorRegistry) -> Counter:
    # prometheus-client appends _total itself.
    return Counter(inst.name.removesuffix("_total"), inst.help, inst.labels, registry=registry)


class PrometheusTelemetry:
    """Implements ``monitor.interfaces.Telemetry`` with counters on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        c = {inst.name: _counter(inst, registry) for inst in SELF_TELEMETRY}
        self._spans_received = c["rag_monitor_spans_received_total"]
        self._spans_dropped = c["rag_monitor_spans_dropped_total"]
        self._logs_received = c["rag_monitor_logs_received_total"]
        self._logs_dropped = c["rag_monitor_logs_dropped_total"]
        self._rejected = c["rag_monitor_requests_rejected_total"]
        self._turns = c["rag_monitor_turns_assembled_total"]
        self._no_turn = c["rag_monitor_traces_without_turn_total"]
        self._evicted = c["rag_monitor_traces_evicted_total"]
        self._closed = c["rag_monitor_conversations_closed_total"]
        self._forward = c["rag_monitor_forward_total"]
        self._queue_dropped = c["rag_monitor_queue_dropped_total"]
        self._capped = c["rag_monitor_label_values_capped_total"]
        self._store_failed = c["rag_monitor_store_write_failures_total"]
        self._jsonl_failed = c["rag_monitor_jsonl_write_failures_total"]
        self._backlog = c["rag_monitor_backlog_total"]
        self._redacted = c["rag_monitor_redactions_total"]
        self._truncated = c["rag_monitor_text_truncated_total"]
        self._otlp_metrics = c["rag_monitor_otlp_metrics_requests_total"]

    def spans_received(self, transport: str, count: int) -> None:
        self._spans_received.labels(transport).inc(count)

    def spans_dropped(self, reason: str, count: int) -> None:
        self._spans_dropped.labels(reason).inc(count)

    def logs_received(self, transport: str, count: int) -> None:
        self._logs_received.labels(transport).inc(count)

    def logs_dropped(self, reason: str, count: int) -> None:
        self._logs_dropped.labels(reason).inc(count)

    def requests_rejected(self, transport: str, reason: str) -> None:
        self._rejected.labels(transport, reason).inc()

    def turns_assembled(self, convention: str) -> None:
        self._turns.labels(convention).inc()

    def traces_without_turn(self, reason: str) -> None:
        self._no_turn.labels(reason).inc()

    def traces_evicted(self, reason: str) -> None:
        self._evicted.labels(reason).inc()

    def conversations_closed(self, reason: str) -> None:
        self._closed.labels(reason).inc()

    def forward_outcome(self, outcome: str) -> None:
        self._forward.labels(outcome).inc()

    def queue_dropped(self, queue: str, count: int) -> None:
        self._queue_dropped.labels(queue).inc(count)

    def label_capped(self, label: str) -> None:
        self._capped.labels(label).inc()

    def store_write_failed(self, count: int) -> None:
        self._store_failed.inc(count)

    def backlog(self, event: str, count: int) -> None:
        self._backlog.labels(event).inc(count)

    def redacted(self, kind: str, count: int) -> None:
        """``monitor.redaction.RedactionTelemetry``: values of ``kind`` replaced in one turn."""
        self._redacted.labels(kind).inc(count)

    def text_truncated(self, count: int) -> None:
        self._truncated.inc(count)

    def otlp_metrics_request(self, outcome: str) -> None:
        self._otlp_metrics.labels(outcome).inc()

    def jsonl_write_failed(self, count: int) -> None:
        self._jsonl_failed.inc(count)


class ScrapeTimeCollector(Collector):
    """Reads gauges from callables at scrape time. ``queues`` maps queue name → (depth reader,
    capacity)."""

    def __init__(self, queues: Mapping[str, tuple[Callable[[], int], int]], pending_traces: Callable[[], int],
                 pending_spans: Callable[[], int], open_conversations: Callable[[], int],
                 pending_bytes: Callable[[], int] = lambda: 0) -> None:
        self._queues = dict(queues)
        self._readers = {
            "rag_monitor_pending_traces": pending_traces,
            "rag_monitor_pending_spans": pending_spans,
            "rag_monitor_pending_bytes": pending_bytes,
            "rag_monitor_open_conversations": open_conversations,
        }

    def collect(self) -> Iterable[GaugeMetricFamily]:
        for inst in SCRAPE_TIME:
            if inst.name == "rag_monitor_queue_depth":
                fam = GaugeMetricFamily(inst.name, inst.help, labels=["queue"])
                for queue, (read, _) in self._queues.items():
                    fam.add_metric([queue], float(read()))
                yield fam
            elif inst.name == "rag_monitor_queue_capacity":
                fam = GaugeMetricFamily(inst.name, inst.help, labels=["queue"])
                for queue, (_, capacity) in self._queues.items():
                    fam.add_metric([queue], float(capacity))
                yield fam
            else:
                yield GaugeMetricFamily(inst.name, inst.help, value=float(self._readers[inst.name]()))
