"""The release plumbing around the regression engine: scores read as observations, the version
label, the store's fleet-wide read, the feed, the exported series and the JSON API."""

from __future__ import annotations

import asyncio
import json
import math
import random

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from pydantic import ValidationError

from exporters.config import StoreConfig
from exporters.labels import LabelPolicy, RecentVersions
from exporters.release_metrics import ReleaseBoard, ReleaseCollector, ReleaseSnapshot, ServiceReleases
from exporters.result_store import ResultStore
from monitor.admin.api import regressions_document, releases_document
from monitor.assembly.config import AttributeMapping
from monitor.assembly.turns import build_turn, span_attributes_read
from monitor.model import SpanRecord
from monitor.regression import Driver, Observation, Regression, RegressionEngine, ReleaseComparison, VersionInfo
from monitor.regression_config import RegressionsConfig
from monitor.regression_feed import FEED_DROPPED, RegressionFeed, engine_config, observation
from monitor.telemetry import CountingTelemetry, NullTelemetry
from tests.admin.doubles import admin_server
from tests.exporters.results import result, score

T0 = 1_800_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- scores as observations ---------------------------------------------------------------------


def test_a_stored_row_becomes_an_observation():
    labels = json.dumps({"route": "/chat", "model": "gpt-x", "version": "v7", "tenant": "acme"})
    obs = observation((T0, "groundedness", "shop", "defect", 2.0, 1.0, 5.0, 4.0, labels),
                      service=str.upper, driver_labels=("route", "model"))
    assert obs == Observation(at=T0, service="SHOP", metric="groundedness", version="v7", weight=4.0, defect=True,
                              score=0.25, labels={"route": "/chat", "model": "gpt-x"})
    # A risk metric's value grows with risk: its score is flipped so that 1 is always best.
    risky = observation((T0, "violence", "shop", "pass", 1.0, 0.0, 7.0, 1.0, "{}"))
    assert risky.defect is False and risky.score == pytest.approx(6 / 7) and risky.version == "unknown"
    # From a live result (a mapping), with a weight that cannot be one and no scale to place the value on.
    odd = observation((T0, "custom", "shop", "pass", 3.0, 1.0, 1.0, 0.0, {"version": "v1"}))
    assert odd.weight == 1.0 and odd.score is None and odd.labels == {}
    with pytest.raises(ValueError):
        observation((T0, "m", "shop", "pass", None, 0.0, 1.0, 1.0, "{not json"))


def test_the_version_label_keeps_every_new_release_and_remembers_five_per_service():
    policy = LabelPolicy(["version", "route"], max_values=2)
    for v in range(1, 8):
        for service in ("shop", "docs"):
            values = policy.as_dict(result(score("coherence", 4.0), service=service,
                                           labels={"version": f"v{v}", "route": f"/r{v}"}))
            assert values["version"] == f"v{v}"  # never "other", unlike the capped route
    assert values["route"] == "other"
    assert policy.recent_versions("shop") == ("v3", "v4", "v5", "v6", "v7")
    assert policy.distinct_values("version") == 5 and policy.distinct_values("route") == 2
    recent = RecentVersions(per_service=2)
    for v in ("a", "b", "a", "c", "a"):
        recent.admit("s", v)
    assert recent.of("s") == ("c", "a") and ("s", "a") in recent and ("s", "b") not in recent


def test_the_regressions_section_is_validated_naming_the_field():
    with pytest.raises(ValidationError, match="driver_labels"):
        RegressionsConfig.model_validate({"driver_labels": ["trace_id"]})
    with pytest.raises(ValidationError, match="alpha"):
        RegressionsConfig.model_validate({"alpha": 0})
    with pytest.raises(ValidationError, match="runbook_base_url"):
        RegressionsConfig.model_validate({"runbook_base_url": "wiki/runbooks"})
    with pytest.raises(ValidationError, match="detector.alarm_level"):
        RegressionsConfig.model_validate({"detector": {"alarm_level": 1}})
    cfg = engine_config(RegressionsConfig.model_validate(
        {"alpha": 0.01, "margin": 0.02, "min_evaluations": 7, "detector": {"step_seconds": 10, "alarm_level": 100}}))
    assert (cfg.alpha, cfg.margin, cfg.min_evaluations, cfg.versions_per_service) == (0.01, 0.02, 7, 5)
    assert (cfg.detector_bucket_seconds, cfg.detector_threshold) == (10, 100)


# -- the store's read ---------------------------------------------------------------------------


async def test_the_store_reads_scored_evaluations_with_their_labels_in_id_order(tmp_path):
    clock = Clock()
    store = ResultStore(StoreConfig(path=str(tmp_path / "r.sqlite3"), flush_interval_seconds=0.01),
                        NullTelemetry(), clock)
    await store.start()
    try:
        store.consume_result(result(score("coherence", 2.0, defect=True), score("fluency", None, status="error"),
                                    weight=3.0, labels={"version": "v1", "route": "/a"}))
        clock.now += 5
        store.consume_result(result(score("coherence", 4.0, defect=False), labels={"version": "v2"}))
        while len(rows := await store.observations_after(0, 10)) < 2:  # written by the store's writer thread
            await asyncio.sleep(0.02)
        assert [r[1:9] for r in rows] == [(T0, "coherence", "rag-app", "defect", 2.0, 1.0, 5.0, 3.0),
                                          (T0 + 5, "coherence", "rag-app", "pass", 4.0, 1.0, 5.0, 1.0)]
        assert json.loads(rows[0][9]) == {"version": "v1", "route": "/a", "model": "gpt-test"}
        assert rows[0][0] < rows[1][0]
        assert await store.observations_after(rows[0][0], 10) == rows[1:]
        assert await store.observations_after(rows[1][0], 10) == []
    finally:
        await store.shutdown(0.0)


# -- export and API -----------------------------------------------------------------------------


def _snapshot() -> ReleaseSnapshot:
    driver = Driver("route", "/search", 0.05, 0.4, 0.8, 30)
    canary = ReleaseComparison("shop", "coherence", "v1", "v2", "canary", 200, 40, 0.05, 0.3, 0.25, 0.1, 0.4,
                               0.8, 0.6, -0.2, -0.3, -0.1, True, (driver,))
    adjacent = ReleaseComparison("shop", "coherence", "v1", "v2", "adjacent", 200, 40, 0.05, 0.3, 0.25, 0.0, 0.5,
                                 None, None, None, None, None, False)
    young = ReleaseComparison("shop", "fluency", "v1", "v2", "adjacent", 200, 3, 0.1, None, None, None, None,
                              None, None, None, None, None, False)
    active = Regression("shop", "coherence", "defect_rate", T0 - 600, 0.05, 0.3, 0.1, 0.4, 5.2, 4.0, True, (driver,))
    watching = Regression("shop", "fluency", "score", None, 0.8, 0.75, None, None, 0.7, 4.0, False)
    quiet = Regression("shop", "relevance", "score", None, 0.8, 0.8, None, None, -1.0, 4.0, False)
    versions = (VersionInfo("v1", T0 - 7200, T0 - 60, 400), VersionInfo("v2", T0 - 900, T0, 43))
    return ReleaseSnapshot(T0, (ServiceReleases("shop", versions, {("coherence", "v1"): 200, ("coherence", "v2"): 40}),),
                           (canary, adjacent, young), (active, watching, quiet), "https://wiki.example/runbooks")


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in registry.collect() for s in fam.samples}


def test_the_collector_exports_the_contract_series():
    board = ReleaseBoard()
    registry = CollectorRegistry()
    registry.register(ReleaseCollector(board))
    names = {fam.name for fam in registry.collect()}
    assert {"rag_monitor_release_defect_rate_difference", "rag_monitor_release_defect_rate_difference_lower",
            "rag_monitor_release_defect_rate_difference_upper", "rag_monitor_release_evaluations",
            "rag_monitor_regression_evidence", "rag_monitor_regression_evidence_threshold",
            "rag_monitor_regression_active"} <= names  # before anything is published: the OTLP bridge lists them
    board.publish(_snapshot())
    got = _samples(registry)
    pair = (("baseline", "v1"), ("candidate", "v2"), ("metric", "coherence"), ("service", "shop"))
    # The canary (the engine's first) wins over the adjacent comparison of the same pair.
    assert got[("rag_monitor_release_defect_rate_difference_lower", pair)] == pytest.approx(0.1)
    assert got[("rag_monitor_release_defect_rate_difference_upper", pair)] == pytest.approx(0.4)
    young = (("baseline", "v1"), ("candidate", "v2"), ("metric", "fluency"), ("service", "shop"))
    assert math.isnan(got[("rag_monitor_release_defect_rate_difference_lower", young)])
    assert got[("rag_monitor_release_evaluations", (("metric", "coherence"), ("service", "shop"),
                                                    ("version", "v2")))] == 40
    watch = (("metric", "coherence"), ("service", "shop"), ("statistic", "defect_rate"))
    assert got[("rag_monitor_regression_evidence", watch)] == pytest.approx(5.2)
    assert got[("rag_monitor_regression_evidence_threshold", watch)] == pytest.approx(4.0)
    assert got[("rag_monitor_regression_active", watch)] == 1.0
    assert b"rag_monitor_release_defect_rate_difference{" in generate_latest(registry)


def test_the_documents_follow_the_contract():
    releases = json.loads(json.dumps(releases_document(_snapshot()), allow_nan=False))
    [service] = releases["services"]
    assert service["service"] == "shop"
    assert service["versions"][1] == {"version": "v2", "first_seen": T0 - 900, "last_seen": T0, "evaluations": 43}
    first = service["comparisons"][0]
    assert set(first) >= {"service", "metric", "baseline", "candidate", "mode", "n_baseline", "n_candidate",
                          "defect_rate_baseline", "defect_rate_candidate", "difference", "lower", "upper",
                          "score_baseline", "score_candidate", "score_difference", "score_lower", "score_upper",
                          "regressed", "drivers"}
    assert first["drivers"] == [{"label": "route", "value": "/search", "before": 0.05, "after": 0.4, "share": 0.8,
                                 "n": 30}]
    assert service["comparisons"][2]["lower"] is None
    regressions = regressions_document(_snapshot())
    assert [(r["metric"], r["active"]) for r in regressions["active"]] == [("coherence", True)]
    assert regressions["active"][0]["runbook_url"] == \
        "https://wiki.example/runbooks#ragmonitorqualitydefectrateregressed"
    assert regressions["active"][0]["drivers"][0]["value"] == "/search"
    # Inactive with evidence is watched; without evidence (log10 e-value ≤ 0) it is left out.
    assert [(r["metric"], r["runbook_url"]) for r in regressions["watching"]] == [
        ("fluency", "https://wiki.example/runbooks#ragmonitorqualityscoreregressed")]


async def _get(port: int, path: str, **headers: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r:
            return r.status, json.loads(await r.read())


async def test_the_api_serves_the_board_behind_the_token():
    board = ReleaseBoard()
    board.publish(_snapshot())
    async with admin_server(token="s3cret", releases=board) as server:
        assert (await _get(server.port, "/api/releases"))[0] == 401
        assert (await _get(server.port, "/api/regressions"))[0] == 401
        auth = {"Authorization": "Bearer s3cret"}
        status, doc = await _get(server.port, "/api/releases", **auth)
        assert status == 200 and doc == json.loads(json.dumps(releases_document(_snapshot())))
        status, doc = await _get(server.port, "/api/regressions", **auth)
        assert status == 200 and doc == json.loads(json.dumps(regressions_document(_snapshot())))
        status, doc = await _get(server.port, "/api/releases?service=shop", **auth)
        assert status == 400 and doc["parameter"] == "service"
    async with admin_server() as server:
        status, doc = await _get(server.port, "/api/releases")
        assert status == 503 and "regressions.enabled" in doc["error"]


# -- the feed -----------------------------------------------------------------------------------


async def test_without_a_store_the_feed_takes_results_and_bounds_what_waits():
    clock = Clock()
    telemetry = CountingTelemetry()
    board = ReleaseBoard()
    feed = RegressionFeed(RegressionEngine(clock, engine_config(RegressionsConfig())), board,
                          RegressionsConfig(max_pending=3, settle_seconds=0), source=None, telemetry=telemetry,
                          clock=clock)
    for i in range(4):
        feed.consume_result(result(score("coherence", 4.0, defect=False), score("fluency", None, status="skipped"),
                                   service="shop", labels={"version": "v1"}))
    assert telemetry.value(FEED_DROPPED, reason="queue_full") == 1
    assert await feed.refresh() == 3
    snap = board.snapshot()
    assert snap.at == T0 and [s.service for s in snap.services] == ["shop"]
    assert dict(snap.services[0].evaluations) == {("coherence", "v1"): 3}
    assert [v.version for v in snap.services[0].versions] == ["v1"]


# -- the version a turn carries -----------------------------------------------------------------


def _chat_trace(resource: dict[str, str], span_attributes: dict[str, str] | None = None) -> list[SpanRecord]:
    root = SpanRecord("a" * 32, "1" * 16, "", "POST /chat", 2, 1_000, 5_000, attributes=span_attributes or {},
                      resource=resource)
    chat = SpanRecord("a" * 32, "2" * 16, "1" * 16, "chat gpt-x", 3, 2_000, 4_000, resource=resource, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hi."}]}])})
    return [root, chat]


def test_the_turn_carries_the_apps_version_from_its_resource():
    resource = {"service.name": "shop", "service.version": "2.4.1"}
    assert build_turn(_chat_trace(resource), [], AttributeMapping()).labels == {"version": "2.4.1"}
    # A span attribute when the resource has none; another attribute name when configured; off with [].
    spans = _chat_trace({"service.name": "shop"}, {"service.version": "2.4.2", "app.build": "b77"})
    assert build_turn(spans, [], AttributeMapping()).labels == {"version": "2.4.2"}
    assert build_turn(spans, [], AttributeMapping(version=["app.build"])).labels == {"version": "b77"}
    assert build_turn(_chat_trace(resource), [], AttributeMapping(version=[])).labels == {}
    # A version label the app maps itself wins.
    mapped = AttributeMapping(labels={"version": "app.build"})
    assert build_turn(spans, [], mapped).labels == {"version": "b77"}
    assert "app.build" in span_attributes_read(AttributeMapping(version=["app.build"]))


async def test_the_feed_compares_from_the_store_and_a_restarted_one_reads_the_same_history(tmp_path):
    clock = Clock(T0 - 30 * 3600)
    store = ResultStore(StoreConfig(path=str(tmp_path / "r.sqlite3"), flush_interval_seconds=0.01,
                                    max_age_hours=72), NullTelemetry(), clock)
    await store.start()
    try:
        def deploy(version: str, start: float, defects: int) -> None:
            for i in range(40):
                clock.now = start + 5 * i
                store.consume_result(result(score("coherence", 1.0 if i < defects else 4.0, defect=i < defects),
                                            service="shop", labels={"version": version, "route": "/chat"}))

        deploy("v0", T0 - 30 * 3600, 0)  # older than history_hours: never read
        deploy("v1", T0, 2)
        deploy("v2", T0 + 900, 32)
        clock.now = T0 + 1200
        while len(await store.observations_after(0, 200)) < 120:
            await asyncio.sleep(0.02)

        async def compare(page: int) -> ReleaseSnapshot:
            board = ReleaseBoard()
            feed = RegressionFeed(RegressionEngine(clock, engine_config(RegressionsConfig())), board,
                                  RegressionsConfig(history_hours=24), source=store, clock=clock, page=page)
            assert await feed.refresh() == 80
            # Compared once v2's 5-minute step [T0 + 900, T0 + 1200) is over and settled (10 s).
            assert board.snapshot().comparisons == ()
            clock.now = T0 + 1211
            assert await feed.refresh() == 0
            clock.now = T0 + 1200
            return board.snapshot()

        first, again = await compare(page=1000), await compare(page=7)
        [c] = first.comparisons
        assert (c.baseline, c.candidate, c.mode, c.n_baseline, c.n_candidate) == ("v1", "v2", "adjacent", 40, 40)
        assert c.lower is not None and c.lower > 0 and c.regressed
        assert again.comparisons == first.comparisons
        assert [v.version for v in first.services[0].versions] == ["v1", "v2"]
        assert dict(first.services[0].evaluations) == {("coherence", "v1"): 40, ("coherence", "v2"): 40}
    finally:
        await store.shutdown(0.0)


async def test_evaluations_are_observed_once_settled_in_time_order(tmp_path):
    clock = Clock()
    store = ResultStore(StoreConfig(path=str(tmp_path / "r.sqlite3"), flush_interval_seconds=0.01),
                        NullTelemetry(), clock)
    await store.start()
    try:
        # Stored in this order, stamped out of it: as a replica's late batch lands in a fleet's store.
        for at, version in ((T0 + 10, "v-late"), (T0 + 5, "v-early"), (T0 + 30, "v-last")):
            clock.now = at
            store.consume_result(result(score("coherence", 4.0, defect=False), service="shop",
                                        labels={"version": version}))
        while len(await store.observations_after(0, 10)) < 3:
            await asyncio.sleep(0.02)
        board = ReleaseBoard()
        feed = RegressionFeed(RegressionEngine(clock, engine_config(RegressionsConfig())), board,
                              RegressionsConfig(settle_seconds=10), source=store, clock=clock)
        clock.now = T0 + 14
        assert await feed.refresh() == 0 and board.snapshot().at == T0 + 4  # nothing is 10 s old yet
        clock.now = T0 + 16
        assert await feed.refresh() == 1  # v-early only: v-late was stored first but stamped later
        assert [v.version for v in board.snapshot().services[0].versions] == ["v-early"]
        clock.now = T0 + 25
        assert await feed.refresh() == 1
        assert [v.version for v in board.snapshot().services[0].versions] == ["v-early", "v-late"]
        clock.now = T0 + 40
        assert await feed.refresh() == 1 and feed.observed == 3
    finally:
        await store.shutdown(0.0)


async def test_a_replica_that_refreshed_all_along_and_one_started_at_the_end_export_the_same_interval(tmp_path):
    # The engine narrows each interval to its running intersection at every call: the feed calls it
    # at the end of each time step only, so the refresh times of a replica do not change the result.
    rng = random.Random(5)
    clock = Clock()
    store = ResultStore(StoreConfig(path=str(tmp_path / "r.sqlite3"), flush_interval_seconds=0.01),
                        NullTelemetry(), clock)
    await store.start()
    config = RegressionsConfig(settle_seconds=0, release_bucket_seconds=300, min_evaluations=10)

    def feed_on(board: ReleaseBoard) -> RegressionFeed:
        return RegressionFeed(RegressionEngine(clock, engine_config(config)), board, config, source=store,
                              clock=clock)

    running_board, late_board = ReleaseBoard(), ReleaseBoard()
    running = feed_on(running_board)
    try:
        written = 0
        for version, rate in (("v1", 0.05), ("v2", 0.12)):
            for _ in range(300):
                clock.now += 10
                defect = rng.random() < rate
                store.consume_result(result(score("coherence", 1.0 if defect else 4.0, defect=defect),
                                            service="shop", labels={"version": version}))
                written += 1
                if written % 10 == 0:  # the running replica refreshes every 100 s of traffic
                    while len(await store.observations_after(0, 1000)) < written:
                        await asyncio.sleep(0.01)
                    await running.refresh()
        clock.now += 310  # past the last step
        await running.refresh()
        late = feed_on(late_board)
        await late.refresh()
        [c] = running_board.snapshot().comparisons
        assert (c.baseline, c.candidate, c.n_candidate) == ("v1", "v2", 300) and c.lower is not None
        assert late_board.snapshot().comparisons == running_board.snapshot().comparisons
    finally:
        await store.shutdown(0.0)
