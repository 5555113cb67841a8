"""The API over the real RollingStats and the real SQLite ResultStore."""

from __future__ import annotations

import json

import aiohttp

from monitor.admin.api import evaluation_item, summary_document
from tests.admin.doubles import HOSTILE, NOW, admin_server
from tests.admin.real_parts import real_sources


async def get(port: int, path: str) -> dict:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{port}{path}") as r:
            assert r.status == 200, await r.text()
            return await r.json()


async def test_api_serves_the_real_rolling_stats_and_store(tmp_path):
    async with real_sources(tmp_path) as (rolling, store, _clock):
        async with admin_server(summary=rolling, store=store) as server:
            summary = await get(server.port, "/api/summary")
            reasons = await store.outcome_reasons(since=NOW - 3600)
            assert summary == json.loads(json.dumps(summary_document(rolling, NOW, reasons=reasons)))
            assert summary["metrics"]["f1_score"]["reasons"]["error"] == [
                {"cause": "JudgeTimeout", "count": 1, "example": None}]
            # Data from 50 minutes back: the trend covers the 1h window.
            assert summary["trend_window"] == "1h"
            g = summary["metrics"]["groundedness"]["windows"]
            # 5m: the last three results (groundedness 1, 4, 3): one defect, weights 2, 1, 2.
            assert g["5m"]["evaluations"] == 3 and g["5m"]["defects"] == 1
            assert g["5m"]["defect_rate"] == 2 / 5 and g["5m"]["mean"] == 8 / 3
            assert g["1h"]["evaluations"] == 6 and g["1h"]["defects"] == 2
            f1 = summary["metrics"]["f1_score"]["windows"]["1h"]
            assert f1["errors"] == 1 and f1["evaluations"] == 5
            trend = [p for p in summary["metrics"]["groundedness"]["trend"] if p["defect_rate"] is not None]
            assert len(trend) >= 4

            page = await get(server.port, "/api/evaluations?metric=f1_score&outcome=error")
            assert [i["trace_id"] for i in page["items"]] == [f"{2:032x}"]
            assert page["items"][0]["value"] is None and page["items"][0]["error_type"] == "JudgeTimeout"

            recent = await get(server.port, "/api/evaluations?since=5m&limit=1000")
            assert {i["trace_id"] for i in recent["items"]} == {f"{n:032x}" for n in (3, 4, 5)}
            assert [i["timestamp"] for i in recent["items"]] == sorted((i["timestamp"] for i in recent["items"]),
                                                                      reverse=True)
            hostile = [i for i in recent["items"] if i["trace_id"] == f"{3:032x}"][0]
            assert hostile["question"] == HOSTILE and hostile["answer_truncated"]
            assert hostile["labels"] == {"route": "/chat"} and hostile["span_id"] == f"{3:016x}"

            worst = await get(server.port, "/api/worst")
            rows = await store.worst_recent(since=NOW - 3600, limit=20)
            assert worst["items"] == [evaluation_item(r) for r in rows]
            assert worst["items"][0]["outcome"] == "defect"
