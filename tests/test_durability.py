"""Nothing accepted is lost silently: SIGTERM with a backlog behind a slow judge, kill -9 and
restart. Every sampled turn ends evaluated and stored, or kept in the backlog and evaluated after
the next start — counted either way."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import aiohttp
from aiohttp import web
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from tests.support.judge_server import JudgeServer, RecordedRequest, reply_json
from tests.support.pipeline import RecordingSink, metric_value, test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with
from tests.test_serve_cli import free_port, wait_ready

GOOD = reply_json({"reason": "clear", "score": 4})


def slow(seconds: float):
    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        await asyncio.sleep(seconds)
        return await GOOD(server, request, rec)

    return behave


def config(judge_url: str, store: Path, deadline: float = 10.0) -> MonitorConfig:
    data = test_config().model_dump(mode="json")
    data["judge"] = {"base_url": judge_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 30,
                     "max_concurrency": 4}
    data["evaluation"] = {"metrics": ["coherence"], "combine_metrics": False, "workers": 4}
    data["sampling"] = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
    data["exporters"] = {"store": {"enabled": True, "path": str(store), "flush_interval_seconds": 0.1}}
    data["shutdown_deadline_seconds"] = deadline
    return MonitorConfig.model_validate(data)


def db_counts(path: Path) -> tuple[int, int]:
    """(stored results, backlog rows) read from the file, as the next start would."""
    with sqlite3.connect(path) as conn:
        return (conn.execute("SELECT count(*) FROM results").fetchone()[0],
                conn.execute("SELECT count(*) FROM pending").fetchone()[0])


async def send_turns(port: int, n: int) -> set[str]:
    provider = provider_with(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"))
    ids = {emit_genai_turn(provider, f"conv-{i}", f"Question {i}?", f"Answer {i}.") for i in range(n)}
    assert await asyncio.to_thread(provider.force_flush, 10_000)
    await asyncio.to_thread(provider.shutdown)
    return ids


async def until(condition, timeout: float = 30.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


async def test_sigterm_with_a_backlog_loses_nothing_and_the_next_start_finishes(tmp_path, caplog):
    store = tmp_path / "store.sqlite3"
    n = 60
    caplog.set_level(logging.WARNING)
    async with JudgeServer(default=slow(1.0)) as judge:
        sidecar = Sidecar(config(judge.base_url, store, deadline=3.0), sink=RecordingSink(),
                          registry=CollectorRegistry())
        await sidecar.start()
        await send_turns(sidecar.http.port, n)
        await until(lambda: metric_value(sidecar, "rag_monitor_sampling_decisions_total",
                                         policy="probabilistic", decision="sampled") == n)
        await sidecar.shutdown()
    deferred = metric_value(sidecar, "rag_monitor_backlog_total", event="deferred")
    stored, pending = db_counts(store)
    assert deferred > 0 and stored > 0  # the judge is slow: some finished, most did not
    assert stored + deferred == n and pending == deferred
    assert metric_value(sidecar, "rag_monitor_queue_dropped_total", queue="evaluation") == 0
    assert not [r for r in caplog.records if "failed" in r.getMessage()]

    async with JudgeServer(default=GOOD) as judge:
        again = Sidecar(config(judge.base_url, store), sink=RecordingSink(), registry=CollectorRegistry())
        await again.start()
        try:
            await until(lambda: db_counts(store) == (n, 0))
        finally:
            await again.shutdown()
        assert metric_value(again, "rag_monitor_backlog_total", event="resumed") == deferred
        assert len(judge.requests) == deferred  # each left-over turn judged once, the rest not again


async def test_kill_9_then_restart_evaluates_the_turns_that_were_waiting(tmp_path):
    store = tmp_path / "store.sqlite3"
    n = 40
    http_port, admin_port = free_port(), free_port()

    def serve_config(judge_url: str) -> Path:
        data = config(judge_url, store).model_dump(mode="json")
        data["receivers"] = {"http": {"port": http_port}, "grpc": {"enabled": False}}
        data["admin"] = {"port": admin_port}
        for secret in ("api_key",):
            data["judge"][secret] = "sk-test"
        path = tmp_path / f"c-{time.monotonic_ns()}.yaml"
        path.write_text(json.dumps(data))
        return path

    async def serve(judge_url: str) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor.cli", "serve", "-c", str(serve_config(judge_url)), cwd=tmp_path,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        await wait_ready(admin_port, proc)
        return proc

    async with JudgeServer(default=slow(30.0)) as stuck:
        proc = await serve(stuck.base_url)
        try:
            await send_turns(http_port, n)
            # Durable within backlog_flush_seconds of being sampled: all n rows are on disk.
            await until(lambda: store.exists() and db_counts(store)[1] == n)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
    assert db_counts(store) == (0, n)

    async with JudgeServer(default=GOOD) as judge:
        proc = await serve(judge.base_url)
        try:
            await until(lambda: db_counts(store) == (n, 0))
            async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{admin_port}/metrics") as r:
                text = await r.text()
            assert f'rag_monitor_backlog_total{{event="resumed"}} {float(n)}' in text
        finally:
            proc.send_signal(signal.SIGTERM)
            assert await proc.wait() == 0
    assert os.path.exists(store)
