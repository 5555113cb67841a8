"""OpenInference (Arize Phoenix): ``openinference.span.kind`` says what a span is; messages,
documents and token counts are flattened into indexed attributes; the raw request and response
are JSON in ``input.value``/``output.value``.

Written by openinference-instrumentation-{openai, langchain, llama-index, haystack,
openai-agents, …}; each framework's spans share these keys.
"""

from __future__ import annotations

from typing import Any, Mapping

from monitor.assembly.conventions.base import (
    CHAT, EMBEDDING, ENTRY, RERANK, RETRIEVAL, TOOL, LlmCall, Retrieval, TraceView, attr_str)
from monitor.assembly.messages import (
    as_int, as_str, documents_from_value, genai_messages, genai_text, indexed_documents, indexed_messages,
    input_text, load_json)
from monitor.model import AttributeSelection, Document, Message, SpanRecord

__all__ = ["CONVENTION", "OpenInference"]

SPAN_KIND = "openinference.span.kind"
INPUT_MESSAGES = "llm.input_messages"  # llm.input_messages.N.message.role/content
OUTPUT_MESSAGES = "llm.output_messages"
MESSAGE_ROLE = "message.role"
MESSAGE_CONTENT = "message.content"
MESSAGE_CONTENTS = "message.contents"  # .M.message_content.type/text
MODEL_NAME = "llm.model_name"
INVOCATION_PARAMETERS = "llm.invocation_parameters"  # JSON of the request, incl. "model"
PROVIDER = "llm.provider"
SYSTEM = "llm.system"
TOKEN_PROMPT = "llm.token_count.prompt"
TOKEN_COMPLETION = "llm.token_count.completion"
PROMPT_TEMPLATE = "llm.prompt_template.template"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
RETRIEVAL_DOCUMENTS = "retrieval.documents"  # retrieval.documents.N.document.id/content/score
RERANKER_OUTPUT_DOCUMENTS = "reranker.output_documents"
RERANKER_QUERY = "reranker.query"
SESSION_ID = "session.id"
METADATA = "metadata"
OUTPUT_MIME_TYPE = "output.mime_type"
# The app's metadata, flattened (openinference-vercel copies ai.telemetry.metadata.* here) or JSON:
# a session id under the names apps give it, when no session.id was set.
_SESSION_NAMES = ("sessionId", "session_id", "conversationId", "conversation_id", "threadId", "thread_id",
                  "chatId", "chat_id")
METADATA_SESSION_KEYS = tuple(f"{METADATA}.{k}" for k in _SESSION_NAMES)

_ROLES = {"LLM": CHAT, "EMBEDDING": EMBEDDING, "RETRIEVER": RETRIEVAL, "RERANKER": RERANK, "TOOL": TOOL,
          "CHAIN": ENTRY, "AGENT": ENTRY}
_HINT = ("OpenInference: message content is hidden; unset OPENINFERENCE_HIDE_INPUTS, "
         "OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES and "
         "OPENINFERENCE_HIDE_OUTPUT_MESSAGES (or pass TraceConfig(hide_inputs=False, hide_outputs=False))")


def _response(a: Mapping[str, Any]) -> dict[str, Any] | None:
    """The provider's response, when the instrumentation kept it as JSON in ``output.value``:
    OpenAI's own response object, or LangChain's LLMResult (``llm_output`` / the generation's
    ``response_metadata``), normalised to ``{"id", "model"}`` plus what OpenAI returned."""
    value = a.get(OUTPUT_VALUE)
    if not isinstance(value, str) or '"id"' not in value:
        return None
    resp = load_json(value)
    if not isinstance(resp, dict):
        return None
    if isinstance(resp.get("generations"), list):
        meta: dict[str, Any] = {}
        message_id = None
        llm_output = resp.get("llm_output", resp.get("llmOutput"))  # Python / LangChain.js
        try:
            message = resp["generations"][-1][-1]["message"]
            kwargs = message.get("kwargs", message.get("data", {}))
            meta = kwargs.get("response_metadata") or {}
            # LangChain.js keeps the provider's response id as the message id; Python's message
            # id is a LangChain run id (lc_run--…, run-…), never the response's.
            message_id = as_str(kwargs.get("id"))
        except (IndexError, KeyError, TypeError, AttributeError):
            meta = {}
        merged = {**(llm_output if isinstance(llm_output, dict) else {}), **meta}
        if message_id and message_id.startswith(("lc_run", "run-")):
            message_id = None
        return {"id": merged.get("id") or message_id, "model": merged.get("model_name") or merged.get("model"),
                "provider": merged.get("model_provider")}
    return resp


def _requested_model(a: Mapping[str, Any]) -> str | None:
    params = load_json(a.get(INVOCATION_PARAMETERS))
    if not isinstance(params, dict):
        return None
    # The OpenAI Agents instrumentation stores the whole Responses API *response* here; its
    # "model" is the one that answered, not the one asked for.
    if "id" in params and ("output" in params or "created_at" in params or "object" in params):
        return None
    return as_str(params.get("model")) or as_str(params.get("model_name"))


def _value_messages(a: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    """Last resort: the raw chat request in ``input.value`` and its response in ``output.value``."""
    req = load_json(a.get(INPUT_VALUE))
    if not (isinstance(req, dict) and isinstance(req.get("messages"), list)):
        return [], []
    inputs = genai_messages(req["messages"])
    resp = _response(a)
    outputs: list[Message] = []
    if resp and isinstance(resp.get("choices"), list) and resp["choices"]:
        choice = resp["choices"][-1]
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            text = genai_text(choice["message"].get("content"))
            if text:
                outputs = [Message("assistant", text)]
    return inputs, outputs


def _langchain_provider(a: Mapping[str, Any], resp: Mapping[str, Any] | None) -> str | None:
    """LangChain.js's LLM spans name no provider attribute: its response metadata
    (``model_provider``) and run metadata (``ls_provider``) do."""
    found = as_str(resp.get("provider")) if resp else None
    if found:
        return found
    meta = load_json(a.get(METADATA)) if METADATA in a else None
    return as_str(meta.get("ls_provider")) if isinstance(meta, dict) else None


def _text_output(a: Mapping[str, Any]) -> list[Message]:
    """The answer as plain text in ``output.value`` (``output.mime_type=text/plain``): what
    openinference-vercel writes for a text answer, with no ``llm.output_messages``."""
    value = a.get(OUTPUT_VALUE)
    if not isinstance(value, str) or not value.strip():
        return []
    mime = a.get(OUTPUT_MIME_TYPE)
    if mime == "text/plain" or (mime is None and load_json(value) is None):
        return [Message("assistant", value)]
    return []


class OpenInference:
    name = "openinference"
    role_keys = frozenset({SPAN_KIND})
    reads = AttributeSelection(
        frozenset({SPAN_KIND, MODEL_NAME, INVOCATION_PARAMETERS, PROVIDER, SYSTEM, TOKEN_PROMPT, TOKEN_COMPLETION,
                   PROMPT_TEMPLATE, INPUT_VALUE, OUTPUT_VALUE, OUTPUT_MIME_TYPE, RERANKER_QUERY, SESSION_ID, METADATA,
                   *METADATA_SESSION_KEYS}),
        tuple(p + "." for p in (INPUT_MESSAGES, OUTPUT_MESSAGES, RETRIEVAL_DOCUMENTS, RERANKER_OUTPUT_DOCUMENTS)))

    def role(self, span: SpanRecord) -> str | None:
        kind = span.attributes.get(SPAN_KIND)
        return _ROLES.get(kind.upper()) if isinstance(kind, str) else None

    def llm_call(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        a = span.attributes
        if SPAN_KIND not in a:
            return None
        inputs = indexed_messages(a, INPUT_MESSAGES, MESSAGE_ROLE, MESSAGE_CONTENT, MESSAGE_CONTENTS)
        outputs = indexed_messages(a, OUTPUT_MESSAGES, MESSAGE_ROLE, MESSAGE_CONTENT, MESSAGE_CONTENTS)
        if not inputs:
            inputs, from_value = _value_messages(a)
            outputs = outputs or from_value
        if not outputs and inputs:
            outputs = _text_output(a)
        requested = _requested_model(a)
        resp = _response(a)
        return LlmCall(
            self.name,
            inputs,
            [Message(m.role if m.role != "user" else "assistant", m.content) for m in outputs],
            request_model=requested,
            # llm.model_name is what the instrumentation saw last: the response's model when it
            # has one (openai), the request's otherwise; only trust it as the response model
            # when it differs from what was asked or a response object confirms it.
            response_model=(as_str(resp.get("model")) if resp else None) or _response_model(a, requested),
            provider=attr_str(a, PROVIDER) or attr_str(a, SYSTEM) or _langchain_provider(a, resp),
            response_id=as_str(resp.get("id")) if resp else None,
            input_tokens=as_int(a.get(TOKEN_PROMPT)),
            output_tokens=as_int(a.get(TOKEN_COMPLETION)),
            # A completion-style wrapper (LlamaIndex ``predict``): a template, no messages.
            template_only=not inputs and (PROMPT_TEMPLATE in a),
        )

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        a = span.attributes
        kind = self.role(span)
        if kind == RERANK:
            docs = indexed_documents(a, RERANKER_OUTPUT_DOCUMENTS)
            return Retrieval(docs, attr_str(a, RERANKER_QUERY)) if docs else None
        if kind == RETRIEVAL:
            docs = indexed_documents(a, RETRIEVAL_DOCUMENTS)
            docs = _with_output_ids(docs, a.get(OUTPUT_VALUE))
            if not docs:
                docs = documents_from_value(a.get(OUTPUT_VALUE)) or []
            return Retrieval(docs, input_text(a.get(INPUT_VALUE))) if docs else None
        if kind == TOOL:
            tool_docs = documents_from_value(a.get(OUTPUT_VALUE))
            return Retrieval(tool_docs, input_text(a.get(INPUT_VALUE))) if tool_docs else None
        return None

    def user_input(self, span: SpanRecord) -> str | None:
        if self.role(span) != ENTRY:
            return None
        return input_text(span.attributes.get(INPUT_VALUE))

    def conversation_id(self, span: SpanRecord) -> str | None:
        a = span.attributes
        found = attr_str(a, SESSION_ID) or next((v for k in METADATA_SESSION_KEYS if (v := attr_str(a, k))), None)
        if found or METADATA not in a:
            return found
        # The span's metadata as one JSON object (LangChain and the Python instrumentations).
        meta = load_json(a.get(METADATA))
        if isinstance(meta, dict):
            return next((v for k in _SESSION_NAMES if isinstance(v := meta.get(k), str) and v), None)
        return None

    def content_hint(self, span: SpanRecord) -> str | None:
        return _HINT if self.role(span) == CHAT else None

    def diagnose(self, span: SpanRecord) -> str | None:
        a = span.attributes
        if SPAN_KIND not in a and (MODEL_NAME in a or TOKEN_PROMPT in a):
            return ("an OpenInference LLM span without openinference.span.kind (a span processor that drops "
                    "it, or an exporter that renames attributes?)")
        return None


def _response_model(a: Mapping[str, Any], requested: str | None) -> str | None:
    # llm.model_name is the response's model where the instrumentation saw one (openai) and the
    # requested name elsewhere: equal to the request, it says nothing about the response.
    name = attr_str(a, MODEL_NAME)
    return None if name is None or name == requested else name


def _with_output_ids(docs: list[Document], output_value: Any) -> list[Document]:
    """LangChain's retriever spans carry content but no ``document.id``; the ids are in the
    serialised output (``{"documents": [{"id", "page_content", …}]}``)."""
    if not docs or all(d.id for d in docs):
        return docs
    from_output = documents_from_value(output_value)
    if not from_output or len(from_output) != len(docs):
        return docs
    return [Document(d.id or o.id, d.content or o.content, d.score if d.score is not None else o.score,
                     d.title or o.title) for d, o in zip(docs, from_output)]


CONVENTION = OpenInference()
