"""TypeScript/JavaScript stacks against a running sidecar, as a user meets them.

1. Every JS capture (``tests/testdata/captures/<js stack>-*``) is replayed over OTLP/HTTP into a
   running sidecar, byte for byte as the exporter sent it; the turns match the app's truth.
2. The AI SDK 6 app runs live: the real ``ai`` package, its own telemetry and OpenLLMetry-JS, the
   real OTLP exporter of OpenTelemetry JS, sending to the sidecar, the fake OpenAI server answering.
   It needs the stack's ``node_modules`` (``npm ci``, done by ``.ci/run``): without them the test
   is skipped with the command to run, except in CI (``CI=true``), where it fails.
"""

from __future__ import annotations

import os
import shutil

import aiohttp
import pytest

from monitor.offline.inspect import turn_to_json
from tests.assembly.test_captures import CAPTURES, absent_fields, assert_turn_matches, expected_turns
from tests.frameworks.js.harness import JS, STACKS, capture_name, installed, run_app
from tests.frameworks.test_frameworks_live import _post
from tests.support.fake_openai import FakeOpenAI
from tests.support.pipeline import metric_value, running_sidecar
from tests.support.rag_app import ANSWERS

JS_CASES = sorted(p.name for p in CAPTURES.iterdir() if p.is_dir() and p.name.split("-")[0] in STACKS)

LIVE = [
    ("aisdk6", "native", "stream"),
    ("aisdk6", "traceloop", "generate"),
]


def test_every_js_stack_is_captured():
    assert {c.split("-")[0] for c in JS_CASES} == set(STACKS)
    for stack in STACKS:
        assert (JS / stack / "package-lock.json").is_file(), f"{stack}: npm ci needs a committed lockfile"


@pytest.mark.parametrize("case", JS_CASES)
async def test_js_capture_replayed_into_a_running_sidecar(case):
    directory = CAPTURES / case
    expected = expected_turns(case)
    async with running_sidecar() as (sc, sink), aiohttp.ClientSession() as session:
        base = f"http://127.0.0.1:{sc.http.port}"
        for f in sorted(directory.glob("traces-*")):
            await _post(session, f"{base}/v1/traces", f)
        turns = await sink.wait_turns(len(expected))
        got = sorted((turn_to_json(t) for t in turns), key=lambda r: r["trace_id"])
        for g, e in zip(got, expected, strict=True):
            assert_turn_matches(g, e, absent_fields(case))
        assert metric_value(sc, "rag_monitor_turns_assembled_total", convention=turns[0].convention) == len(expected)


def _require_node_modules(stack: str) -> None:
    missing = None
    if shutil.which("node") is None:
        missing = "node is not on PATH"
    elif not installed(stack):
        missing = (f"tests/frameworks/js/{stack}/node_modules is absent: run "
                   f"`python -m tests.frameworks.js.harness install {stack}` (npm ci of its lockfile)")
    if missing is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{missing}; .ci/run must install it")
    pytest.skip(missing)


@pytest.mark.parametrize("stack,instrumentation,scenario", LIVE, ids=["-".join(c) for c in LIVE])
async def test_js_stack_live_to_sidecar(stack, instrumentation, scenario):
    _require_node_modules(stack)
    async with FakeOpenAI(ANSWERS) as llm, running_sidecar() as (sc, sink):
        conversation_id = f"live-{stack}-{instrumentation}-{scenario}"
        truth = await run_app(stack, instrumentation, scenario, f"http://127.0.0.1:{sc.http.port}",
                              llm.base_url or "", conversation_id)
        assert len(truth) == 2, "the app reported no turn"
        turns = await sink.wait_turns(len(truth))
        got = sorted((turn_to_json(t) for t in turns), key=lambda r: r["trace_id"])
        absent = absent_fields(capture_name(stack, instrumentation, scenario))
        for g, e in zip(got, sorted(truth, key=lambda r: r["trace_id"]), strict=True):
            assert_turn_matches(g, e, absent)
            assert g["conversation_id"] == conversation_id
        # The second turn carries the first as history, and its documents came from the tool.
        second = max(got, key=lambda r: len(r["history"]))
        assert len(second["history"]) == 2 and second["documents"]
