"""The demo's configuration: the user's (defaults + ``-c`` file + env) with a few explicit changes.

Each change is returned as a line the demo prints at start, so nobody wonders why the demo
evaluates every turn while their ``serve`` caps the rate:

* ``sampling.policies`` → ``[{type: always}]``: every conversation is evaluated;
* ``exporters.labels`` gains ``route`` and ``model``, ``assembly.mapping.labels.route`` reads
  ``http.route`` (unless mapped already), ``assembly.mapping.ground_truth`` reads the sample
  app's reference-answer attribute;
* ``assembly.decision_wait_seconds`` at most 0.5 s: the live table moves without lag;
* the result store goes to a scratch directory (removed at exit) unless the config sets a path;
* OTLP receivers on ephemeral ports unless the config sets them (no clash with a running
  sidecar); the HTTP receiver is switched on (the sample app sends OTLP/HTTP);
* ``admin.port`` from ``--admin-port`` when given;
* the change detector steps every 5 s instead of 5 min (``regressions.detector.step_seconds``),
  reading new evaluations every second and 2 s after they are written (``refresh_seconds``,
  ``settle_seconds``), unless the config sets them: the status page's banner then shows the
  scripted regression within a minute. At 5 s steps the alarm level (10^4 steps on unchanged
  traffic) means about one false alarm per 14 hours per watched metric and statistic — fine for
  a demo, not for production.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from monitor.assembly.config import AssemblyConfig
from monitor.config import MonitorConfig
from monitor.receivers.config import ReceiversConfig
from monitor.regression_config import RegressionsConfig
from monitor.demo.rag_app import REFERENCE_ATTRIBUTE
from monitor.errors import ConfigError
from samplers.config import AlwaysConfig, SamplingConfig

__all__ = ["DEMO_LABELS", "MAX_DECISION_WAIT_SECONDS", "demo_config"]

DEMO_LABELS = ("route", "model")
MAX_DECISION_WAIT_SECONDS = 0.5
DEMO_DETECTOR_STEP_SECONDS = 5.0
_ROUTE_ATTRIBUTE = "http.route"


def _assembly(base: AssemblyConfig, notes: list[str]) -> AssemblyConfig:
    mapping = base.mapping
    labels = dict(mapping.labels)
    if "route" not in labels:
        labels["route"] = _ROUTE_ATTRIBUTE
        notes.append(f"assembly.mapping.labels.route = {_ROUTE_ATTRIBUTE}")
    ground_truth = list(mapping.ground_truth)
    if REFERENCE_ATTRIBUTE not in ground_truth:
        ground_truth.append(REFERENCE_ATTRIBUTE)
        notes.append(f"assembly.mapping.ground_truth += {REFERENCE_ATTRIBUTE} (the sample app's reference answers)")
    wait = base.decision_wait_seconds
    if wait > MAX_DECISION_WAIT_SECONDS:
        wait = MAX_DECISION_WAIT_SECONDS
        notes.append(f"assembly.decision_wait_seconds = {wait} (was {base.decision_wait_seconds})")
    return base.model_copy(update={
        "decision_wait_seconds": wait,
        "mapping": mapping.model_copy(update={"labels": labels, "ground_truth": ground_truth}),
    })


def _receivers(base: ReceiversConfig, notes: list[str]) -> ReceiversConfig:
    http, grpc = base.http, base.grpc
    http_update: dict[str, Any] = {}
    if not http.enabled:
        http_update["enabled"] = True
        notes.append("receivers.http.enabled = true (the sample app sends OTLP/HTTP)")
    if "port" not in http.model_fields_set:
        http_update["port"] = 0
    grpc_update: dict[str, Any] = {} if "port" in grpc.model_fields_set else {"port": 0}
    if http_update.get("port") == 0 or grpc_update:
        notes.append("receivers.*.port = 0 (ephemeral, printed below) so a running sidecar is not in the way")
    return base.model_copy(update={"http": http.model_copy(update=http_update),
                                   "grpc": grpc.model_copy(update=grpc_update)})


def _regressions(base: RegressionsConfig, notes: list[str]) -> RegressionsConfig:
    update: dict[str, Any] = {}
    changed: list[str] = []
    for name, demo in (("refresh_seconds", 1.0), ("settle_seconds", 2.0)):
        if name not in base.model_fields_set and getattr(base, name) > demo:
            update[name] = demo
            changed.append(f"regressions.{name} = {demo:g}")
    detector = base.detector
    if "step_seconds" not in detector.model_fields_set and detector.step_seconds > DEMO_DETECTOR_STEP_SECONDS:
        update["detector"] = detector.model_copy(update={"step_seconds": DEMO_DETECTOR_STEP_SECONDS})
        changed.insert(0, f"regressions.detector.step_seconds = {DEMO_DETECTOR_STEP_SECONDS:g} (was "
                          f"{detector.step_seconds:g})")
    if changed:
        notes.append(", ".join(changed) + ": the status page shows the regression within a minute")
    return base.model_copy(update=update)


def demo_config(base: MonitorConfig, *, admin_port: int | None, scratch_dir: Path) -> tuple[MonitorConfig, list[str]]:
    """``base`` adjusted for the demo, and one line per adjustment. Raises ConfigError."""
    notes: list[str] = []
    sampling = SamplingConfig(salt=base.sampling.salt, max_conversations=base.sampling.max_conversations,
                              policies=[AlwaysConfig(type="always", name="demo_every_turn")])
    notes.append("sampling.policies = [{type: always}] (every conversation is evaluated)")
    exporters = base.exporters
    labels = list(exporters.labels) + [name for name in DEMO_LABELS if name not in exporters.labels]
    if labels != list(exporters.labels):
        notes.append(f"exporters.labels = [{', '.join(labels)}]")
    store = exporters.store
    if "path" not in store.model_fields_set:
        store = store.model_copy(update={"path": str(scratch_dir / "results.sqlite3")})
        notes.append(f"exporters.store.path = {store.path} (removed at exit)")
    admin = base.admin
    if admin_port is not None and admin_port != admin.port:
        admin = admin.model_copy(update={"port": admin_port})
        notes.append(f"admin.port = {admin_port}" + (" (ephemeral, printed below)" if admin_port == 0 else ""))
    fields = {name: getattr(base, name) for name in type(base).model_fields}
    fields.update(
        sampling=sampling, assembly=_assembly(base.assembly, notes), receivers=_receivers(base.receivers, notes),
        admin=admin, exporters=exporters.model_copy(update={"labels": labels, "store": store}),
        regressions=_regressions(base.regressions, notes))
    try:
        # Validating the whole again runs the cross-section checks (label sources, distinct ports).
        return MonitorConfig.model_validate(fields), notes
    except ValidationError as exc:
        lines = [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors()]
        raise ConfigError("invalid demo configuration:\n  " + "\n  ".join(lines)) from None
