"""A rolling update seen by three sidecars sharing the fleet's PostgreSQL store: the two old pods
only ever receive v1 traffic, the new pod only v2 traffic (and starts after v1 was served, as a
replacement pod does). No process sees both versions, yet every one of them exports the same
comparison of v2 against v1, with a positive lower bound: each reads the fleet's evaluations from
the store, in the same order."""

from __future__ import annotations

import pytest

from tests.regression_live.sidecars import SERVICE, Serve, judge_by_marker, metric, send, until, versioned
from tests.support.judge_server import JudgeServer
from tests.support.postgres_server import postgres_server, postgres_url  # noqa: F401  (fixtures)

N = 40  # turns per version, split over the pods that serve it


@pytest.fixture
async def judge():
    async with JudgeServer(default=judge_by_marker) as server:
        yield server


async def test_every_replica_exports_the_same_positive_lower_bound(tmp_path, postgres_url, judge):
    store = {"url": postgres_url, "lease_seconds": 3, "backlog_flush_seconds": 0.1}
    fast = {"release_bucket_seconds": 0.2, "settle_seconds": 1.0}
    old = [Serve(tmp_path, f"old-{i}", judge.base_url, store, fast) for i in range(2)]
    new = Serve(tmp_path, "new-0", judge.base_url, store, fast)
    pods = [*old, new]
    try:
        for pod in old:
            await pod.start()
        for i, pod in enumerate(old):  # v1 traffic: the old pods' own apps, half each
            provider = versioned(pod.http, "v1")
            try:
                await send(provider, f"v1-{i}", N // 2, defects=1)  # 5 % overall
            finally:
                provider.shutdown()

        async def all_read_v1() -> bool:
            return all([await pod.evaluations("v1") == N for pod in old])

        await until(all_read_v1, what="both old pods read the fleet's v1 evaluations")

        await new.start()  # the replacement pod: it never receives v1 traffic
        provider = versioned(new.http, "v2")
        try:
            await send(provider, "v2", N, defects=32)  # 80 %
        finally:
            provider.shutdown()

        async def all_compared() -> bool:
            found = [await pod.comparison("v2") for pod in pods]
            return all(c is not None and c["n_candidate"] == N for c in found)

        await until(all_compared, what="every pod compares the fleet's v2 with v1")
        comparisons = [await pod.comparison("v2") for pod in pods]
        first = comparisons[0]
        assert first is not None and (first["baseline"], first["n_baseline"]) == ("v1", N)
        assert first["defect_rate_candidate"] == pytest.approx(0.8) and first["lower"] > 0
        for c in comparisons[1:]:
            assert c is not None
            assert (c["baseline"], c["n_baseline"], c["n_candidate"]) == ("v1", N, N)
            assert c["difference"] == pytest.approx(first["difference"], rel=1e-12)
            assert c["lower"] == pytest.approx(first["lower"], rel=1e-12)
            assert c["upper"] == pytest.approx(first["upper"], rel=1e-12)
        pair = {"service": SERVICE, "metric": "coherence", "baseline": "v1", "candidate": "v2"}
        for pod in pods:
            exported = metric(await pod.metrics(), "rag_monitor_release_defect_rate_difference_lower", **pair)
            assert exported == pytest.approx(first["lower"], rel=1e-12), pod.name
    finally:
        for pod in pods:
            await pod.stop()
