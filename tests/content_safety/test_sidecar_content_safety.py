"""The sidecar with metrics on Azure AI Content Safety: spans in, service-scored turns out.

The real service cannot be reached from tests; the official SDK talks to the local fake of the
REST API (tests/support/content_safety_server.py). No LLM judge is configured: service-backed
metrics need none.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from tests.support.content_safety_server import KEY, ContentSafetyServer
from tests.support.pipeline import RecordingSink, metric_value, test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with


class Results:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.changed = asyncio.Event()

    def consume_result(self, result: Any) -> None:
        self.items.append(result)
        self.changed.set()

    async def wait(self, n: int) -> list[Any]:
        async def _wait() -> None:
            while len(self.items) < n:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(_wait(), 20)
        return self.items


async def test_the_sidecar_scores_severities_on_content_safety() -> None:
    async with ContentSafetyServer(severity_for=lambda c, t: 6 if c == "Violence" and "fight" in t else 0) as server:
        data = test_config().model_dump(mode="json")
        data["evaluation"] = {
            "content_safety": {"endpoint": server.endpoint, "api_key": KEY},
            "metrics": [{"id": "violence", "backend": "azure_content_safety"},
                        {"id": "sexual", "backend": "azure_content_safety"}, "local_jailbreak_attempt"]}
        data["sampling"] = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
        results = Results()
        sidecar = Sidecar(MonitorConfig.model_validate(data), sink=RecordingSink(), registry=CollectorRegistry(),
                          result_consumers=[results])
        await sidecar.start()
        try:
            assert sidecar.http is not None
            provider = provider_with(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{sidecar.http.port}/v1/traces"))
            emit_genai_turn(provider, "conv-0", "How do I settle this?", "Go fight them.")
            emit_genai_turn(provider, "conv-1", "How do I pitch a tent?", "Stake the corners.")
            assert await asyncio.to_thread(provider.force_flush, 10_000)
            await asyncio.to_thread(provider.shutdown)
            items = await results.wait(2)
        finally:
            await sidecar.shutdown()
    violence = {r.turn.conversation_id: next(s for s in r.scores if s.metric == "violence") for r in items}
    assert (violence["conv-0"].value, violence["conv-0"].label, violence["conv-0"].defect) == (6.0, "High", True)
    assert (violence["conv-1"].value, violence["conv-1"].defect) == (0.0, False)
    assert len(server.calls) == 2  # both severities of a turn in one text:analyze call
    m = lambda name, **labels: metric_value(sidecar, name, **labels)  # noqa: E731
    assert m("rag_monitor_evaluations_total", metric="violence", service="sdk-app", outcome="defect") == 1
    assert m("rag_monitor_judge_requests_total", outcome="ok") == 2  # service calls counted with the judge's
