"""Convention shapes the captures do not cover (older library versions, custom apps, traps)."""

from __future__ import annotations

import json

import pytest

from monitor.assembly.assembler import TRACES_WITHOUT_TURN
from monitor.assembly.config import AssemblyConfig, AttributeMapping
from monitor.assembly.messages import documents_from_value, input_text
from monitor.assembly.turns import Explanation, NoTurn, build_turn
from monitor.model import LogRecord, SpanRecord

T = "ab" * 16


def span(span_id: str, parent: str = "", start: int = 0, end: int = 0, name: str = "s", **attrs) -> SpanRecord:
    return SpanRecord(T, span_id, parent, name, 1, start, end or start + 100, attributes=attrs,
                      resource={"service.name": "svc"})


def test_openllmetry_legacy_indexed_prompts_and_session():
    spans = [
        span("0000000000000001", start=0, end=1000, name="rag.workflow",
             **{"traceloop.span.kind": "workflow", "traceloop.association.properties.session_id": "sess-1"}),
        span("0000000000000002", "0000000000000001", start=10, end=20, name="retrieve",
             **{"traceloop.span.kind": "task", "traceloop.entity.output": json.dumps(
                 [{"id": "d1", "text": "Refunds take 5 days.", "score": 0.9}])}),
        span("0000000000000003", "0000000000000001", start=30, end=40, name="openai.chat",
             **{"llm.request.type": "chat", "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
                "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Hi",
                "gen_ai.prompt.2.role": "assistant", "gen_ai.prompt.2.content": "Hello!",
                "gen_ai.prompt.3.role": "user", "gen_ai.prompt.3.content": "How long do refunds take?",
                "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "About 5 days.",
                "gen_ai.usage.prompt_tokens": 40, "gen_ai.usage.completion_tokens": 4}),
    ]
    turn = build_turn(spans, [], AttributeMapping())
    assert turn.question == "How long do refunds take?"
    assert turn.answer == "About 5 days."
    assert [(m.role, m.content) for m in turn.history] == [("user", "Hi"), ("assistant", "Hello!")]
    assert turn.system_prompt == "Be brief."
    assert turn.conversation_id == "sess-1"
    assert [(d.id, d.content, d.score) for d in turn.documents] == [("d1", "Refunds take 5 days.", 0.9)]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (40, 4)
    assert turn.convention == "openllmetry"


def test_genai_event_form_with_event_name_attribute_and_choice_on_parent_span():
    root = span("0000000000000001", start=0, end=1000, name="POST /chat", **{"gen_ai.conversation.id": "c-7"})
    chat = span("0000000000000002", "0000000000000001", start=100, end=200, name="chat",
                **{"gen_ai.operation.name": "chat", "gen_ai.system": "openai"})
    embed = span("0000000000000003", "0000000000000001", start=50, end=60, name="embeddings",
                 **{"gen_ai.operation.name": "embeddings"})
    logs = [
        LogRecord(T, chat.span_id, 110, "", {"content": "You are helpful."}, {"event.name": "gen_ai.system.message"}),
        LogRecord(T, chat.span_id, 111, "", {"content": "What is OTLP?"}, {"event.name": "gen_ai.user.message"}),
        # The embedding call's "choice" (a vector) must not become the answer.
        LogRecord(T, embed.span_id, 55, "gen_ai.choice", {"message": {"content": [0.1, 0.2]}}),
        # The chat's choice points at the parent span (seen with streaming).
        LogRecord(T, root.span_id, 190, "gen_ai.choice",
                  {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A protocol."}}),
    ]
    turn = build_turn([root, chat, embed], logs, AttributeMapping())
    assert (turn.question, turn.answer, turn.system_prompt) == ("What is OTLP?", "A protocol.", "You are helpful.")
    assert turn.provider == "openai" and turn.conversation_id == "c-7"
    assert turn.convention == "genai-events"


def test_openinference_reranker_documents_win_over_the_retriever():
    spans = [
        span("0000000000000001", start=0, end=1000, **{"openinference.span.kind": "CHAIN", "session.id": "s"}),
        span("0000000000000002", "0000000000000001", start=10, end=20, **{
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.id": "a", "retrieval.documents.0.document.content": "A",
            "retrieval.documents.1.document.id": "b", "retrieval.documents.1.document.content": "B"}),
        span("0000000000000003", "0000000000000001", start=30, end=40, **{
            "openinference.span.kind": "RERANKER",
            "reranker.output_documents.0.document.id": "b", "reranker.output_documents.0.document.content": "B",
            "reranker.output_documents.0.document.score": 0.8}),
        span("0000000000000004", "0000000000000001", start=50, end=60, **{
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": "Which?",
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "B."}),
    ]
    turn = build_turn(spans, [], AttributeMapping())
    assert [(d.id, d.content, d.score) for d in turn.documents] == [("b", "B", 0.8)]
    assert (turn.question, turn.answer, turn.conversation_id) == ("Which?", "B.", "s")


def test_custom_mapping_for_an_app_with_its_own_attributes():
    mapping = AttributeMapping(question=["app.question"], answer=["app.answer"], conversation_id=["app.thread"],
                               ground_truth=["app.expected"], documents=["app.docs"],
                               labels={"route": "http.route", "tenant": "app.tenant"})
    spans = [
        span("0000000000000001", start=0, end=1000, **{"http.route": "/v1/ask", "app.thread": "t-1",
                                                         "app.tenant": "acme", "app.expected": "42"}),
        span("0000000000000002", "0000000000000001", start=5, end=9,
             **{"app.docs": json.dumps([{"id": "x", "content": "The answer is 42."}])}),
        span("0000000000000003", "0000000000000001", start=10, end=20,
             **{"gen_ai.operation.name": "chat", "app.question": "Meaning?", "app.answer": "42"}),
    ]
    turn = build_turn(spans, [], mapping)
    assert (turn.question, turn.answer, turn.conversation_id, turn.ground_truth) == ("Meaning?", "42", "t-1", "42")
    assert dict(turn.labels) == {"route": "/v1/ask", "tenant": "acme"}
    assert turn.documents[0].content == "The answer is 42."


def test_trace_without_a_chat_call_yields_no_turn():
    spans = [span("0000000000000001", start=0, end=10, **{"http.route": "/health"}),
             span("0000000000000002", "0000000000000001", start=1, end=2,
                  **{"gen_ai.operation.name": "embeddings", "gen_ai.input.messages": "[]"})]
    with pytest.raises(NoTurn) as err:
        build_turn(spans, [], AttributeMapping())
    assert err.value.reason == "no_chat_call"


def test_trace_without_a_conversation_id_falls_back_to_the_trace_id():
    spans = [span("0000000000000001", start=0, end=10, **{
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]),
    })]
    assert build_turn(spans, [], AttributeMapping()).conversation_id == T


async def test_assembler_counts_traces_without_turn():
    from monitor.assembly.assembler import Assembler
    from tests.support.recording import RecordingTelemetry

    class Sink:
        turns: list = []

        def consume_turn(self, turn):
            self.turns.append(turn)

    telemetry = RecordingTelemetry()
    assembler = Assembler(AssemblyConfig(), Sink(), telemetry)
    assembler.consume_spans([span("0000000000000001", start=0, end=10)])
    assembler.flush()
    assert telemetry.value(TRACES_WITHOUT_TURN, reason="no_chat_call") == 1


def test_a_short_retrieval_query_inside_the_question_does_not_replace_it():
    question = "How long do refunds take for annual plans, and who approves them?"
    spans = [
        span("0000000000000001", start=0, end=1000, name="POST /chat"),
        span("0000000000000002", "0000000000000001", start=10, end=20, **{
            "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "refunds",
            "gen_ai.retrieval.documents": json.dumps([{"id": "d", "content": "Refunds take 5 days.", "score": 1}])}),
        span("0000000000000003", "0000000000000001", start=30, end=40, **{
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "5 days."}]}])}),
    ]
    assert build_turn(spans, [], AttributeMapping()).question == question


def test_stuffed_prompt_yields_the_chain_input_and_says_so():
    docs = [{"id": "d1", "content": "Refunds take 5 to 7 business days once approved.", "score": 0.9}]
    stuffed = f"Answer using the context.\nQuestion: How long do refunds take?\nContext: {docs[0]['content']}\nAnswer:"
    spans = [
        span("0000000000000001", start=0, end=1000, name="chain", **{
            "openinference.span.kind": "CHAIN", "input.value": json.dumps({"question": "How long do refunds take?"})}),
        span("0000000000000002", "0000000000000001", start=10, end=20, **{
            "openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.id": "d1",
            "retrieval.documents.0.document.content": docs[0]["content"]}),
        span("0000000000000003", "0000000000000001", start=30, end=40, **{
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": stuffed,
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "5-7 days."}),
    ]
    explanation = Explanation()
    turn = build_turn(spans, [], AttributeMapping(), explanation=explanation)
    assert turn.question == "How long do refunds take?"
    assert any("template" in n for n in explanation.notes)


def test_wrapper_llm_span_is_skipped_and_its_tokens_not_counted_twice():
    spans = [
        span("0000000000000001", start=0, end=1000, name="predict", **{
            "openinference.span.kind": "LLM", "llm.prompt_template.template": "Context: {c}\nQuery: {q}",
            "output.value": "Yes.", "llm.token_count.prompt": 50, "llm.token_count.completion": 2}),
        span("0000000000000002", "0000000000000001", start=10, end=900, name="chat", **{
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Is it on?",
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "Yes.",
            "llm.token_count.prompt": 50, "llm.token_count.completion": 2}),
    ]
    turn = build_turn(spans, [], AttributeMapping())
    assert (turn.question, turn.chat_span_id) == ("Is it on?", "0000000000000002")
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (50, 2)


def test_llm_span_without_content_names_the_switch():
    spans = [span("0000000000000001", start=0, end=10, name="ChatCompletion", **{
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"})]
    with pytest.raises(NoTurn) as err:
        build_turn(spans, [], AttributeMapping())
    assert err.value.reason == "no_message_content"
    assert "OPENINFERENCE_HIDE_INPUTS" in err.value.hint


def test_history_drops_tool_traffic_and_system_prompt_is_not_repeated():
    msgs = [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Refunds?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "search", "arguments": {"q": "refunds"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "[...]"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "5 days."}]},
        {"role": "user", "parts": [{"type": "text", "content": "And monthly plans?"}]},
    ]
    spans = [span("0000000000000001", start=0, end=10, **{
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(msgs),
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "No."}]}]),
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18"})]
    turn = build_turn(spans, [], AttributeMapping())
    assert [(m.role, m.content) for m in turn.history] == [("user", "Refunds?"), ("assistant", "5 days.")]
    assert turn.system_prompt == "Be brief."
    assert (turn.request_model, turn.response_model) == (None, "gpt-4o-mini-2024-07-18")


@pytest.mark.parametrize("value,expected", [
    ("How long?", "How long?"),
    (json.dumps({"question": "Q1", "history": []}), "Q1"),
    (json.dumps({"str_or_query_bundle": {"query_str": "Q2"}}), "Q2"),
    (json.dumps({"args": ["Q3", [], False], "kwargs": {}}), "Q3"),
    (json.dumps({"inputs": {"input": "Q4"}}), "Q4"),
    (json.dumps({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "Q5"}]}), "Q5"),
    (json.dumps({"unrelated": 3}), None),
])
def test_input_text_finds_the_request_in_framework_inputs(value, expected):
    assert input_text(value) == expected


def test_llamaindex_nodes_serialised_as_json_strings_are_documents():
    node = {"node": {"id_": "kb-1", "text": "Refunds take 5 days.", "metadata": {"title": "Refunds"}}, "score": 0.8}
    (doc,) = documents_from_value(json.dumps([json.dumps(node)]))
    assert (doc.id, doc.content, doc.score, doc.title) == ("kb-1", "Refunds take 5 days.", 0.8, "Refunds")


def test_metadata_source_is_not_a_document_id_but_metadata_score_is_a_score():
    (doc,) = documents_from_value(json.dumps([{"page_content": "x", "metadata": {"source": "faq.md", "score": 0.4}}]))
    assert (doc.id, doc.score) == (None, 0.4)


async def test_a_large_trace_is_built_off_the_event_loop():
    import asyncio
    import threading

    from monitor.assembly.assembler import Assembler
    from monitor.telemetry import NullTelemetry

    class Sink:
        def __init__(self) -> None:
            self.turns: list = []
            self.threads: list[str] = []
            self.arrived = asyncio.Event()

        def consume_turn(self, turn) -> None:
            self.turns.append(turn)
            self.threads.append(threading.current_thread().name)
            self.arrived.set()

    chat = SpanRecord(T, "0000000000000002", "", "chat", 3, 10, 20, size=10_000, attributes={
        "gen_ai.operation.name": "chat", "gen_ai.conversation.id": "c",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Big?"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Yes."}]}])})
    sink = Sink()
    assembler = Assembler(AssemblyConfig(offload_bytes=4096), sink, NullTelemetry())
    assembler.consume_spans([chat])
    assert assembler.flush() == 1 and sink.turns == []  # handed to a worker thread
    await asyncio.wait_for(sink.arrived.wait(), 5)
    assert sink.turns[0].question == "Big?"
    assert sink.threads == [threading.current_thread().name]  # handed on from the loop's thread
