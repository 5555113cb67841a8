"""Turns assembled from payloads captured from the real instrumentation and framework libraries.

``tests/testdata/captures/*`` hold the OTLP bodies that real apps sent: the openai-level
instrumentations (``tests/support/rag_app.py``, see the README there) and the framework stacks
(``tests/frameworks/<stack>/``: LangChain, LlamaIndex, Haystack, pydantic-ai, OpenAI Agents,
OpenLIT); ``expected.jsonl`` is what the app and the model server really exchanged. Every field of
every turn is compared. The live path is covered in tests/test_instrumentation_live.py and
tests/frameworks/test_frameworks_live.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.assembly.config import AssemblyConfig
from monitor.assembly.messages import documents_from_value
from monitor.offline.inspect import inspect_files, turn_to_json

CAPTURES = Path(__file__).resolve().parent.parent / "testdata" / "captures"
CASES = sorted(p.name for p in CAPTURES.iterdir() if p.is_dir())


def expected_turns(case: str) -> list[dict]:
    rows = [json.loads(line) for line in (CAPTURES / case / "expected.jsonl").read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["trace_id"])


# Fields a stack never records anywhere in its spans or log records (test_absent_fields_are_absent
# proves it on the capture bytes). The turn must then leave them empty — never guess them from
# another field (a response model is not a request model).
NOT_ON_THE_WIRE: dict[str, frozenset[str]] = {
    # Haystack's tracer and OpenInference's Haystack instrumentation keep the generator's reply
    # meta (response model, usage) but neither the requested model nor the response id.
    "haystack-native": frozenset({"request_model", "response_id"}),
    "haystack-openinference": frozenset({"request_model", "response_id"}),
    # OpenInference's LlamaIndex LLM span: llm.model_name is the requested name and the output is
    # the message text; the raw OpenAI response (its model and id) is not kept.
    "llamaindex-openinference": frozenset({"response_model", "response_id"}),
    # OpenInference's Agents instrumentation stores the Responses API *response* as the
    # invocation parameters: the model that answered is there, the one requested is not.
    "openaiagents-openinference": frozenset({"request_model"}),
}


def absent_fields(case: str) -> frozenset[str]:
    return next((f for prefix, f in NOT_ON_THE_WIRE.items() if case.startswith(prefix + "-")), frozenset())


def assert_turn_matches(got: dict, exp: dict, absent: frozenset[str] = frozenset()) -> None:
    for key in ("trace_id", "conversation_id", "question", "answer", "history", "system_prompt",
                "request_model", "response_model", "service", "response_id"):
        assert got[key] == (None if key in absent else exp[key]), key
    assert got["documents"] == ([] if "documents" in absent else [
        {"id": d["id"], "content": d["content"], "score": d["score"]} for d in exp["documents"]])
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
        assert_turn_matches(g, e, absent_fields(case))


def _attribute_strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for v in node.values() for s in _attribute_strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _attribute_strings(v)]
    return [node] if isinstance(node, str) else []


@pytest.mark.parametrize("case", [c for c in CASES if absent_fields(c)])
def test_absent_fields_are_absent(case):
    """An allowance in NOT_ON_THE_WIRE holds only while the value really is nowhere in the capture."""
    from tests.support.capture_server import decode_file

    directory = CAPTURES / case
    texts = [s for f in sorted(directory.glob("traces-*")) + sorted(directory.glob("logs-*"))
             for s in _attribute_strings(decode_file(f))]
    for exp in expected_turns(case):
        for key in absent_fields(case):
            if key == "documents":  # no attribute holds them as a list of documents
                ids = {d["id"] for d in exp["documents"]}
                assert ids, "the app's truth has no documents: nothing to be absent"
                lists = [documents_from_value(t) or [] for t in texts]
                assert not any(ids & {d.id for d in docs} for docs in lists), key
                continue
            value = exp[key]
            assert value, (key, "the app's truth has no value: nothing to be absent")
            # As an attribute value, or as a quoted JSON/repr token inside one.
            assert not any(t == value or f'"{value}"' in t or f"'{value}'" in t for t in texts), (key, value)


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
