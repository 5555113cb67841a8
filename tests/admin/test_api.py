"""The JSON API: parameters, documents, access control and overload, over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from datetime import datetime, timezone

import aiohttp
import pytest

from monitor.admin.api import (
    MAX_LIMIT,
    QueryError,
    decide_access,
    evaluation_item,
    parse_evaluations_query,
    parse_since,
    parse_worst_query,
    summary_document,
)
from monitor.admin.status_page import CONTENT_SECURITY_POLICY
from monitor.telemetry import REQUESTS_REJECTED
from tests.admin.doubles import NOW, FakeStore, FakeSummary, Point, admin_server, row, window
from tests.support.recording import RecordingTelemetry


def summary_fixture() -> FakeSummary:
    return FakeSummary(
        stats={
            "groundedness": {"5m": window("5m", 300, 40, 7, 3.4), "1h": window("1h", 3600, 400, 20, 4.1)},
            "f1_score": {"5m": window("5m", 300, 0, 0, errors=2), "1h": window("1h", 3600, 9, 0, 0.9)},
        },
        trends={"groundedness": [Point(NOW - 120, 3, 1 / 3, 3.0), Point(NOW - 60, 0, math.nan, math.nan)]},
    )


# -- parameters ---------------------------------------------------------------------------------


def test_since_accepts_unix_seconds_iso_and_durations():
    assert parse_since("1700000000", NOW) == 1700000000.0
    assert parse_since("1700000000.5", NOW) == 1700000000.5
    assert parse_since("15m", NOW) == NOW - 900
    assert parse_since("2h", NOW) == NOW - 7200
    iso = datetime(2027, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp()
    assert parse_since("2027-01-02T03:04:05Z", NOW) == iso
    assert parse_since("2027-01-02T03:04:05", NOW) == iso  # no offset = UTC
    assert parse_since("2027-01-02T05:04:05+02:00", NOW) == iso


@pytest.mark.parametrize("text", ["yesterday", "0m", "-5", "15 m", "1e9", "nan", "\u0661\u0662", "1w"])
def test_since_rejects_other_text(text):
    with pytest.raises(QueryError) as err:
        parse_since(text, NOW)
    assert err.value.parameter == "since"


def test_evaluations_query_validates_each_parameter():
    q = parse_evaluations_query({"metric": "f1_score", "outcome": "defect", "since": "5m", "limit": "7"}, NOW)
    assert (q.metric, q.outcome, q.since, q.limit) == ("f1_score", "defect", NOW - 300, 7)
    assert parse_evaluations_query({}, NOW).limit == 100
    assert parse_evaluations_query({"metric": ""}, NOW).metric is None  # an empty form field = no filter
    for params, name in [({"metric": "a b"}, "metric"), ({"metric": "x" * 200}, "metric"),
                         ({"metric": "<script>"}, "metric"), ({"outcome": "bad"}, "outcome"),
                         ({"limit": "0"}, "limit"), ({"limit": str(MAX_LIMIT + 1)}, "limit"),
                         ({"limit": "ten"}, "limit"), ({"limit": "\u00b2"}, "limit"), ({"since": "later"}, "since"),
                         ({"metrics": "f1_score"}, "metrics")]:
        with pytest.raises(QueryError) as err:
            parse_evaluations_query(params, NOW)
        assert err.value.parameter == name, params
    assert parse_evaluations_query({"limit": str(MAX_LIMIT)}, NOW).limit == MAX_LIMIT


def test_worst_query_defaults_to_the_given_window():
    q = parse_worst_query({}, NOW, 3600.0)
    assert (q.since, q.limit) == (NOW - 3600.0, 20)
    assert parse_worst_query({"since": "5m", "limit": "3"}, NOW, 3600.0).since == NOW - 300
    for params, name in [({"outcome": "defect"}, "outcome"), ({"limit": "-1"}, "limit"), ({"since": "x"}, "since")]:
        with pytest.raises(QueryError) as err:
            parse_worst_query(params, NOW, 3600.0)
        assert err.value.parameter == name


# -- access decisions ------------------------------------------------------------------------------


@pytest.mark.parametrize("remote, host, allowed", [
    ("127.0.0.1", "127.0.0.1:9464", True),
    ("127.8.9.10", "localhost:9464", True),
    ("::1", "[::1]:9464", True),
    ("::ffff:127.0.0.1", "localhost", True),
    ("10.0.0.7", "127.0.0.1:9464", False),          # another pod or machine
    ("192.168.1.2", "monitor:9464", False),
    ("::ffff:10.0.0.7", "localhost", False),
    (None, "localhost", False),                     # unix socket or unknown peer
    ("127.0.0.1", "evil.example:9464", False),      # DNS rebinding: a loopback peer, a foreign host
    ("127.0.0.1", None, False),
])
def test_without_a_token_only_loopback_is_served(remote, host, allowed):
    decision = decide_access(remote=remote, host=host, authorization=None, token=None)
    assert decision.allowed is allowed
    if not allowed:
        assert decision.status == 403 and "admin.bearer_token" in decision.message


@pytest.mark.parametrize("authorization, allowed", [
    ("Bearer s3cret", True), ("bearer s3cret", True), ("Bearer  s3cret ", True),
    ("Bearer s3cre", False), ("Bearer s3cret2", False), ("Basic s3cret", False), ("s3cret", False),
    ("Bearer", False), ("", False), (None, False),
])
def test_with_a_token_it_is_required_from_everyone(authorization, allowed):
    for remote in ("127.0.0.1", "10.0.0.7"):
        decision = decide_access(remote=remote, host="monitor:9464", authorization=authorization, token=b"s3cret")
        assert decision.allowed is allowed
        if not allowed:
            assert decision.status == 401


def test_an_empty_configured_token_matches_nothing():
    assert not decide_access(remote="127.0.0.1", host="localhost", authorization="Bearer ", token=b"").allowed


# -- documents -----------------------------------------------------------------------------------


def test_summary_document_turns_nan_into_null_and_names_fields():
    doc = summary_document(summary_fixture(), NOW)
    json.dumps(doc, allow_nan=False)  # strict JSON: raises on a leaked NaN
    assert doc["generated_at"] == NOW
    assert doc["windows"] == [{"name": "5m", "seconds": 300.0}, {"name": "1h", "seconds": 3600.0}]
    assert doc["longest_window"] == "1h"
    assert doc["trend_window"] == "1h" and doc["trend_seconds"] == 3600.0  # no data_since: the longest
    empty = doc["metrics"]["f1_score"]["windows"]["5m"]
    assert empty["evaluations"] == 0 and empty["errors"] == 2
    assert empty["defect_rate"] is None and empty["lower"] is None and empty["upper"] is None
    assert empty["mean"] is None
    g = doc["metrics"]["groundedness"]
    assert g["windows"]["5m"]["defect_rate"] == pytest.approx(7 / 40)
    assert g["windows"]["5m"]["lower"] < 7 / 40 < g["windows"]["5m"]["upper"]
    assert g["windows"]["1h"]["mean"] == 4.1
    assert g["trend"] == [{"start": NOW - 120, "evaluations": 3, "defect_rate": pytest.approx(1 / 3),
                           "lower": None, "upper": None, "mean": 3.0},
                          {"start": NOW - 60, "evaluations": 0, "defect_rate": None, "lower": None, "upper": None,
                           "mean": None}]
    assert doc["metrics"]["f1_score"]["trend"] == []
    assert g["info"] is None and g["change"] is None and g["data_since"] is None
    assert g["reasons"] == {"skipped": [], "error": []}


def test_evaluation_item_cuts_text_and_keeps_the_ids():
    item = evaluation_item(row(5, question="q" * 600, answer="short"), excerpt_chars=100)
    assert len(item["question"]) == 100 and item["question"].endswith("\u2026") and item["question_truncated"]
    assert item["answer"] == "short" and not item["answer_truncated"]
    assert item["trace_id"] == f"{5:032x}" and item["span_id"] == f"{5:016x}"
    assert item["conversation_id"] == "conv-5" and item["labels"] == {"route": "/chat"}
    assert item["scale"] == [1.0, 5.0] and item["value"] == 1.0 and item["turn_start"] == NOW - 61
    err = evaluation_item(row(6, outcome="error", value=None))
    assert err["value"] is None and err["status"] == "error"


# -- over HTTP ----------------------------------------------------------------------------------


async def get(port: int, path: str, **headers: str) -> tuple[int, dict, object]:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r:
            body = await r.read()
            parsed = json.loads(body) if r.content_type == "application/json" else body.decode()
            return r.status, dict(r.headers), parsed


async def test_summary_and_evaluations_over_loopback():
    rows = [row(1, metric="groundedness", outcome="defect", timestamp=NOW - 30),
            row(2, metric="f1_score", outcome="pass", value=0.9, scale=(0.0, 1.0), timestamp=NOW - 20),
            row(3, metric="groundedness", outcome="pass", value=5.0, timestamp=NOW - 4000)]
    store = FakeStore(rows)
    async with admin_server(summary=summary_fixture(), store=store) as server:
        status, headers, doc = await get(server.port, "/api/summary")
        assert status == 200 and headers["Cache-Control"] == "no-store"
        assert doc == json.loads(json.dumps(summary_document(summary_fixture(), NOW)))

        status, _, doc = await get(server.port, "/api/evaluations?metric=groundedness&since=1h")
        assert status == 200
        assert [i["id"] for i in doc["items"]] == [1] and doc["count"] == 1
        assert doc["query"] == {"metric": "groundedness", "outcome": None, "since": NOW - 3600, "limit": 100}
        assert doc["items"][0]["question"] == "Where is my parcel?"

        status, _, doc = await get(server.port, "/api/evaluations?outcome=pass&limit=1")
        assert [i["id"] for i in doc["items"]] == [2]
        assert store.calls[-1] == ("evaluations", {"metric": None, "outcome": "pass", "since": None, "limit": 1})

        # /api/worst defaults to the longest window
        status, _, doc = await get(server.port, "/api/worst")
        assert status == 200 and [i["id"] for i in doc["items"]] == [1, 2]
        assert store.calls[-1] == ("worst_recent", {"since": NOW - 3600, "limit": 20})


@pytest.mark.parametrize("query, parameter", [
    ("/api/evaluations?limit=0", "limit"), ("/api/evaluations?outcome=great", "outcome"),
    ("/api/evaluations?metric=%3Cb%3E", "metric"), ("/api/evaluations?since=soon", "since"),
    ("/api/evaluations?limit=5&limit=6", "limit"), ("/api/worst?metric=x", "metric"),
    ("/api/worst?limit=5000", "limit"),
])
async def test_bad_parameters_are_400_naming_the_parameter(query, parameter):
    store = FakeStore([])
    async with admin_server(summary=summary_fixture(), store=store) as server:
        status, _, doc = await get(server.port, query)
    assert status == 400 and doc["parameter"] == parameter and parameter in doc["error"]
    assert store.calls == []


async def test_without_store_or_summary_the_api_says_so():
    async with admin_server() as server:
        for path, word in (("/api/summary", "rolling statistics"), ("/api/evaluations", "result store"),
                           ("/api/worst", "result store")):
            status, _, doc = await get(server.port, path)
            assert status == 503 and word in doc["error"], path


async def test_a_failing_store_is_a_503_with_json():
    class BrokenStore(FakeStore):
        async def evaluations(self, **kwargs):
            raise RuntimeError("the result store is not running")

    async with admin_server(store=BrokenStore([])) as server:
        status, _, doc = await get(server.port, "/api/evaluations")
    assert status == 503 and "RuntimeError" in doc["error"]


async def test_token_is_required_when_configured_and_other_endpoints_stay_open():
    telemetry = RecordingTelemetry()
    async with admin_server(token="s3cret", summary=summary_fixture(), store=FakeStore([row(1)]),
                            telemetry=telemetry) as server:
        status, headers, doc = await get(server.port, "/api/evaluations")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
        assert "items" not in doc
        status, _, _ = await get(server.port, "/api/summary", Authorization="Bearer wrong")
        assert status == 401
        status, _, doc = await get(server.port, "/api/evaluations", Authorization="Bearer s3cret")
        assert status == 200 and doc["count"] == 1
        for path in ("/metrics", "/healthz", "/readyz", "/"):
            status, _, _ = await get(server.port, path)
            assert status == 200, path
    assert telemetry.value(REQUESTS_REJECTED, transport="admin") == 2


async def test_loopback_peer_with_a_foreign_host_header_is_refused():
    async with admin_server(summary=summary_fixture()) as server:
        status, _, doc = await get(server.port, "/api/summary", Host="rebound.example:9464")
        assert status == 403 and "admin.bearer_token" in doc["error"]
        status, _, _ = await get(server.port, "/api/summary", Host=f"localhost:{server.port}")
        assert status == 200


async def test_concurrent_requests_past_the_cap_are_refused_and_counted():
    store = FakeStore([row(1)])
    store.gate = threading.Event()
    telemetry = RecordingTelemetry()
    async with admin_server(store=store, telemetry=telemetry) as server:
        held = [asyncio.create_task(get(server.port, "/api/evaluations")) for _ in range(4)]

        async def all_held() -> None:
            while store.waiting < 4:
                store.arrived.clear()
                await store.arrived.wait()

        await asyncio.wait_for(all_held(), 10)
        status, headers, doc = await get(server.port, "/api/evaluations")
        assert status == 503 and headers["Retry-After"] == "1" and "too many" in doc["error"]
        store.gate.set()
        assert [r[0] for r in await asyncio.gather(*held)] == [200] * 4
        status, _, _ = await get(server.port, "/api/evaluations")
        assert status == 200
    assert telemetry.value(REQUESTS_REJECTED, transport="admin") == 1


async def test_page_is_static_with_a_strict_policy():
    async with admin_server(token="s3cret") as server:
        status, headers, body = await get(server.port, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    csp = headers["Content-Security-Policy"]
    assert csp == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "unsafe" not in csp
    assert "frame-ancestors 'none'" in csp and headers["X-Content-Type-Options"] == "nosniff"
    assert "s3cret" not in body
    assert "innerHTML" not in body and "outerHTML" not in body and "insertAdjacentHTML" not in body
