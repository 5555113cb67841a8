"""``rag-monitor demo``: the sidecar, a sample RAG app instrumented with the GenAI conventions,
and a scripted regression, to watch the metrics move in one command.

The traffic generator is also a library for tests that need realistic traffic against their own
sidecar: :func:`run_traffic` (see :mod:`monitor.demo.traffic`) with :func:`demo_config` for the
mapping that gives the sidecar its ``route`` label and reference answers.

Nothing here is imported by the sidecar itself; the CLI imports it only for ``demo``.
"""

from __future__ import annotations

from monitor.demo.settings import demo_config
from monitor.demo.traffic import SentTurn, TrafficObserver, TrafficStats, run_traffic

__all__ = ["run_traffic", "TrafficStats", "TrafficObserver", "SentTurn", "demo_config"]
