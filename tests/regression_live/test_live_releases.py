"""Live: a real `rag-monitor serve` process fed v1, then v2, then v3 traffic of one service by the
OpenTelemetry SDK (service.version on the resource), each turn judged by the test judge server.

v2 has a much higher defect rate than v1: /metrics and /api/releases show a positive lower bound
for v2 against v1. v3 keeps v2's rate: its lower bound against v2 stays at or below zero. Each
version's traffic is sent once the previous one is read, so the versions follow each other as in a
deploy (adjacent traffic, not a canary)."""

from __future__ import annotations

import pytest

from tests.regression_live.sidecars import SERVICE, Serve, metric, send, until, versioned
from tests.support.judge_server import JudgeServer
from tests.regression_live.sidecars import judge_by_marker

N = 40  # turns per version: well past regressions.min_evaluations (20)


@pytest.fixture
async def judge():
    async with JudgeServer(default=judge_by_marker) as server:
        yield server


async def _deploy(sidecar: Serve, version: str, defects: int) -> None:
    provider = versioned(sidecar.http, version)
    try:
        await send(provider, version, N, defects)
    finally:
        provider.shutdown()

    async def read() -> bool:
        return await sidecar.evaluations(version) == N

    await until(read, what=f"{N} evaluations of {version} in /api/releases")


async def _compared(sidecar: Serve, candidate: str) -> dict:
    """The comparison of ``candidate`` once it holds all its evaluations (the comparisons are
    published at the end of each time step, so they follow the counts by up to one step)."""
    async def complete() -> bool:
        found = await sidecar.comparison(candidate)
        return found is not None and found["n_candidate"] == N

    await until(complete, what=f"{candidate}'s comparison with its {N} evaluations")
    found = await sidecar.comparison(candidate)
    assert found is not None
    return found


async def test_a_worse_release_gets_a_positive_lower_bound_and_an_unchanged_one_does_not(tmp_path, judge):
    # Time steps of 0.2 s: each version's traffic starts after the previous one is read (≥ 0.3 s).
    sidecar = Serve(tmp_path, "sidecar", judge.base_url, {"path": str(tmp_path / "results.sqlite3")},
                    {"release_bucket_seconds": 0.2})
    await sidecar.start()
    try:
        await _deploy(sidecar, "v1", defects=2)    # 5 %
        await _deploy(sidecar, "v2", defects=32)   # 80 %
        v2 = await _compared(sidecar, "v2")
        assert (v2["baseline"], v2["n_baseline"], v2["n_candidate"]) == ("v1", N, N)
        assert v2["defect_rate_baseline"] == pytest.approx(0.05) and v2["defect_rate_candidate"] == pytest.approx(0.8)
        assert v2["lower"] > 0 and v2["regressed"] is True
        text = await sidecar.metrics()
        pair = {"service": SERVICE, "metric": "coherence", "baseline": "v1", "candidate": "v2"}
        assert metric(text, "rag_monitor_release_defect_rate_difference_lower", **pair) == pytest.approx(v2["lower"])
        assert metric(text, "rag_monitor_release_defect_rate_difference", **pair) == pytest.approx(0.75)
        assert metric(text, "rag_monitor_release_evaluations", service=SERVICE, metric="coherence",
                      version="v2") == N

        await _deploy(sidecar, "v3", defects=32)   # unchanged
        v3 = await _compared(sidecar, "v3")
        assert (v3["baseline"], v3["n_candidate"]) == ("v2", N)
        assert v3["difference"] == pytest.approx(0.0) and v3["lower"] <= 0 and v3["regressed"] is False
        text = await sidecar.metrics()
        assert metric(text, "rag_monitor_release_defect_rate_difference_lower", service=SERVICE, metric="coherence",
                      baseline="v2", candidate="v3") <= 0
    finally:
        await sidecar.stop()


async def test_a_defect_rate_that_jumps_raises_the_change_detector(tmp_path, judge):
    # The detector on fast settings: 0.2 s steps, armed after 30 evaluations, alarming at 10^2.
    detector = {"step_seconds": 0.2, "alarm_level": 100, "reference_seconds": 600, "min_reference_evaluations": 30}
    sidecar = Serve(tmp_path, "sidecar", judge.base_url, {"path": str(tmp_path / "results.sqlite3")},
                    {"detector": detector, "runbook_base_url": "https://wiki.example/runbooks"})
    await sidecar.start()
    provider = versioned(sidecar.http, "v1")
    sent = 0

    async def batch(defects: int) -> None:
        # Each batch is read before the next is sent (≥ one refresh), so batches fall in distinct steps.
        nonlocal sent
        await send(provider, f"b{sent}", 10, defects)
        sent += 10

        async def read() -> bool:
            return await sidecar.evaluations("v1") == sent

        await until(read, what=f"{sent} evaluations read")

    try:
        for _ in range(4):
            await batch(defects=1)  # 10 %
        doc = await sidecar.api("/api/regressions")
        assert doc["active"] == []
        for _ in range(8):
            await batch(defects=9)  # 90 %
            doc = await sidecar.api("/api/regressions")
            if doc["active"]:
                break
        [active] = doc["active"]
        assert (active["service"], active["metric"], active["statistic"]) == (SERVICE, "coherence", "defect_rate")
        assert active["evidence"] >= active["threshold"] == pytest.approx(2.0)
        assert active["after"] > active["before"] and active["since"] is not None
        assert active["runbook_url"] == "https://wiki.example/runbooks#ragmonitorqualitydefectrateregressed"
        text = await sidecar.metrics()
        watched = {"service": SERVICE, "metric": "coherence", "statistic": "defect_rate"}
        assert metric(text, "rag_monitor_regression_active", **watched) == 1.0
        assert metric(text, "rag_monitor_regression_evidence_threshold", **watched) == pytest.approx(2.0)
        assert metric(text, "rag_monitor_regression_evidence", **watched) >= 2.0
    finally:
        provider.shutdown()
        await sidecar.stop()
