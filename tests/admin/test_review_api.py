"""GET /api/review over real loopback HTTP, from a real SQLite result store and the real verdict
store: judged turns drawn per metric and judge verdict with their inclusion probabilities, the
reviewed ones left out, the strata interleaved, bounded, and behind the read access rule."""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp

from exporters.config import StoreConfig
from exporters.result_store import ResultStore
from exporters.store_postgres import PostgresStore
from monitor.admin.review_api import ReviewApi
from monitor.feedback.review import ReviewDesign, draw_number
from monitor.feedback.review_config import ReviewConfig
from monitor.feedback.review_queue import ReviewQueue
from monitor.feedback.store import PostgresVerdicts, SqliteVerdicts
from monitor.feedback.verdicts import HumanVerdict
from monitor.model import EvaluationResult, Score, Turn
from tests.admin.doubles import NOW, admin_server
from tests.support.postgres_server import postgres_server, postgres_url  # noqa: F401  (fixtures)
from tests.support.recording import RecordingTelemetry

N = 400
CONFIG = ReviewConfig.model_validate({"probabilities": {"defect": 0.5, "pass": 0.05}, "max_items": 200,
                                      "lookback_hours": 24})


def trace(n: int) -> str:
    return f"{(n * 2654435761) % (1 << 128):032x}"


def judged(n: int) -> EvaluationResult:
    defect = n % 8 == 0
    turn = Turn(trace_id=trace(n), conversation_id=f"conv-{n}", question=f"Question {n}?",
                answer=f"Answer {n}.", service="shop", labels={"route": "/chat"})
    scores = (Score("groundedness", 2.0 if defect else 4.0, (1.0, 5.0), defect=defect, reason=f"reason {n}",
                    details={"judge_model": "gpt-4o-2026-01-15", "prompt_version": "abc123"}),
              Score("f1_score", 0.9, (0.0, 1.0), defect=False))  # local: never reviewed
    return EvaluationResult(turn, scores, weight=4.0)


@asynccontextmanager
async def stores(tmp_path: Path) -> AsyncIterator[tuple[ResultStore, SqliteVerdicts]]:
    path = tmp_path / "results.sqlite3"
    store = ResultStore(StoreConfig(path=str(path), flush_interval_seconds=0.02), RecordingTelemetry(),
                        clock=lambda: NOW - 60)
    await store.start()
    verdicts = SqliteVerdicts(str(path))
    await verdicts.start()
    try:
        for n in range(N):
            store.consume_result(judged(n))

        async def written() -> None:
            while await store.count() < 2 * N:
                await asyncio.sleep(0.01)  # polling the database, bounded by the deadline below

        await asyncio.wait_for(written(), 10)
        yield store, verdicts
    finally:
        await verdicts.shutdown(asyncio.get_running_loop().time() + 5)
        await store.shutdown(asyncio.get_running_loop().time() + 5)


async def get(port: int, path: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r:
            return r.status, json.loads(await r.text())


def expected(verdict: str) -> set[str]:
    p = CONFIG.probability("groundedness", verdict)
    return {trace(n) for n in range(N) if (n % 8 == 0) == (verdict == "defect") and draw_number(trace(n), "groundedness") < p}


async def test_the_queue_is_the_stratified_draw_minus_what_people_reviewed(tmp_path: Path) -> None:
    async with stores(tmp_path) as (store, verdicts):
        reviewed = sorted(expected("defect"))[:3]
        for t in reviewed:
            await verdicts.save(HumanVerdict(t, "groundedness", "pass", None, "h" * 16, "api", NOW - 30), 0.5)
        queue = ReviewQueue(ReviewDesign(CONFIG), store, ["groundedness"], reviewed=verdicts, writable=True,
                            clock=lambda: NOW)
        async with admin_server(review=ReviewApi(queue, read_token=None)) as server:
            status, doc = await get(server.port, "/api/review")
            assert status == 200
            items = doc["items"]
            by_stratum = {v: {i["trace_id"] for i in items if i["stratum"] == v} for v in ("defect", "pass")}
            # Exactly the pairs the hash draws in each stratum, less the three already reviewed.
            assert by_stratum["defect"] == expected("defect") - set(reviewed)
            assert by_stratum["pass"] == expected("pass")
            assert len(by_stratum["defect"]) > 10 and len(by_stratum["pass"]) > 5
            for item in items:
                assert item["metric"] == "groundedness"  # the local metric is not the judge's
                assert item["judge"]["verdict"] == item["stratum"]
                assert item["inclusion_probability"] == (0.5 if item["stratum"] == "defect" else 0.05)
                assert item["judge"]["judge_model"] == "gpt-4o-2026-01-15"
                assert item["judge"]["prompt_version"] == "abc123"
                assert item["question"].startswith("Question ") and item["judge"]["reason"].startswith("reason ")
            # Strata interleaved: defects and passes alternate while both last.
            assert [i["stratum"] for i in items[:4]] == ["defect", "pass", "defect", "pass"]
            strata = {s["verdict"]: s for s in doc["strata"]}
            assert strata["defect"]["judged"] == N // 8 and strata["pass"]["judged"] == N - N // 8
            assert strata["defect"]["waiting"] == strata["defect"]["drawn"] - 3
            assert doc["writable"] is True and doc["count"] == len(items)

            status, doc = await get(server.port, "/api/review?limit=5")
            assert status == 200 and doc["count"] == 5
            status, doc = await get(server.port, "/api/review?metric=f1_score")
            assert status == 200 and doc["items"] == []  # no judge verdicts of a local metric to draw
            status, doc = await get(server.port, "/api/review?limit=0")
            assert status == 400 and doc["parameter"] == "limit"
            status, doc = await get(server.port, "/api/review?metrics=groundedness")
            assert status == 400 and doc["parameter"] == "metrics"


async def test_max_items_bounds_the_answer_and_the_read_token_guards_it(tmp_path: Path) -> None:
    async with stores(tmp_path) as (store, _):
        small = ReviewConfig.model_validate({"probabilities": {"defect": 1.0, "pass": 1.0}, "max_items": 7})
        queue = ReviewQueue(ReviewDesign(small), store, ["groundedness"], clock=lambda: NOW)
        async with admin_server(token="read-secret", review=ReviewApi(queue, read_token="read-secret")) as server:
            status, doc = await get(server.port, "/api/review")
            assert status == 401
            status, doc = await get(server.port, "/api/review?limit=1000", token="read-secret")
            assert status == 200 and doc["count"] == 7 and doc["writable"] is False
            assert [i["stratum"] for i in doc["items"]] == ["defect", "pass"] * 3 + ["defect"]


async def test_old_turns_leave_the_queue_and_no_store_is_a_503(tmp_path: Path) -> None:
    async with stores(tmp_path) as (store, _):
        later = ReviewQueue(ReviewDesign(CONFIG), store, ["groundedness"], clock=lambda: NOW + 25 * 3600)
        async with admin_server(review=ReviewApi(later, read_token=None)) as server:
            status, doc = await get(server.port, "/api/review")
            assert status == 200 and doc["items"] == []
    async with admin_server(review=ReviewApi(None, read_token=None)) as server:
        status, doc = await get(server.port, "/api/review")
        assert status == 503 and "exporters.store.enabled" in doc["error"]


async def test_replicas_sharing_postgresql_list_the_same_fleet_wide_queue(postgres_url: str) -> None:
    # Two replicas each stored half of the judged turns; a verdict reached the fleet's table. Both
    # list the same queue: every drawn pair of the fleet, less the reviewed one.
    config = StoreConfig.model_validate({"url": postgres_url, "flush_interval_seconds": 0.02, "timeout_seconds": 5})
    replicas = [PostgresStore(config, RecordingTelemetry(), clock=lambda: NOW - 60, replica_id=f"r{i}")
                for i in range(2)]
    await asyncio.gather(*(r.start() for r in replicas))
    verdicts = PostgresVerdicts(postgres_url)
    await verdicts.start()
    try:
        for n in range(N):
            replicas[n % 2].consume_result(judged(n))

        async def written() -> None:
            while await replicas[0].count() < 2 * N:
                await asyncio.sleep(0.02)  # polling the database, bounded by the deadline below

        await asyncio.wait_for(written(), 20)
        reviewed = sorted(expected("pass"))[0]
        await verdicts.save(HumanVerdict(reviewed, "groundedness", "defect", None, "h" * 16, "api", NOW - 30), 0.05)
        docs = []
        for replica in replicas:
            queue = ReviewQueue(ReviewDesign(CONFIG), replica, ["groundedness"], reviewed=verdicts, clock=lambda: NOW)
            docs.append(await queue.document())
        keys = [[(i["trace_id"], i["stratum"]) for i in doc["items"]] for doc in docs]
        assert keys[0] == keys[1]
        assert {t for t, s in keys[0] if s == "defect"} == expected("defect")
        assert {t for t, s in keys[0] if s == "pass"} == expected("pass") - {reviewed}
    finally:
        await verdicts.shutdown(asyncio.get_running_loop().time() + 5)
        deadline = asyncio.get_running_loop().time() + 10
        await asyncio.gather(*(r.shutdown(deadline) for r in replicas))
