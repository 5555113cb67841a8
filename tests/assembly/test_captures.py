"""Turns assembled from payloads captured from the real instrumentation libraries.

``tests/testdata/captures/*`` hold the OTLP bodies that opentelemetry-instrumentation-openai-v2,
openinference-instrumentation-openai and OpenLLMetry (traceloop) sent for scripted RAG requests
(see the README there); ``expected.jsonl`` is what the app actually sent. Every field of every
turn is compared. The live path (same libraries exporting to a running sidecar) is covered in
tests/test_instrumentation_live.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.config import AssemblyConfig
from monitor.inspect import inspect_files, turn_to_json

CAPTURES = Path(__file__).resolve().parent.parent / "testdata" / "captures"
CASES = sorted(p.name for p in CAPTURES.iterdir() if p.is_dir())


def expected_turns(case: str) -> list[dict]:
    rows = [json.loads(line) for line in (CAPTURES / case / "expected.jsonl").read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["trace_id"])


def assert_turn_matches(got: dict, exp: dict) -> None:
    for key in ("trace_id", "conversation_id", "question", "answer", "history", "system_prompt",
                "request_model", "response_model", "service", "response_id"):
        assert got[key] == exp[key], key
    assert got["documents"] == [{"id": d["id"], "content": d["content"], "score": d["score"]} for d in exp["documents"]]
    # usage is the turn's cost: every chat call of the trace (an agent makes several).
    calls = exp["chat_call_details"]
    assert got["usage"] == {"input_tokens": sum(c["input_tokens"] for c in calls),
                            "output_tokens": sum(c["output_tokens"] for c in calls)}
    assert got["provider"] == exp["provider"]


def test_every_convention_and_mode_is_captured():
    for instrumentation in ("genai", "openinference", "openllmetry"):
        for scenario in ("conversation", "stream", "agent"):
            assert any(c.startswith(f"{instrumentation}-{scenario}-") for c in CASES), (instrumentation, scenario)


@pytest.mark.parametrize("case", CASES)
def test_captured_traces_assemble_field_by_field(case):
    directory = CAPTURES / case
    turns = inspect_files(sorted(directory.glob("traces-*")), sorted(directory.glob("logs-*")), AssemblyConfig())
    got = sorted((turn_to_json(t) for t in turns), key=lambda r: r["trace_id"])
    exp = expected_turns(case)
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert_turn_matches(g, e)


def test_inspect_cli_prints_one_json_object_per_turn():
    directory = CAPTURES / "genai-conversation-event"
    args = [sys.executable, "-m", "monitor.cli", "inspect"]
    for f in sorted(directory.glob("traces-*")):
        args += ["--traces", str(f)]
    for f in sorted(directory.glob("logs-*")):
        args += ["--logs", str(f)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["trace_id"] for r in sorted(rows, key=lambda r: r["trace_id"])] == [
        e["trace_id"] for e in expected_turns("genai-conversation-event")]
    required = {"trace_id", "conversation_id", "question", "answer", "history", "documents", "system_prompt",
                "request_model", "response_model", "usage"}
    assert all(required <= set(r) for r in rows)
    # The conversation's later turns carry the earlier ones as history, without the system message.
    ordered = sorted(rows, key=lambda r: len(r["history"]))
    assert [len(r["history"]) for r in ordered] == [0, 2, 4]
    assert all(m["role"] in ("user", "assistant") for r in rows for m in r["history"])
