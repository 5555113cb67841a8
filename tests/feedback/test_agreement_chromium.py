"""The status page's judge-vs-people figure in headless Chromium, on a real sidecar: its numbers are
those of /api/agreement after verdicts sent to the API, and it asks for the token like the page."""

from __future__ import annotations

import os

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from tests.admin.dom import CHROMIUM, dump_dom
from tests.feedback.harness import (COHERENCE_DEFECT, READ_TOKEN, REVIEW_TOKEN, App, Results, feedback_config,
                                    get_json, post_verdict, until_async)
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.pipeline import RecordingSink

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"headless Chromium not installed at {CHROMIUM} (Debian package chromium)")


async def _joined(sidecar: Sidecar, n: int, token: str | None) -> dict | None:
    status, doc = await get_json(sidecar, "/api/agreement", token=token)
    entry = doc.get("metrics", {}).get("coherence") if status == 200 else None
    return doc if entry and entry["n"] == n else None


@pytest.mark.parametrize("token", [None, READ_TOKEN], ids=["loopback", "read-token"])
async def test_the_page_shows_the_agreement_of_the_api(tmp_path, token) -> None:
    admin = {"review_token": REVIEW_TOKEN, **({"bearer_token": token} if token else {})}
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        results = Results()
        sidecar = Sidecar(feedback_config(judge.base_url, admin=admin), sink=RecordingSink(),
                          registry=CollectorRegistry(), result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        try:
            traces = [app.turn() for _ in range(3)]
            await app.flush()
            for t in traces:
                await results.wait_for(t)
            for t, verdict in zip(traces, ("defect", "defect", "pass")):
                status, _ = await post_verdict(sidecar, {"trace_id": t, "metric": "coherence", "verdict": verdict,
                                                         "reviewer": "erin"})
                assert status == 202
            doc = await until_async(lambda: _joined(sidecar, 3, token))
            url = f"http://127.0.0.1:{sidecar.admin.port}/" + (f"#token={token}" if token else "")
            page = await dump_dom(url, tmp_path / "profile")
        finally:
            await app.close()
            await sidecar.shutdown()
    entry = doc["metrics"]["coherence"]
    block = page.dom.one("div", data_section="agreement")
    assert "hidden" not in block.attrs
    row = block.one("tr", data_metric="coherence")
    assert row.one(data_field="agreement-rate").text == f"{entry['rate'] * 100:.1f}%" == "66.7%"
    assert row.one(data_field="agreement-lower").text == f"{entry['lower'] * 100:.1f}%"
    assert row.one(data_field="agreement-upper").text == f"{entry['upper'] * 100:.1f}%"
    assert row.one(data_field="agreement-n").text == "3"
    assert row.one(data_field="agreement-agree").text == "2"
    assert row.one(data_judge_model="judge-model").text == "judge-model: 66.7% of 3"
    assert not [line for line in page.console if "Refused" in line or "Uncaught" in line], page.console


async def test_without_verdicts_the_block_says_so(tmp_path) -> None:
    sidecar = Sidecar(feedback_config("http://127.0.0.1:9/v1"), sink=RecordingSink(), registry=CollectorRegistry())
    await sidecar.start()
    try:
        page = await dump_dom(f"http://127.0.0.1:{sidecar.admin.port}/", tmp_path / "profile")
    finally:
        await sidecar.shutdown()
    block = page.dom.one("div", data_section="agreement")
    assert block.one(data_field="agreement-empty").text.startswith("no person's verdict")
    assert not block.find_all("tr")
