"""Every PromQL expression of the Grafana dashboard, with its variables substituted, returns data
from a real Prometheus scraping a sidecar fed by the demo's traffic (local tier + a scripted
judge), while the traffic runs — as an engineer would see it when opening the dashboard."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.demo import demo_config, run_traffic
from tests.support.dashboard import default_variables, load_dashboard, panel_queries, substitute
from tests.support.judge_server import JudgeServer, schema_reply
from tests.support.pipeline import test_config
from tests.support.prometheus_server import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.skipif(prometheus_binary() is None,
                                reason="needs the Debian 'prometheus' package (.ci/run installs it)")

# The demo's app serves one version (service.version 2.3.0) and a release comparison needs two:
# this panel's numbers are checked on synthetic series in test_dashboard_promql.py.
NEEDS_TWO_RELEASES = {"Release vs the one before: defect-rate difference with its anytime-valid band"}


def _config(judge_url: str, scratch: Path) -> MonitorConfig:
    base = test_config().model_dump(mode="json")
    base["judge"] = {"base_url": judge_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 5}
    config, _ = demo_config(MonitorConfig.model_validate(base), admin_port=0, scratch_dir=scratch)
    data = config.model_dump(mode="json")
    # An adaptive policy, so the sampler-probability panel has its gauge; generous enough that
    # every demo conversation is kept.
    data["sampling"]["policies"] = [{"type": "rate_limit", "conversations_per_second": 200}]
    data["judge"]["api_key"] = "sk-test"  # model_dump masks secrets
    # The change detector on one-second steps, armed after 30 evaluations: its panel has data
    # within the test, not after the shipped five-minute steps.
    data["regressions"].update(refresh_seconds=0.5, detector={
        **data["regressions"]["detector"], "step_seconds": 1, "reference_seconds": 600, "min_reference_evaluations": 30})
    return MonitorConfig.model_validate(data)


async def test_every_dashboard_query_returns_data(tmp_path: Path) -> None:
    board = load_dashboard()
    variables = default_variables(board) | {"min_evaluations": "1", "window": "5m"}
    queries = [(title, ref, substitute(expr, variables)) for title, ref, expr in panel_queries(board)
               if title not in NEEDS_TWO_RELEASES]
    assert len(queries) >= 30
    async with JudgeServer(default=schema_reply()) as judge:
        sidecar = Sidecar(_config(judge.base_url, tmp_path), registry=CollectorRegistry())
        await sidecar.start()
        stop = asyncio.Event()
        traffic = asyncio.create_task(run_traffic(f"http://127.0.0.1:{sidecar.http.port}", rate_per_second=15,
                                                  stop=stop, regression_at=5.0, seed=3))
        try:
            async with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{sidecar.admin.port}"]) as prom:
                # rate() needs two samples of a moving counter: wait until evaluations flow.
                await prom.wait_for('sum(rate(rag_monitor_evaluations_total[1m])) > 0', bool, timeout=60)
                missing: dict[str, str] = {}
                deadline = time.monotonic() + 40
                pending = queries
                while pending and time.monotonic() < deadline:
                    missing = {}
                    for title, ref, expr in pending:
                        if not await prom.query(expr):
                            missing[f"{title} [{ref}]"] = expr
                    pending = [q for q in pending if f"{q[0]} [{q[1]}]" in missing]
                    if pending:
                        await asyncio.sleep(1.0)
                assert not missing, "panels without data:\n" + "\n".join(f"{k}: {v}" for k, v in missing.items())
        finally:
            stop.set()
            await traffic
            await sidecar.shutdown()
    assert judge.requests, "the judge tier ran"
