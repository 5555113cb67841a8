"""POST /api/feedback and GET /api/agreement on a real sidecar: a scripted judge over HTTP, turns sent
with the OpenTelemetry SDK, verdicts before and after the judge's own result, the metric on /metrics."""

from __future__ import annotations

import sqlite3

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.feedback.verdicts import reviewer_hash
from tests.feedback.harness import (COHERENCE_DEFECT, READ_TOKEN, REVIEW_TOKEN, App, Results, feedback_config,
                                    get_json, post_verdict, sample, scrape, store_path, until, until_async)
from tests.support.judge_server import JudgeServer, reply_json, unused_base_url
from tests.support.pipeline import RecordingSink

AGREE = {"metric": "coherence", "judge_model": "judge-model", "agreement": "agree"}
DISAGREE = {**AGREE, "agreement": "disagree"}
LABELS = {"metric": "coherence", "judge_model": "judge-model"}


async def _agreement_on_metrics(sidecar: Sidecar, n: int) -> str | None:
    text = await scrape(sidecar)
    return text if sample(text, "rag_monitor_judge_agreement_reviews", **LABELS) == n else None


@pytest.mark.parametrize("with_store", [True, False], ids=["sqlite-store", "no-store"])
async def test_verdicts_before_and_after_the_judge_give_the_agreement_metric(tmp_path, with_store) -> None:
    store = store_path(tmp_path) if with_store else None
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        results = Results()
        sidecar = Sidecar(feedback_config(judge.base_url, store=store), sink=RecordingSink(),
                          registry=CollectorRegistry(), result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        try:
            # After: the judge has scored turn A (a defect) when the person agrees with it.
            after = app.turn()
            await app.flush()
            await results.wait_for(after)
            status, doc = await post_verdict(sidecar, {"trace_id": after, "metric": "coherence",
                                                       "verdict": "defect", "reviewer": "alice@example.com"})
            assert status == 202, doc
            assert doc["join"] == {"state": "joined", "judge_verdict": "defect", "judge_value": 2.0,
                                   "agreement": "agree", "inclusion_probability": doc["join"]["inclusion_probability"]}
            assert doc["verdict"]["reviewer"] == reviewer_hash("alice@example.com")
            assert "alice" not in str(doc)
            # Before: the person's verdict (a value: 4 is a pass on 1-5) reaches the sidecar while
            # turn B is still in the app's span batch; it joins when the judge scores B.
            before = app.turn()
            status, doc = await post_verdict(sidecar, {"trace_id": before, "metric": "coherence", "value": 4,
                                                       "reviewer": "bob"})
            assert (status, doc["join"]["state"]) == (202, "pending"), doc
            await app.flush()
            await results.wait_for(before)
            text = await until_async(lambda: _agreement_on_metrics(sidecar, 2))
            assert sample(text, "rag_monitor_judge_agreement_total", **AGREE) == 1
            assert sample(text, "rag_monitor_judge_agreement_total", **DISAGREE) == 1
            assert sample(text, "rag_monitor_judge_agreement_rate", **LABELS) == pytest.approx(0.5)
            lower = sample(text, "rag_monitor_judge_agreement_rate_lower", **LABELS)
            upper = sample(text, "rag_monitor_judge_agreement_rate_upper", **LABELS)
            assert lower is not None and upper is not None and 0.0 <= lower < 0.5 < upper <= 1.0
            # The same person again: acknowledged, counted once.
            status, doc = await post_verdict(sidecar, {"trace_id": after, "metric": "coherence",
                                                       "verdict": "defect", "reviewer": "alice@example.com"})
            assert (status, doc["join"]["state"]) == (202, "duplicate")
            assert sample(await scrape(sidecar), "rag_monitor_judge_agreement_total", **AGREE) == 1
            status, agreement = await get_json(sidecar, "/api/agreement")
            assert status == 200
            entry = agreement["metrics"]["coherence"]
            assert (entry["n"], entry["agree"], entry["rate"]) == (2, 1, 0.5)
            assert entry["lower"] == pytest.approx(lower, abs=1e-6) and entry["upper"] == pytest.approx(upper, abs=1e-6)
            assert entry["judge_models"]["judge-model"]["n"] == 2
        finally:
            await app.close()
            await sidecar.shutdown()
    if with_store:  # stored hashed, never raw
        with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
            rows = conn.execute("SELECT trace_id, verdict, value, reviewer, source FROM human_verdicts "
                                "ORDER BY id").fetchall()
        assert rows == [(after, "defect", None, reviewer_hash("alice@example.com"), "api"),
                        (before, None, 4.0, reviewer_hash("bob"), "api")]


async def test_stored_verdicts_are_counted_in_the_rate_after_a_restart(tmp_path) -> None:
    config_store = store_path(tmp_path)
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        results = Results()
        sidecar = Sidecar(feedback_config(judge.base_url, store=config_store), sink=RecordingSink(),
                          registry=CollectorRegistry(), result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        try:
            trace_id = app.turn()
            await app.flush()
            await results.wait_for(trace_id)
            status, _ = await post_verdict(sidecar, {"trace_id": trace_id, "metric": "coherence", "verdict": "pass",
                                                     "reviewer": "carol"})
            assert status == 202
        finally:
            await app.close()
            await sidecar.shutdown()
        again = Sidecar(feedback_config(judge.base_url, store=config_store), sink=RecordingSink(),
                        registry=CollectorRegistry())
        await again.start()
        try:
            text = await until_async(lambda: _agreement_on_metrics(again, 1))
            assert sample(text, "rag_monitor_judge_agreement_rate", **LABELS) == 0.0
            # The counter is this process's: the verdict was counted by the one that received it.
            assert sample(text, "rag_monitor_judge_agreement_total", **DISAGREE) in (None, 0.0)
        finally:
            await again.shutdown()


GOOD = {"trace_id": "0af7651916cd43dd8448eb211c80319c", "metric": "coherence", "verdict": "pass", "reviewer": "r"}


@pytest.mark.parametrize(("body", "parameter"), [
    (b"{not json", "body"),
    ([GOOD], "body"),
    ({**GOOD, "comment": "x"}, "comment"),
    ({k: v for k, v in GOOD.items() if k != "trace_id"}, "trace_id"),
    ({k: v for k, v in GOOD.items() if k != "reviewer"}, "reviewer"),
    ({**GOOD, "trace_id": "abc"}, "trace_id"),
    ({**GOOD, "trace_id": "0" * 32}, "trace_id"),
    ({**GOOD, "metric": "fluency_of_vibes"}, "metric"),
    ({**GOOD, "verdict": "maybe"}, "verdict"),
    ({**GOOD, "verdict": None}, "verdict"),
    ({**GOOD, "value": 9}, "value"),
    ({**GOOD, "value": "4"}, "value"),
    ({**GOOD, "value": True}, "value"),
    ({**GOOD, "value": 1}, "value"),  # 1 is a defect on coherence, the verdict says pass
    ({**GOOD, "reviewer": "  "}, "reviewer"),
    ({**GOOD, "reviewer": "x" * 201}, "reviewer"),
], ids=lambda x: None)
async def test_bad_bodies_are_clear_400s_naming_the_field(body, parameter) -> None:
    async with JudgeServer() as judge:
        sidecar = Sidecar(feedback_config(judge.base_url), sink=RecordingSink(), registry=CollectorRegistry())
        await sidecar.start()
        try:
            status, doc = await post_verdict(sidecar, body)
        finally:
            await sidecar.shutdown()
    assert status == 400, doc
    assert doc["parameter"] == parameter and doc["error"]


async def test_wrong_content_type_is_a_400() -> None:
    sidecar = Sidecar(feedback_config(unused_base_url()), sink=RecordingSink(), registry=CollectorRegistry())
    await sidecar.start()
    try:
        status, doc = await post_verdict(sidecar, b"trace_id=1", content_type="application/x-www-form-urlencoded")
    finally:
        await sidecar.shutdown()
    assert (status, doc["parameter"]) == (400, "body")


async def test_the_read_token_cannot_write_and_the_write_route_is_off_without_a_review_token() -> None:
    both = feedback_config(unused_base_url(), admin={"bearer_token": READ_TOKEN, "review_token": REVIEW_TOKEN})
    sidecar = Sidecar(both, sink=RecordingSink(), registry=CollectorRegistry())
    await sidecar.start()
    try:
        assert (await post_verdict(sidecar, GOOD, token=None))[0] == 401
        status, doc = await post_verdict(sidecar, GOOD, token=READ_TOKEN)
        assert status == 403 and "read token" in doc["error"]
        assert (await post_verdict(sidecar, GOOD, token="guess"))[0] == 401
        assert (await post_verdict(sidecar, GOOD, token=REVIEW_TOKEN))[0] == 202
        assert (await get_json(sidecar, "/api/agreement", token=READ_TOKEN))[0] == 200
        assert (await get_json(sidecar, "/api/agreement"))[0] == 401
    finally:
        await sidecar.shutdown()
    off = feedback_config(unused_base_url(), admin={"bearer_token": READ_TOKEN})
    sidecar = Sidecar(off, sink=RecordingSink(), registry=CollectorRegistry())
    await sidecar.start()
    try:
        for token in (None, READ_TOKEN, REVIEW_TOKEN):
            status, doc = await post_verdict(sidecar, GOOD, token=token)
            assert status == 404 and "admin.review_token" in doc["error"]
        assert (await get_json(sidecar, "/api/agreement", token=READ_TOKEN))[0] == 200
    finally:
        await sidecar.shutdown()


async def test_the_review_token_can_come_from_a_file(tmp_path) -> None:
    secret = tmp_path / "review-token"
    secret.write_text(REVIEW_TOKEN + "\n")
    sidecar = Sidecar(feedback_config(unused_base_url(), admin={"review_token_file": str(secret)}),
                      sink=RecordingSink(), registry=CollectorRegistry())
    await sidecar.start()
    try:
        status, doc = await post_verdict(sidecar, GOOD)
        assert status == 202 and doc["join"]["state"] == "pending"
    finally:
        await sidecar.shutdown()


async def test_a_pending_verdict_is_dropped_and_counted_when_no_judge_score_comes() -> None:
    sidecar = Sidecar(feedback_config(unused_base_url()), sink=RecordingSink(), registry=CollectorRegistry())
    assert sidecar.feedback is None
    await sidecar.start()
    try:
        join = sidecar.feedback.join
        join._ttl = 0.0  # expire at the next poll
        status, _ = await post_verdict(sidecar, GOOD)
        assert status == 202
        await until(lambda: sidecar.registry.get_sample_value("rag_monitor_human_verdicts_dropped_total",
                                                              {"reason": "expired"}) == 1.0)
        assert join.pending == 0
    finally:
        await sidecar.shutdown()
