"""The AI SDK convention and the robustness rules for TypeScript stacks, on shapes the captures do
not cover: AI SDK 4's names, generateObject, the other conversation-id keys, AI SDK 7's runtime
context; GenAI messages without an operation name; OpenInference's plain-text answer and metadata
session; one call recorded by two instrumentations (and what must never be merged)."""

from __future__ import annotations

import json

import pytest

from monitor.assembly.config import AttributeMapping
from monitor.assembly.turns import Explanation, NoTurn, build_turn
from monitor.model import SpanRecord

T = "cd" * 16
SYSTEM = "Answer from the documents."
DOCS = [{"id": "kb-1", "content": "Refunds take 5 days.", "score": 0.9}]


def span(span_id: str, parent: str = "", start: int = 0, end: int = 0, name: str = "s", scope: str = "ai",
         **attrs: object) -> SpanRecord:
    return SpanRecord(T, span_id, parent, name, 1, start, end or start + 100, attributes=attrs,
                      resource={"service.name": "svc"}, scope_name=scope)


def ai_messages(*pairs: tuple[str, object]) -> str:
    return json.dumps([{"role": r, "content": c} for r, c in pairs])


def ai_sdk_trace(*, usage_names: tuple[str, str] = ("inputTokens", "outputTokens"), metadata_key: str = "sessionId",
                 operation: str = "ai.generateText", answer_key: str = "ai.response.text",
                 answer: str = "About 5 days.") -> list[SpanRecord]:
    """POST /chat → ai.<fn> → [doGenerate (tool call), ai.toolCall, doGenerate (answer)]."""
    meta = {f"ai.telemetry.metadata.{metadata_key}": "conv-9"} if metadata_key else {}
    question = [{"type": "text", "text": "How long do refunds take?"}]
    step1 = ai_messages(("system", SYSTEM), ("user", "Hi"), ("assistant", [{"type": "text", "text": "Hello!"}]),
                        ("user", question))
    step2 = ai_messages(("system", SYSTEM), ("user", "Hi"), ("assistant", [{"type": "text", "text": "Hello!"}]),
                        ("user", question),
                        ("assistant", [{"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {}}]),
                        ("tool", [{"type": "tool-result", "toolCallId": "c1", "output": {"type": "json",
                                                                                       "value": DOCS}}]))
    model = {"ai.model.id": "gpt-4o-mini", "ai.model.provider": "openai.chat"}
    inp, out = usage_names
    return [
        span("0000000000000001", start=0, end=1000, name="POST /chat", scope="app"),
        span("0000000000000002", "0000000000000001", 10, 990, name=operation, **{
            "ai.operationId": operation, "ai.prompt": json.dumps({"system": SYSTEM, "prompt": "How long?"}),
            f"ai.usage.{inp}": 99, **meta}),
        span("0000000000000003", "0000000000000002", 20, 100, name=f"{operation}.doGenerate", **{
            "ai.operationId": f"{operation}.doGenerate", "ai.prompt.messages": step1, "ai.response.text": "",
            "ai.response.model": "gpt-4o-mini-2024-07-18", "ai.response.id": "r-1", f"ai.usage.{inp}": 30,
            f"ai.usage.{out}": 5, **model, **meta}),
        span("0000000000000004", "0000000000000002", 110, 120, name="ai.toolCall", **{
            "ai.operationId": "ai.toolCall", "ai.toolCall.args": json.dumps({"query": "refund time"}),
            "ai.toolCall.result": json.dumps(DOCS), **meta}),
        span("0000000000000005", "0000000000000002", 130, 980, name=f"{operation}.doGenerate", **{
            "ai.operationId": f"{operation}.doGenerate", "ai.prompt.messages": step2, answer_key: answer,
            "ai.response.model": "gpt-4o-mini-2024-07-18", "ai.response.id": "r-2", f"ai.usage.{inp}": 60,
            f"ai.usage.{out}": 7, **model, **meta}),
    ]


@pytest.mark.parametrize("usage_names", [("inputTokens", "outputTokens"), ("promptTokens", "completionTokens")],
                         ids=["ai5+", "ai4"])
def test_ai_sdk_multi_step_call_is_one_turn_answered_by_the_last_step(usage_names):
    turn = build_turn(ai_sdk_trace(usage_names=usage_names), [], AttributeMapping())
    assert (turn.question, turn.answer, turn.system_prompt) == ("How long do refunds take?", "About 5 days.", SYSTEM)
    assert [(m.role, m.content) for m in turn.history] == [("user", "Hi"), ("assistant", "Hello!")]
    assert [(d.id, d.content, d.score) for d in turn.documents] == [("kb-1", "Refunds take 5 days.", 0.9)]
    assert (turn.request_model, turn.response_model, turn.provider) == (
        "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "openai")
    assert turn.response_id == "r-2" and turn.conversation_id == "conv-9"
    # Both steps are model calls; the wrapper's own total (99) is not added on top.
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (90, 12)
    assert turn.convention == "aisdk"


def test_ai_sdk_generate_object_answer_is_the_object():
    obj = json.dumps({"days": 5})
    turn = build_turn(ai_sdk_trace(operation="ai.generateObject", answer_key="ai.response.object", answer=obj),
                      [], AttributeMapping())
    assert turn.answer == obj


@pytest.mark.parametrize("key", ["sessionId", "conversationId", "threadId", "chatId"])
def test_ai_sdk_conversation_id_from_telemetry_metadata(key):
    assert build_turn(ai_sdk_trace(metadata_key=key), [], AttributeMapping()).conversation_id == "conv-9"


def test_ai_sdk_runtime_context_and_a_mapped_key():
    spans = ai_sdk_trace(metadata_key="")
    with_context = [s if s.span_id != "0000000000000005" else span(
        s.span_id, s.parent_span_id, s.start_time_unix_nano, s.end_time_unix_nano, s.name,
        **{**s.attributes, "ai.settings.context.conversationId": "ctx-1"}) for s in spans]
    assert build_turn(with_context, [], AttributeMapping()).conversation_id == "ctx-1"
    custom = [s if s.span_id != "0000000000000002" else span(
        s.span_id, s.parent_span_id, s.start_time_unix_nano, s.end_time_unix_nano, s.name,
        **{**s.attributes, "ai.telemetry.metadata.ticket": "t-7"}) for s in spans]
    assert build_turn(custom, [], AttributeMapping()).conversation_id == T
    mapped = AttributeMapping(conversation_id=["ai.telemetry.metadata.ticket"])
    assert build_turn(custom, [], mapped).conversation_id == "t-7"


def test_genai_messages_without_an_operation_name_are_a_chat_call():
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "What is OTLP?"}]}])
    out = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "A protocol."}]}])
    spans = [span("0000000000000001", name="POST /chat", scope="app", end=1000),
             span("0000000000000002", "0000000000000001", 10, 900, name="chat gpt-4o-mini", scope="js",
                  **{"gen_ai.input.messages": msgs, "gen_ai.output.messages": out,
                     "gen_ai.request.model": "gpt-4o-mini"})]
    turn = build_turn(spans, [], AttributeMapping())
    assert (turn.question, turn.answer, turn.request_model) == ("What is OTLP?", "A protocol.", "gpt-4o-mini")


def _oi_llm(**extra: object) -> dict[str, object]:
    return {"openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "What is OTLP?",
            **extra}


def test_openinference_plain_text_answer_and_metadata_session():
    spans = [span("0000000000000001", name="POST /chat", scope="app", end=1000),
             span("0000000000000002", "0000000000000001", 10, 900, name="llm", scope="oi", **_oi_llm(**{
                 "output.value": "A protocol.", "output.mime_type": "text/plain",
                 "metadata.sessionId": "s-3"}))]
    turn = build_turn(spans, [], AttributeMapping())
    assert (turn.answer, turn.conversation_id) == ("A protocol.", "s-3")


def test_openinference_json_output_value_is_not_a_text_answer():
    spans = [span("0000000000000001", name="POST /chat", scope="app", end=1000),
             span("0000000000000002", "0000000000000001", 10, 900, name="llm", scope="oi", **_oi_llm(**{
                 "output.value": json.dumps([{"type": "tool-call"}]), "output.mime_type": "application/json"}))]
    with pytest.raises(NoTurn) as exc:
        build_turn(spans, [], AttributeMapping())
    assert exc.value.reason == "no_answer"


def _chat(span_id: str, start: int, end: int, scope: str, question: str, parent: str = "0000000000000001",
          **extra: object) -> SpanRecord:
    msgs = json.dumps([{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])
    out = json.dumps([{"role": "assistant", "content": f"answer to {question}"}])
    return span(span_id, parent, start, end, name="chat", scope=scope, **{
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": msgs, "gen_ai.output.messages": out,
        "gen_ai.request.model": "gpt-4o-mini", **extra})


ROOT = span("0000000000000001", name="POST /chat", scope="app", end=10_000)


def test_framework_and_client_spans_of_one_call_count_once_and_the_served_model_wins():
    framework = _chat("0000000000000002", 100, 900, "langchain", "Q?", **{
        "gen_ai.response.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 4})
    client = _chat("0000000000000003", 120, 880, "openai", "Q?", **{
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.response.id": "r-1",
        "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 4})
    ex = Explanation()
    turn = build_turn([ROOT, framework, client], [], AttributeMapping(), explanation=ex)
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (40, 4)
    assert (turn.response_model, turn.response_id, turn.chat_span_id) == ("gpt-4o-mini-2024-07-18", "r-1",
                                                                           client.span_id)
    assert any("record the same call" in n for n in ex.notes)
    # The framework span alone has the usage (a client span without it): still counted once.
    bare = _chat("0000000000000003", 120, 880, "openai", "Q?", **{"gen_ai.response.id": "r-1"})
    turn = build_turn([ROOT, framework, bare], [], AttributeMapping())
    assert (turn.usage.input_tokens, turn.response_id) == (40, "r-1")


@pytest.mark.parametrize("case", ["different inputs", "one after the other", "same instrumentation",
                                  "unrelated parents"])
def test_calls_that_are_not_one_call_are_never_merged(case):
    first = _chat("0000000000000002", 100, 900, "langchain", "Q?", **{"gen_ai.usage.input_tokens": 10})
    second = {
        "different inputs": _chat("0000000000000003", 120, 880, "openai", "Rewrite: Q?",
                                  **{"gen_ai.usage.input_tokens": 20}),
        "one after the other": _chat("0000000000000003", 1000, 1900, "openai", "Q?",
                                     **{"gen_ai.usage.input_tokens": 20}),
        "same instrumentation": _chat("0000000000000003", 120, 880, "langchain", "Q?",
                                      **{"gen_ai.usage.input_tokens": 20}),
        "unrelated parents": _chat("0000000000000003", 120, 880, "openai", "Q?", parent="00000000000000ff",
                                   **{"gen_ai.usage.input_tokens": 20}),
    }[case]
    turn = build_turn([ROOT, first, second], [], AttributeMapping())
    assert turn.usage.input_tokens == 30


# ---------------------------------------------------------------------------------------------
# inspect --explain: GenAI spans recognised but not readable are named, not "install an instrumentation"
# ---------------------------------------------------------------------------------------------

def _capture_spans(case: str) -> list[SpanRecord]:
    from pathlib import Path

    from monitor.receivers.decode import decode_traces, sniff_format

    directory = Path(__file__).resolve().parent.parent / "testdata" / "captures" / case
    spans: list[SpanRecord] = []
    for f in sorted(directory.glob("traces-*")):
        body = f.read_bytes()
        spans += decode_traces(body, sniff_format(body), None, 1 << 20).records
    first = spans[0].trace_id
    return [s for s in spans if s.trace_id == first]


def _without(spans: list[SpanRecord], *keys: str) -> list[SpanRecord]:
    return [s._replace(attributes={k: v for k, v in s.attributes.items() if k not in keys}) for s in spans]


def test_explain_names_an_ai_sdk_span_that_lost_its_operation_id():
    spans = _without(_capture_spans("aisdk6-native-generate"), "ai.operationId")
    ex = Explanation()
    with pytest.raises(NoTurn) as exc:
        build_turn(spans, [], AttributeMapping(), explanation=ex)
    assert exc.value.reason == "no_chat_call"
    assert "'ai.generateText.doGenerate" in exc.value.hint and "without ai.operationId" in exc.value.hint
    assert "installed" not in exc.value.hint
    assert sum("without ai.operationId" in n for n in ex.notes) == 3  # the 2 model calls and their wrapper


def test_explain_names_a_genai_span_without_operation_or_messages():
    spans = _without(_capture_spans("aisdk6-traceloop-generate"), "ai.operationId", "gen_ai.input.messages",
                     "gen_ai.output.messages", "gen_ai.operation.name")
    with pytest.raises(NoTurn) as exc:
        build_turn(spans, [], AttributeMapping())
    assert exc.value.reason == "no_chat_call"
    assert "span 'chat gpt-4o-mini'" in exc.value.hint
    assert "neither gen_ai.operation.name nor gen_ai.input/output.messages" in exc.value.hint


def test_ai_sdk_model_call_without_content_names_the_switches():
    spans = _without(_capture_spans("aisdk6-native-generate"), "ai.prompt.messages", "ai.response.text",
                     "ai.prompt")
    with pytest.raises(NoTurn) as exc:
        build_turn(spans, [], AttributeMapping())
    assert exc.value.reason == "no_message_content"
    assert "experimental_telemetry" in exc.value.hint and "recordInputs" in exc.value.hint


def test_inspect_explain_prints_the_unreadable_span(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    source = Path(__file__).resolve().parent.parent / "testdata" / "captures" / "aisdk6-native-generate"
    request = ExportTraceServiceRequest.FromString((source / "traces-001.pb").read_bytes())
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for sp in ss.spans:
                kept = [kv for kv in sp.attributes if kv.key != "ai.operationId"]
                del sp.attributes[:]
                sp.attributes.extend(kept)
    path = tmp_path / "traces.pb"
    path.write_bytes(request.SerializeToString())
    out = subprocess.run([sys.executable, "-m", "monitor.cli", "inspect", "--explain", "--traces", str(path)],
                         capture_output=True, text=True).stdout
    assert "NO TURN (no_chat_call): no span reads as a chat call: span 'ai.generateText.doGenerate" in out, out
    assert "is a GenAI/LLM instrumentation installed" not in out
