"""The real instrumentation libraries, the real openai client and the real OTLP exporters,
sending to a running sidecar; the assembled turns are compared field by field with what the
app sent.

Each library patches ``openai`` globally, so each run is a subprocess
(``tests/support/rag_app.py``); the fake OpenAI-compatible server and the sidecar run here on
127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from monitor.offline.inspect import turn_to_json
from tests.assembly.test_captures import assert_turn_matches
from tests.support.fake_openai import FakeOpenAI
from tests.support.pipeline import metric_value, running_sidecar
from tests.support.rag_app import ANSWERS

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.instrumentation

CASES = [
    # (instrumentation, exporter, scenario, content)
    ("genai", "http-protobuf", "conversation", "span"),
    ("genai", "http-json", "conversation", "event"),
    ("genai", "grpc", "stream", "event"),
    ("genai", "http-protobuf", "agent", "span"),
    ("openinference", "http-protobuf", "conversation", "span"),
    ("openinference", "grpc", "stream", "span"),
    ("openinference", "http-json", "agent", "span"),
    ("openllmetry", "http-protobuf", "conversation", "event"),
    ("openllmetry", "grpc", "conversation", "span"),
    ("openllmetry", "http-json", "stream", "event"),
]


async def run_app(*args: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.support.rag_app", *args, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


@pytest.mark.parametrize("instrumentation,exporter,scenario,content", CASES,
                         ids=["-".join(c) for c in CASES])
async def test_live_instrumentation_to_sidecar(instrumentation, exporter, scenario, content):
    async with FakeOpenAI(ANSWERS) as llm, running_sidecar() as (sc, sink):
        endpoint = (f"127.0.0.1:{sc.grpc.port}" if exporter == "grpc" else f"http://127.0.0.1:{sc.http.port}")
        conversation_id = f"live-{instrumentation}-{scenario}"
        expected = await run_app(
            "--instrumentation", instrumentation, "--exporter", exporter, "--endpoint", endpoint,
            "--openai-base-url", llm.base_url, "--scenario", scenario, "--content", content,
            "--conversation-id", conversation_id)
        assert len(expected) == (3 if scenario == "conversation" else 1)
        turns = await sink.wait_turns(len(expected))
        got = sorted((turn_to_json(t) for t in turns), key=lambda r: r["trace_id"])
        for g, e in zip(got, sorted(expected, key=lambda r: r["trace_id"]), strict=True):
            assert_turn_matches(g, e)
            assert g["conversation_id"] == conversation_id
        transport = "grpc" if exporter == "grpc" else "http"
        assert metric_value(sc, "rag_monitor_spans_received_total", transport=transport) > 0
        # Every turn of the conversation went to one conversation, in order.
        if scenario == "conversation":
            assert {t.conversation_id for t in turns} == {conversation_id}
            assert [len(t.history) for t in turns] == [0, 2, 4]
