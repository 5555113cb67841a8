"""``/api/turns``, ``/api/pipeline`` and the richer ``/api/summary`` over loopback HTTP."""

from __future__ import annotations

import json

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from exporters.prometheus import PrometheusTelemetry
from exporters.turn_queries import OutcomeReason, StoredDocument
from monitor.admin.api import QueryError
from monitor.admin.diagnosis import Setting
from monitor.admin.health import PipelineStatus
from monitor.admin.pipeline import PipelineHealth
from monitor.admin.turns import parse_turns_query, turn_item
from monitor.assembly.assembler import TRACES_WITHOUT_TURN
from monitor.evaluation.catalogue import metric_catalogue
from monitor.evaluation.config import EvaluationConfig
from monitor.receivers.ingest import SPANS_RECEIVED
from tests.admin.doubles import NOW, FakeStore, FakeSummary, admin_server, point, stored_turn, window

G, SEV = (1.0, 5.0), (0.0, 7.0)


async def get(port: int, path: str) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{port}{path}") as r:
            return r.status, await r.json()


def turns() -> list:
    docs = (StoredDocument("kb-1", "Refunds", "Refunds take 5 to 7 days." * 40, 0.91),)
    return [stored_turn(1, [("groundedness", "defect", 1.0, G), ("violence", "defect", 6.0, SEV),
                            ("fluency", "pass", 5.0, G)], documents=docs),
            stored_turn(2, [("groundedness", "defect", 2.0, G)])]


def test_turns_query_validates_and_defaults_to_the_longest_window():
    assert parse_turns_query({}, NOW, 3600).since == NOW - 3600
    q = parse_turns_query({"metric": "violence", "since": "5m", "limit": "5"}, NOW, 3600)
    assert (q.metric, q.since, q.limit) == ("violence", NOW - 300, 5)
    for bad in ({"metric": "<b>"}, {"limit": "0"}, {"metrics": "x"}):
        with pytest.raises(QueryError):
            parse_turns_query(bad, NOW, 3600)


def test_turn_item_lists_failing_metrics_scores_and_cut_documents():
    item = turn_item(turns()[0])
    assert item["failing"] == ["groundedness", "violence"]
    assert [s["metric"] for s in item["scores"]] == ["groundedness", "violence", "fluency"]
    assert item["scores"][0]["reason"] == "Not supported by the documents."
    doc = item["documents"][0]
    assert (doc["id"], doc["title"], doc["score"]) == ("kb-1", "Refunds", 0.91)
    assert len(doc["content"]) == 600 and doc["content"].endswith("\u2026")
    assert item["turn_start"] == NOW - 62 and item["trace_id"] == f"{1:032x}"


async def test_turns_endpoint_passes_the_metric_filter_to_the_store():
    store = FakeStore([], turns=turns())
    async with admin_server(store=store, summary=FakeSummary({})) as server:
        status, doc = await get(server.port, "/api/turns?metric=violence&limit=5")
        assert status == 200
        assert [i["result_id"] for i in doc["items"]] == [1]
        assert doc["query"] == {"metric": "violence", "since": NOW - 3600, "limit": 5}
        status, doc = await get(server.port, "/api/turns")
        assert [i["result_id"] for i in doc["items"]] == [1, 2]
        status, doc = await get(server.port, "/api/turns?limit=abc")
        assert status == 400 and doc["parameter"] == "limit"
    assert store.calls[0] == ("worst_turns", {"since": NOW - 3600, "metric": "violence", "limit": 5})


async def test_pipeline_endpoint_serves_the_counters_and_findings():
    registry = CollectorRegistry(auto_describe=True)
    telemetry = PrometheusTelemetry(registry)
    telemetry.add(SPANS_RECEIVED, 6, transport="http")
    telemetry.add(TRACES_WITHOUT_TURN, reason="no_message_content")
    health = PipelineHealth(registry, clock=lambda: NOW)
    status = PipelineStatus(health, Setting("http://127.0.0.1:4318", False, "always: every conversation", {}),
                            lambda: {"sampling": "always: every conversation"})
    async with admin_server(pipeline=status) as server:
        code, doc = await get(server.port, "/api/pipeline")
    assert code == 200
    assert doc["stages"]["spans_received"]["total"] == {"http": 6.0}
    assert [f["code"] for f in doc["findings"]] == ["no_turns", "judge_off"]
    assert doc["setup"] == {"sampling": "always: every conversation"}
    async with admin_server() as server:
        code, doc = await get(server.port, "/api/pipeline")
    assert code == 503 and "not wired" in doc["error"]


async def test_summary_carries_the_catalogue_data_age_reasons_and_a_short_trend():
    catalogue = metric_catalogue(EvaluationConfig(metrics=("f1_score", "groundedness", "violence")),
                                 judge_enabled=False)
    summary = FakeSummary(
        stats={"f1_score": {"5m": window("5m", 300, 4, 1, 0.7), "1h": window("1h", 3600, 4, 1, 0.7)}},
        trends={"f1_score": [point(NOW - 120, 2, 0, 0.9), point(NOW - 60, 2, 1, 0.5)]},
        since={"f1_score": NOW - 150})
    reasons = [OutcomeReason("f1_score", "skipped", "no ground truth", 51, "no ground truth")]
    async with admin_server(summary=summary, store=FakeStore([], reasons=reasons), catalogue=catalogue) as server:
        status, doc = await get(server.port, "/api/summary")
    assert status == 200
    assert list(doc["metrics"]) == ["f1_score", "groundedness", "violence"]  # config order, data or not
    f1 = doc["metrics"]["f1_score"]
    assert f1["info"]["direction"] == "higher_is_better" and f1["info"]["defect_rule"] == "defect when < 0.5"
    assert f1["data_since"] == NOW - 150 and f1["reasons"]["skipped"] == [
        {"cause": "no ground truth", "count": 51, "example": "no ground truth"}]
    assert doc["trend_window"] == "5m" and summary.trend_calls[0] == ("f1_score", 24, 300.0)
    assert f1["trend"][1]["lower"] < 0.5 < f1["trend"][1]["upper"]
    violence = doc["metrics"]["violence"]
    assert violence["windows"] == {} and violence["info"]["enabled"] is False
    assert violence["info"]["direction"] == "higher_is_worse"
    assert violence["info"]["defect_rule"] == "defect when severity ≥ 4 (Medium or worse)"
    assert violence["info"]["scale"] == [0.0, 7.0]
    json.dumps(doc, allow_nan=False)
