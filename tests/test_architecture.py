"""The dependency rules of docs/architecture.md, enforced: importing any module of a stage loads
only that stage, the shared kernel and the stages the rules let it use.

Each module is imported in a fresh interpreter state (project modules removed from
``sys.modules`` before each import, third-party ones kept), so what it loads is what it needs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Imported by every stage: the data model, the seams, self-telemetry, errors, network plumbing,
# cleaning parsed JSON of lone surrogates.
KERNEL = {"monitor", "monitor.model", "monitor.interfaces", "monitor.telemetry", "monitor.errors",
          "monitor.turn_codec", "monitor.net", "monitor.surrogates"}

# A stage may use only the stages listed here (besides itself and the kernel). The composition
# root (monitor.app, monitor.cli, monitor.config, monitor.startup, monitor.config_hints), the
# offline tools (monitor.offline, monitor.calibration), the demo and the rag_monitor API compose
# stages and are free.
ALLOWED: dict[str, set[str]] = {
    "monitor.receivers": set(),
    "monitor.assembly": set(),
    "samplers": set(),
    "monitor.redaction": set(),
    "monitor.judge": set(),
    "monitor.evaluation": {"monitor.judge"},  # the judge tier calls the judge client
    "exporters": set(),  # the exporters see results only
    "monitor.admin": {"exporters"},  # it serves what the exporters keep (store, windows)
    # Fleet mode shares the samplers' decisions and the judge's budget through Redis, and declares its
    # scrape-time gauges in the exporters' spec table.
    "monitor.fleet": {"samplers", "monitor.judge", "exporters"},
    # Release comparisons and the change detector: pure statistics on observations.
    "monitor.regression": set(),
    # Feeds the statistics from the results or the store and publishes to the exporters' board.
    "monitor.regression_feed": {"monitor.regression", "monitor.regression_config", "exporters"},
    "monitor.regression_config": {"exporters"},  # label names it must not clash with
    # Human verdicts: joined with the judge's scores (the metrics' defect rules, the judge's model),
    # stored and counted by the exporters, their agreement's interval from the calibration statistics.
    "monitor.feedback": {"exporters", "monitor.evaluation", "monitor.judge", "monitor.calibration"},
}

_PROBE = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.split('.')[0] in ('monitor', 'exporters', 'samplers')]:
        del sys.modules[loaded]
    importlib.import_module(name)
    out[name] = sorted(m for m in sys.modules if m.split('.')[0] in ('monitor', 'exporters', 'samplers'))
print(json.dumps(out))
"""


def stage_of(module: str) -> str:
    top, _, rest = module.partition(".")
    if top != "monitor" or not rest:
        return top
    return "monitor." + rest.split(".")[0]


def _modules(stage: str) -> list[str]:
    base = ROOT.joinpath(*stage.split("."))
    found = []
    for path in sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]:
        parts = path.relative_to(ROOT).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def _loaded(modules: list[str]) -> dict[str, list[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *modules], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_every_stage_module_loads_only_what_the_rules_allow() -> None:
    modules = [m for stage in ALLOWED for m in _modules(stage)]
    assert len(modules) > 100  # the walk found the packages
    broken = []
    for module, loaded in _loaded(modules).items():
        own = stage_of(module)
        allowed = KERNEL | {own} | ALLOWED[own]
        extra = sorted({stage_of(m) for m in loaded} - allowed)
        if extra:
            broken.append(f"{module} loads {extra}")
    assert not broken, "\n".join(broken)


def test_the_rules_catch_a_forbidden_import() -> None:
    # The check above must be able to fail: the composition root loads every stage.
    (loaded,) = _loaded(["monitor.app"]).values()
    assert {"monitor.receivers", "monitor.evaluation", "exporters", "samplers"} <= {stage_of(m) for m in loaded}
