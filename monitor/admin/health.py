"""``/api/pipeline``: is data flowing, and if not, where does it stop and why.

``{"generated_at", "started_at", "recent_since" (unix s: start of the "recent" span, the last
5 minutes or since start), "last_span_at" (unix s of the first reading that saw the newest spans,
null before any), "setup": {<stage>: <line>} (the start-up summary), "judge":
{"enabled", "circuit" (closed | open | half_open)}, "stages": {<family>: {"total": {<key>: n},
"recent": {<key>: n}}}, "queues": {<queue>: {"depth", "capacity"}}, "pending_traces",
"open_conversations", "findings": [{"level" (warning | info), "code", "text"}], "fleet": F or null}``

F (fleet mode, ``monitor.fleet.status``): ``redis`` (URL, password redacted), ``replica``, ``replicas``,
``degraded`` (true while Redis is away), ``cause``, ``degraded_seconds``, ``on_redis_failure``,
``pending_decisions``, ``weights_held``; a degraded fleet also opens the findings with
``fleet_degraded``.

Families (``monitor.admin.pipeline.COUNTERS``) and their keys: ``spans_received`` and
``logs_received`` by transport, ``otlp_metrics_received`` by outcome, ``spans_dropped`` by
reason, ``requests_rejected`` by reason, ``turns_assembled`` by convention,
``traces_without_turn`` by reason, ``sampling`` by decision (sampled | not_sampled | shed),
``sampled_by_policy`` by policy, ``queue_dropped`` by queue, ``evaluations`` by outcome,
``judge_requests`` by outcome. Findings are computed on the recent counts when something
arrived recently, else on the totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from monitor.admin.diagnosis import Setting, diagnose
from monitor.admin.pipeline import PipelineHealth, Reading, circuit_state

__all__ = ["pipeline_document", "PipelineStatus"]


def _recent_activity(recent: Mapping[str, Mapping[str, float]]) -> bool:
    return any(sum(recent.get(f, {}).values()) for f in ("spans_received", "logs_received", "requests_rejected"))


def pipeline_document(health: PipelineHealth, reading: Reading, setting: Setting,
                      setup: Mapping[str, str], fleet: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build the document from a fresh ``reading`` (blocking only for the history lock)."""
    recent_since, recent = health.recent(reading)
    circuit = circuit_state(reading.gauges)
    basis = recent if _recent_activity(recent) else reading.counts
    findings = diagnose(basis, setting, pending_traces=reading.gauges.get("pending_traces", 0.0), circuit=circuit)
    notes = [{"level": f.level, "code": f.code, "text": f.text} for f in findings]
    if fleet is not None and fleet.get("degraded"):
        notes.insert(0, {"level": "warning", "code": "fleet_degraded",
                         "text": f"fleet degraded: Redis is away ({fleet.get('cause')}) for "
                                 f"{fleet.get('degraded_seconds')} s; this replica follows on_redis_failure="
                                 f"{fleet.get('on_redis_failure')}"})
    return {
        "generated_at": reading.at, "started_at": health.started_at, "recent_since": recent_since,
        "last_span_at": health.last_span_at,
        "setup": dict(setup),
        "judge": {"enabled": setting.judge_enabled, "circuit": circuit},
        "stages": {family: {"total": values, "recent": recent.get(family, {})}
                   for family, values in reading.counts.items()},
        "queues": {q: {"depth": d, "capacity": c} for q, (d, c) in sorted(reading.queues.items())},
        "pending_traces": reading.gauges.get("pending_traces", 0.0),
        "open_conversations": reading.gauges.get("open_conversations", 0.0),
        "findings": notes,
        "fleet": dict(fleet) if fleet is not None else None,
    }


@dataclass(frozen=True)
class PipelineStatus:
    """What ``/api/pipeline`` is built from: the counters' history, the configuration facts the
    findings need, and the start-up summary lines."""

    health: PipelineHealth
    setting: Setting
    setup: Callable[[], Mapping[str, str]]  # known once the ports are bound
    fleet: Callable[[], Mapping[str, Any]] | None = None  # fleet mode's state (monitor.fleet.status)

    def document(self) -> dict[str, Any]:
        """A fresh reading and its document. Blocking: run in a thread."""
        return pipeline_document(self.health, self.health.sample(), self.setting, self.setup(),
                                 self.fleet() if self.fleet is not None else None)
