"""Prometheus exposition of the self-telemetry on one private registry.

Counters are prometheus-client objects built from the declared counters; values that belong to running
components (queue depths, pending traces) are read at scrape time by a custom collector, so the
hot path never updates a gauge.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.spec import SCRAPE_TIME
from monitor.telemetry import Instrument, declared_counters

__all__ = ["PrometheusTelemetry", "ScrapeTimeCollector"]


class PrometheusTelemetry:
    """Implements :class:`monitor.telemetry.Telemetry` on ``registry``.

    Every counter declared so far (``monitor.telemetry.counter``) is registered at construction,
    so its series exist from the first scrape; one declared later is registered at first use."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._counters: dict[str, Counter] = {}
        self._children: dict[tuple[str, tuple[str, ...]], Any] = {}
        for declared in declared_counters():
            self._register(declared)

    def _register(self, inst: Instrument) -> Counter:
        # prometheus-client appends _total itself.
        made = Counter(inst.name.removesuffix("_total"), inst.help, inst.labels, registry=self.registry)
        self._counters[inst.name] = made
        return made

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        key = (counter.name, tuple(labels[name] for name in counter.labels))
        child = self._children.get(key)
        if child is None:
            made = self._counters.get(counter.name) or self._register(counter)
            child = made.labels(*key[1]) if counter.labels else made
            self._children[key] = child
        child.inc(amount)


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
