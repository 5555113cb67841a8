"""What a replica says about the fleet: scrape-time gauges and the ``fleet`` block of ``/api/pipeline``."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from exporters.spec import FLEET
from monitor.fleet.link import FleetLink

__all__ = ["FleetCollector", "fleet_document"]

_HELP = {i.name: i.help for i in FLEET}


def fleet_document(link: FleetLink, pending: Callable[[], int], held: Callable[[], int]) -> dict[str, Any]:
    """``{"redis", "replica", "replicas", "degraded", "cause", "degraded_seconds", "on_redis_failure",
    "pending_decisions", "weights_held"}`` for ``/api/pipeline``."""
    return {"redis": link.config.display_url(), "replica": link.replica_id, "replicas": link.fleet_size,
            "degraded": not link.healthy, "cause": link.degraded_cause,
            "degraded_seconds": round(link.degraded_seconds, 1),
            "on_redis_failure": link.config.on_redis_failure, "pending_decisions": pending(),
            "weights_held": held()}


class FleetCollector(Collector):
    """``rag_monitor_fleet_*`` gauges, read from the running link at scrape time."""

    def __init__(self, link: FleetLink, pending: Callable[[], int], held: Callable[[], int]) -> None:
        self._link = link
        self._pending = pending
        self._held = held

    def collect(self) -> Iterable[GaugeMetricFamily]:
        values = {"rag_monitor_fleet_degraded": 0.0 if self._link.healthy else 1.0,
                  "rag_monitor_fleet_replicas": float(self._link.fleet_size),
                  "rag_monitor_fleet_pending_decisions": float(self._pending()),
                  "rag_monitor_weights_held": float(self._held())}
        for name, value in values.items():
            family = GaugeMetricFamily(name, _HELP[name])
            family.add_metric([], value)
            yield family
