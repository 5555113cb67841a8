"""A sidecar with a scripted judge, turns sent with the OpenTelemetry SDK, and verdicts sent to it."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any, Callable

import aiohttp
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.sdk._logs.export import LogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.model import EvaluationResult
from tests.support.pipeline import test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with

READ_TOKEN = "read-token-1"
REVIEW_TOKEN = "review-token-1"
COHERENCE_DEFECT = {"reason": "muddled", "score": 2}  # coherence < 3 is a defect


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def feedback_config(judge_url: str, *, store: dict[str, Any] | None = None, admin: dict[str, Any] | None = None,
                    **extra: Any) -> MonitorConfig:
    data = test_config().model_dump(mode="json")
    data["judge"] = {"base_url": judge_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 5}
    data["evaluation"] = {"metrics": ["coherence"], "combine_metrics": False}
    data["sampling"] = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
    data["admin"] = {"port": 0, **(admin if admin is not None else {"review_token": REVIEW_TOKEN})}
    # Every judged pair in the review sample with certainty: each verdict weighs 1 (the weighting
    # itself is tested in test_join.py).
    data["review"] = {"probabilities": {"defect": 1.0, "pass": 1.0}}
    if store is not None:
        data["exporters"]["store"] = store
    for key, value in extra.items():
        data[key] = value
    return MonitorConfig.model_validate(data)


class Results:
    """A result consumer the test waits on."""

    def __init__(self) -> None:
        self.items: list[EvaluationResult] = []
        self.changed = asyncio.Event()

    def consume_result(self, result: EvaluationResult) -> None:
        self.items.append(result)
        self.changed.set()

    async def wait_for(self, trace_id: str, timeout: float = 20.0) -> EvaluationResult:
        async def _wait() -> EvaluationResult:
            while True:
                for r in self.items:
                    if r.turn.trace_id == trace_id:
                        return r
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(_wait(), timeout)


class App:
    """The instrumented app: its turns go to the sidecar's OTLP/HTTP receiver when flushed."""

    def __init__(self, port: int) -> None:
        self.provider: TracerProvider = provider_with(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"))
        self._n = 0

    def turn(self) -> str:
        """One turn, held in the SDK's batch until :meth:`flush`; its trace id."""
        self._n += 1
        return emit_genai_turn(self.provider, f"conv-{self._n}", f"Question {self._n}?", f"Answer {self._n}.")

    async def flush(self) -> None:
        assert await asyncio.to_thread(self.provider.force_flush, 10_000)

    async def close(self) -> None:
        await asyncio.to_thread(self.provider.shutdown)


class ReviewTool:
    """Sends people's verdicts as GenAI evaluation events with the real SDK (OTLP/HTTP logs)."""

    def __init__(self, port: int, scope: str = "review-tool", *, grpc: bool = False) -> None:
        self.provider = LoggerProvider(resource=Resource.create({"service.name": "review-tool"}))
        exporter: LogRecordExporter = (
            GrpcLogExporter(endpoint=f"127.0.0.1:{port}", insecure=True) if grpc
            else OTLPLogExporter(endpoint=f"http://127.0.0.1:{port}/v1/logs"))
        self.provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
        self.logger = self.provider.get_logger(scope)

    async def verdict(self, trace_id: str, attributes: dict[str, Any]) -> None:
        """Exported before this returns (the SDK's simple processor, in a thread: the sidecar
        under test runs on this loop)."""
        await asyncio.to_thread(self._emit, trace_id, attributes)

    def _emit(self, trace_id: str, attributes: dict[str, Any]) -> None:
        span = SpanContext(int(trace_id, 16), 0x1234567890ABCDEF, is_remote=True,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))
        context = trace.set_span_in_context(NonRecordingSpan(span))
        self.logger.emit(context=context, severity_number=SeverityNumber.INFO, event_name="gen_ai.evaluation.result",
                         attributes=attributes)

    async def close(self) -> None:
        await asyncio.to_thread(self.provider.shutdown)


async def post_verdict(sidecar: Sidecar, body: Any, token: str | None = REVIEW_TOKEN,
                       content_type: str = "application/json") -> tuple[int, Any]:
    headers = {"Content-Type": content_type}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, (bytes, str)) else __import__("json").dumps(body)
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://127.0.0.1:{sidecar.admin.port}/api/feedback", data=data,
                                headers=headers) as resp:
            return resp.status, await resp.json()


async def get_json(sidecar: Sidecar, path: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{sidecar.admin.port}{path}", headers=headers) as resp:
            return resp.status, await resp.json()


async def scrape(sidecar: Sidecar) -> str:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{sidecar.admin.port}/metrics") as resp:
            return await resp.text()


async def until(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Waits for ``condition()`` to be truthy, checking at each turn of a short poll."""
    async def _wait() -> Any:
        while not (value := condition()):
            await asyncio.sleep(0.05)
        return value

    return await asyncio.wait_for(_wait(), timeout)


async def until_async(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    async def _wait() -> Any:
        while not (value := await condition()):
            await asyncio.sleep(0.1)
        return value

    return await asyncio.wait_for(_wait(), timeout)


def sample(metrics_text: str, name: str, **labels: str) -> float | None:
    """The value of one series in a text exposition, or None."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(metrics_text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


def store_path(tmp_path: Path) -> dict[str, Any]:
    return {"enabled": True, "path": str(tmp_path / "store.sqlite3"), "flush_interval_seconds": 0.05}
