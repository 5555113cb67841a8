"""`rag-monitor serve` processes fed versioned traffic by the real OpenTelemetry SDK, judged by the
test judge server: what the live release tests drive."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import aiohttp
from aiohttp import web
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.support.daemon import free_port
from tests.support.judge_server import JudgeServer, RecordedRequest, reply_json
from tests.support.sdk_spans import emit_genai_turn
from tests.test_serve_cli import wait_ready

__all__ = ["judge_by_marker", "Serve", "versioned", "send", "until", "metric"]

_MARK = re.compile(r"\[s=(\d)\]")
SERVICE = "shop"


async def judge_by_marker(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
    """Coherence as the question's ``[s=N]`` says (below 3 is a defect)."""
    text = " ".join(m["content"] for m in rec.body["messages"] if isinstance(m.get("content"), str))
    found = _MARK.search(text)
    assert found, "every test question carries its score"
    return await reply_json({"reason": f"scored {found.group(1)}", "score": int(found.group(1))})(server, request, rec)


def versioned(http_port: int, version: str) -> TracerProvider:
    """An app build: its resource names the service and the version, as the SDK's users set them."""
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE, "service.version": version}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{http_port}/v1/traces"), schedule_delay_millis=100))
    return provider


async def send(provider: TracerProvider, tag: str, n: int, defects: int) -> None:
    """``n`` single-turn conversations, the first ``defects`` of every ``n`` judged defects, spread
    evenly (a deterministic pattern: the test's figures do not depend on a seed)."""
    for i in range(n):
        defect = (i * defects) // n != ((i + 1) * defects) // n
        emit_genai_turn(provider, f"{tag}-{i}", f"How do refunds work? [s={1 if defect else 4}]", "In 30 days.",
                        {"http.route": "/chat"})
    assert await asyncio.to_thread(provider.force_flush, 10_000)


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 60.0, what: str = "") -> None:
    """Wait for ``condition`` (polled); a bound only against a hang, never a measured delay."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not met in {timeout:g} s: {what}")
        await asyncio.sleep(0.2)


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of the one series of ``name`` with these labels in a /metrics text (None: absent)."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


class Serve:
    """One ``rag-monitor serve -c`` process with a config of its own, stopped by PID."""

    def __init__(self, tmp_path: Path, name: str, judge_url: str, store: dict[str, Any],
                 regressions: dict[str, Any] | None = None) -> None:
        self.tmp_path = tmp_path
        self.name = name
        self.http = free_port()
        self.admin = free_port()
        self.config = {
            "receivers": {"http": {"port": self.http}, "grpc": {"enabled": False}},
            "admin": {"port": self.admin},
            "assembly": {"decision_wait_seconds": 0.1},
            "judge": {"base_url": judge_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 10,
                      "max_retries": 0},
            "evaluation": {"metrics": ["coherence"], "combine_metrics": False, "workers": 4},
            "sampling": {"policies": [{"type": "always"}]},
            "exporters": {"store": {"flush_interval_seconds": 0.1, **store}},
            "regressions": {"refresh_seconds": 0.3, "settle_seconds": 0.5, **(regressions or {})},
            "fleet": {"replica_id": name},
            "shutdown_deadline_seconds": 5,
        }
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def log(self) -> str:
        path = self.tmp_path / f"{self.name}.log"
        return path.read_text()[-3000:] if path.exists() else ""

    async def start(self) -> None:
        path = self.tmp_path / f"{self.name}.yaml"
        path.write_text(json.dumps(self.config))
        with (self.tmp_path / f"{self.name}.log").open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "monitor.cli", "serve", "-c", str(path), cwd=self.tmp_path,
                stdout=log, stderr=log)
        try:
            await wait_ready(self.admin, self.proc)
        except AssertionError:
            raise AssertionError(f"{self.name} not ready: {self.log}") from None

    async def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            await proc.wait()

    async def api(self, path: str) -> Any:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{self.admin}{path}") as r:
            assert r.status == 200, await r.text()
            return await r.json()

    async def metrics(self) -> str:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{self.admin}/metrics") as r:
            return await r.text()

    async def comparison(self, candidate: str, metric_id: str = "coherence") -> dict[str, Any] | None:
        doc = await self.api("/api/releases")
        for service in doc["services"]:
            for c in service["comparisons"]:
                if c["candidate"] == candidate and c["metric"] == metric_id and c["service"] == SERVICE:
                    return dict(c)
        return None

    async def evaluations(self, version: str) -> int:
        """Evaluations of ``version`` the release comparisons have read (its /api/releases entry)."""
        doc = await self.api("/api/releases")
        return sum(v["evaluations"] for s in doc["services"] if s["service"] == SERVICE
                   for v in s["versions"] if v["version"] == version)
