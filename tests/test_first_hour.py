"""The first hour of a new user, end to end: ``rag-monitor serve`` on its defaults plus a judge,
an app sending three conversations through the real OTel SDK, and evaluations on the status page's
API within seconds; the start-up log says what runs; the HTTP client does not log every judge
call. And when nothing can be evaluated, the page and the log say why."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys

import aiohttp
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from monitor.config import MonitorConfig
from tests.support.judge_server import JudgeServer, schema_reply
from tests.support.pipeline import running_sidecar, test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with
from tests.test_serve_cli import free_port, wait_ready


def _send(endpoint: str, turns: list[tuple[str, str, str]], content: bool = True) -> None:
    provider = provider_with(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"), service="my-rag-app")
    for conversation, question, answer in turns:
        if content:
            emit_genai_turn(provider, conversation, question, answer)
        else:  # content capture off: the chat span has no messages
            tracer = provider.get_tracer("app")
            with tracer.start_as_current_span("POST /chat", attributes={"gen_ai.conversation.id": conversation}):
                with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
                    chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"})
    provider.force_flush(10_000)
    provider.shutdown()


async def _json(session: aiohttp.ClientSession, url: str) -> dict:
    async with session.get(url) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def test_a_new_user_sees_evaluations_within_a_minute_and_a_log_that_says_what_runs(tmp_path):
    http, admin = free_port(), free_port()
    async with JudgeServer(default=schema_reply()) as judge:
        config = {"receivers": {"http": {"port": http}, "grpc": {"port": free_port()}}, "admin": {"port": admin},
                  "judge": {"base_url": judge.base_url, "model": "judge-test"},
                  "exporters": {"store": {"path": str(tmp_path / "results.sqlite3")}}}
        (tmp_path / "c.yaml").write_text(json.dumps(config))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor.cli", "serve", "-c", str(tmp_path / "c.yaml"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path)
        try:
            await wait_ready(admin, proc)
            loop = asyncio.get_running_loop()
            sent_at = loop.time()
            await asyncio.to_thread(_send, f"http://127.0.0.1:{http}", [
                ("conv-1", "How long do refunds take?", "Five to seven business days."),
                ("conv-2", "Can I change my plan?", "Yes, in the billing settings."),
                ("conv-3", "Is there a free tier?", "Yes, up to 5 GB.")])
            async with aiohttp.ClientSession() as session:
                while True:  # polled, bounded by the minute the README promises
                    summary = await _json(session, f"http://127.0.0.1:{admin}/api/summary")
                    turns = await _json(session, f"http://127.0.0.1:{admin}/api/turns")  # the stored ones
                    windows = summary["metrics"].get("coherence", {}).get("windows", {})
                    if windows.get("5m", {}).get("evaluations", 0) >= 3 and turns["count"] == 3:
                        break
                    assert loop.time() - sent_at < 60, json.dumps(summary["metrics"].get("coherence"))[:3000]
                    await asyncio.sleep(0.5)
                summary = await _json(session, f"http://127.0.0.1:{admin}/api/summary")
                pipeline = await _json(session, f"http://127.0.0.1:{admin}/api/pipeline")
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
    log = err.decode()
    assert proc.returncode == 0, log
    assert pipeline["stages"]["sampling"]["total"] == {"sampled": 3.0}  # the default keeps a trickle whole
    assert summary["metrics"]["coherence"]["info"]["scale"] == [1.0, 5.0]
    # No documents in these spans: groundedness says why it has no score.
    skipped = summary["metrics"]["groundedness"]["reasons"]["skipped"]
    assert skipped[0]["count"] == 3 and skipped[0]["cause"].startswith("no context")
    assert {t["conversation_id"] for t in turns["items"]} == {"conv-1", "conv-2", "conv-3"}
    assert f"judge: judge-test at {judge.base_url}" in log
    assert "sampling: always (error exists | jailbreak_attempt == True), else rate_limit" in log
    assert "metrics: local: f1_score, local_lexical_groundedness" in log and "judge: groundedness" in log
    assert f"OTLP/HTTP on 127.0.0.1:{http}" in log
    assert len(judge.requests) >= 3
    assert "HTTP Request:" not in log and "POST " + judge.base_url not in log  # no line per judge call


def _config(**sampling: object) -> MonitorConfig:
    data = test_config().model_dump()
    data["sampling"] = sampling
    return MonitorConfig.model_validate(data)


async def test_content_capture_off_is_explained_on_the_page():
    async with running_sidecar() as (sc, _):
        await asyncio.to_thread(_send, f"http://127.0.0.1:{sc.http.port}", [("c1", "q", "a")], content=False)
        async with aiohttp.ClientSession() as session:
            for _ in range(100):
                doc = await _json(session, f"http://127.0.0.1:{sc.admin.port}/api/pipeline")
                if doc["stages"]["traces_without_turn"]["total"]:
                    break
                await asyncio.sleep(0.1)
    (finding,) = [f for f in doc["findings"] if f["code"] == "no_turns"]
    assert finding["level"] == "warning" and "no_message_content" in finding["text"]
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in finding["text"]


async def test_nothing_sampled_is_explained_on_the_page_and_in_the_log(caplog):
    config = _config(policies=[{"type": "probabilistic", "rate": 0.0}])
    async with running_sidecar(config) as (sc, sink):
        watch = sc.watch  # the sidecar's own watch (it checks every 60 s; here on demand)
        assert watch is not None
        await watch.check()
        await asyncio.to_thread(_send, f"http://127.0.0.1:{sc.http.port}", [("c1", "q", "a"), ("c2", "q", "a")])
        await sink.wait_turns(2)
        async with aiohttp.ClientSession() as session:
            doc = await _json(session, f"http://127.0.0.1:{sc.admin.port}/api/pipeline")
        with caplog.at_level(logging.WARNING, logger="monitor.admin.pipeline_watch"):
            said = await watch.check()
            again = await watch.check()
    (finding,) = [f for f in doc["findings"] if f["code"] == "nothing_sampled"]
    assert "probabilistic: 0% of conversations" in finding["text"] and "{type: always}" in finding["text"]
    assert [f.code for f in said] == ["nothing_sampled"] and again == []  # once, then rate-limited
    assert any("none sampled" in r.getMessage() for r in caplog.records)
