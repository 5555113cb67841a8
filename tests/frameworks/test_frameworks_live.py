"""Framework stacks against a running sidecar, as a user meets them.

1. Every capture (openai-level and framework) is replayed over OTLP/HTTP into a running sidecar,
   byte for byte as the exporter sent it; the turns the sidecar builds match the app's truth.
2. LangChain and LlamaIndex run live: the real framework, the real instrumentation and the real
   OTLP exporter, in the stack's own venv (``tests/frameworks/harness.py``), sending to the
   sidecar, with the fake OpenAI server answering.
3. A trace without message content is counted by reason, and the reason reaches the log.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Callable

import aiohttp
import pytest

from monitor.offline.inspect import turn_to_json
from tests.assembly.test_captures import CAPTURES, absent_fields, assert_turn_matches, expected_turns
from tests.frameworks.harness import capture_name, ensure_venv, run_app
from tests.support.fake_openai import FakeOpenAI
from tests.support.pipeline import metric_value, running_sidecar
from tests.support.rag_app import ANSWERS

FRAMEWORK_CASES = sorted(p.name for p in CAPTURES.iterdir() if p.is_dir() and (p / "expected.jsonl").exists()
                         and p.name.split("-")[0] in ("langchain", "llamaindex", "haystack", "pydanticai",
                                                       "openaiagents", "openlit"))

LIVE = [
    ("langchain", "openinference", "stuffed"),
    ("langchain", "traceloop", "conversation"),
    ("llamaindex", "openinference", "query"),
    ("llamaindex", "traceloop", "chat"),
]


async def _post(session: aiohttp.ClientSession, url: str, path: Path) -> None:
    ctype = "application/json" if path.suffix == ".json" else "application/x-protobuf"
    async with session.post(url, data=path.read_bytes(), headers={"Content-Type": ctype}) as resp:
        assert resp.status == 200, await resp.text()


@pytest.mark.parametrize("case", FRAMEWORK_CASES)
async def test_capture_replayed_into_a_running_sidecar(case):
    directory = CAPTURES / case
    expected = expected_turns(case)
    async with running_sidecar() as (sc, sink), aiohttp.ClientSession() as session:
        base = f"http://127.0.0.1:{sc.http.port}"
        for f in sorted(directory.glob("logs-*")):
            await _post(session, f"{base}/v1/logs", f)
        for f in sorted(directory.glob("traces-*")):
            await _post(session, f"{base}/v1/traces", f)
        turns = await sink.wait_turns(len(expected))
        got = sorted((turn_to_json(t) for t in turns), key=lambda r: r["trace_id"])
        for g, e in zip(got, expected, strict=True):
            assert_turn_matches(g, e, absent_fields(case))
        assert metric_value(sc, "rag_monitor_turns_assembled_total", convention=turns[0].convention) == len(expected)


@pytest.mark.parametrize("stack,instrumentation,scenario", LIVE, ids=["-".join(c) for c in LIVE])
async def test_framework_live_to_sidecar(stack, instrumentation, scenario):
    ensure_venv(stack)
    async with FakeOpenAI(ANSWERS) as llm, running_sidecar() as (sc, sink):
        conversation_id = f"live-{stack}-{instrumentation}-{scenario}"
        truth = await run_app(stack, instrumentation, scenario, f"http://127.0.0.1:{sc.http.port}",
                              llm.base_url or "", conversation_id)
        assert truth, "the app reported no turn"
        turns = await sink.wait_turns(len(truth))
        got = sorted((turn_to_json(t) for t in turns), key=lambda r: r["trace_id"])
        absent = absent_fields(capture_name(stack, instrumentation, scenario))
        for g, e in zip(got, sorted(truth, key=lambda r: r["trace_id"]), strict=True):
            assert_turn_matches(g, e, absent)
            assert g["conversation_id"] == conversation_id


async def test_chat_span_without_content_is_counted_and_explained(caplog):
    """A genai EVENT_ONLY capture sent without its log records: the chat span has no content."""
    directory = CAPTURES / "genai-conversation-event"
    caplog.set_level(logging.WARNING, logger="monitor.assembly.assembler")
    async with running_sidecar() as (sc, sink), aiohttp.ClientSession() as session:
        base = f"http://127.0.0.1:{sc.http.port}"
        for f in sorted(directory.glob("traces-*")):
            await _post(session, f"{base}/v1/traces", f)
        n = len(expected_turns("genai-conversation-event"))
        # No event marks the assembler's sweep: poll the counter it bumps, with a deadline.
        await _until(lambda: metric_value(sc, "rag_monitor_traces_without_turn_total",
                                          reason="no_message_content") >= n)
    warnings = [r.getMessage() for r in caplog.records if "no_message_content" in r.getMessage()]
    assert len(warnings) == 1, warnings  # rate-limited: one line for three traces
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in warnings[0]
    assert sink.turns == []


async def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)
