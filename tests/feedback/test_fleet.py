"""A fleet on one PostgreSQL store: a verdict received by replica 1 joins the judge's score stored by
replica 2, whether the verdict comes first or second, and every replica exports the same rate."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from tests.feedback.harness import (COHERENCE_DEFECT, App, Results, feedback_config, get_json, post_verdict, sample,
                                    scrape, until, until_async)
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.pipeline import RecordingSink
from tests.support.postgres_server import postgres_server, postgres_url  # noqa: F401  (fixtures)

LABELS = {"metric": "coherence", "judge_model": "judge-model"}


def _store(url: str) -> dict[str, object]:
    return {"enabled": True, "url": url, "flush_interval_seconds": 0.05, "timeout_seconds": 5}


async def _reviews(sidecar: Sidecar, n: int) -> str | None:
    text = await scrape(sidecar)
    return text if sample(text, "rag_monitor_judge_agreement_reviews", **LABELS) == n else None


def _count(sidecar: Sidecar, agreement: str) -> float:
    return sidecar.registry.get_sample_value("rag_monitor_judge_agreement_total",
                                             {**LABELS, "agreement": agreement}) or 0.0


async def test_a_verdict_on_replica_1_joins_the_judge_score_stored_by_replica_2(postgres_url: str) -> None:
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        results = Results()
        one = Sidecar(feedback_config(judge.base_url, store=_store(postgres_url)), sink=RecordingSink(),
                      registry=CollectorRegistry())
        two = Sidecar(feedback_config(judge.base_url, store=_store(postgres_url)), sink=RecordingSink(),
                      registry=CollectorRegistry(), result_consumers=[results])
        await one.start()
        await two.start()
        app = App(two.http.port)  # the collector routes this app's traces to replica 2
        try:
            # First: replica 1 holds the verdict; replica 2 judges the turn later and stores it.
            first = app.turn()
            status, doc = await post_verdict(one, {"trace_id": first, "metric": "coherence", "verdict": "pass",
                                                   "reviewer": "dana"})
            assert (status, doc["join"]["state"]) == (202, "pending"), doc
            await app.flush()
            await results.wait_for(first)
            await until(lambda: _count(one, "disagree") == 1)
            # Second: the score is in the store before replica 1 hears of the verdict.
            second = app.turn()
            await app.flush()
            await results.wait_for(second)
            await until_async(lambda: _stored(two, second))
            status, doc = await post_verdict(one, {"trace_id": second, "metric": "coherence", "verdict": "defect",
                                                   "reviewer": "dana"})
            assert status == 202 and doc["join"]["state"] == "joined" and doc["join"]["agreement"] == "agree"
            assert _count(one, "agree") == 1
            # The counter is the receiving replica's; the rate is the fleet's, the same on both.
            assert _count(two, "agree") == _count(two, "disagree") == 0
            for replica in (one, two):
                await replica.feedback.join.refresh()
                text = await until_async(lambda r=replica: _reviews(r, 2))
                assert sample(text, "rag_monitor_judge_agreement_rate", **LABELS) == pytest.approx(0.5)
            _, on_two = await get_json(two, "/api/agreement")
            assert (on_two["metrics"]["coherence"]["n"], on_two["metrics"]["coherence"]["agree"]) == (2, 1)
            # The same reviewer's verdict again, on the other replica: one row in the fleet's store.
            status, doc = await post_verdict(two, {"trace_id": second, "metric": "coherence", "verdict": "defect",
                                                   "reviewer": "dana"})
            assert (status, doc["join"]["state"]) == (202, "duplicate")
        finally:
            await app.close()
            await two.shutdown()
            await one.shutdown()


async def _stored(sidecar: Sidecar, trace_id: str) -> bool:
    found = await sidecar.feedback.join._store.judged([(trace_id, "coherence")])  # noqa: SLF001
    return bool(found)


async def test_a_store_that_is_down_answers_503_and_the_verdict_can_be_sent_again(postgres_server,
                                                                                 postgres_url: str) -> None:
    store = {**_store(postgres_url), "timeout_seconds": 1}
    sidecar = Sidecar(feedback_config("http://127.0.0.1:9/v1", store=store), sink=RecordingSink(),
                      registry=CollectorRegistry())
    await sidecar.start()
    body = {"trace_id": "0af7651916cd43dd8448eb211c80319c", "metric": "coherence", "verdict": "pass",
            "reviewer": "gus"}
    try:
        await asyncio.to_thread(postgres_server.stop)
        status, doc = await post_verdict(sidecar, body)
        assert status == 503 and "result store" in doc["error"], doc
        assert sidecar.registry.get_sample_value("rag_monitor_human_verdicts_dropped_total",
                                                 {"reason": "store_error"}) == 1.0
        await asyncio.to_thread(postgres_server.start)
        status, doc = await until_async(lambda: _accepted(sidecar, body))
        assert doc["join"]["state"] == "pending"
    finally:
        await sidecar.shutdown()


async def _accepted(sidecar: Sidecar, body: dict) -> tuple[int, dict] | None:
    status, doc = await post_verdict(sidecar, body)
    return (status, doc) if status == 202 else None
