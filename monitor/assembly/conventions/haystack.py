"""Haystack's own OpenTelemetry tracer (``haystack.tracing``): one ``haystack.pipeline.run``
span per pipeline run and one ``haystack.component.run`` span per component, with the
component's inputs and outputs as JSON in ``haystack.component.input``/``.output`` (only with
content tracing on). No GenAI keys: what a component is comes from its type name, the messages
from its ``messages``/``replies`` (serialised ``ChatMessage``s), the documents from its
``documents`` output.
"""

from __future__ import annotations

from typing import Any, Mapping

from monitor.assembly.conventions.base import (
    CHAT, EMBEDDING, ENTRY, RERANK, RETRIEVAL, LlmCall, Retrieval, TraceView)
from monitor.assembly.messages import as_int, as_str, documents_from_value, genai_text, input_text, load_json
from monitor.model import AttributeSelection, Message, SpanRecord

__all__ = ["CONVENTION", "Haystack"]

COMPONENT_TYPE = "haystack.component.type"
COMPONENT_INPUT = "haystack.component.input"
COMPONENT_OUTPUT = "haystack.component.output"
PIPELINE_INPUT = "haystack.pipeline.input_data"

# Component type name → provider, for the generators Haystack and its integrations ship.
_PROVIDERS = (("AzureOpenAI", "azure.ai.openai"), ("OpenAI", "openai"), ("Anthropic", "anthropic"),
              ("Ollama", "ollama"), ("HuggingFace", "huggingface"), ("GoogleGenAI", "gcp.gen_ai"),
              ("Gemini", "gcp.gemini"), ("VertexAI", "gcp.vertex_ai"), ("Cohere", "cohere"),
              ("Mistral", "mistral_ai"), ("AmazonBedrock", "aws.bedrock"), ("Groq", "groq"))
_HINT = ("Haystack tracer: content tracing is off; set HAYSTACK_CONTENT_TRACING_ENABLED=true "
         "(or tracing.tracer.is_content_tracing_enabled = True)")


def _component_type(span: SpanRecord) -> str:
    t = span.attributes.get(COMPONENT_TYPE)
    return t if isinstance(t, str) else ""


def _messages(value: Any) -> list[Message]:
    """Serialised ChatMessages (``role``/``content`` parts; ``_role``/``_content`` before 2.9)."""
    out = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str):  # a plain Generator's string replies
            out.append(Message("assistant", item))
            continue
        if not isinstance(item, dict):
            continue
        role = as_str(item.get("role", item.get("_role"))) or "user"
        text = genai_text(item.get("content", item.get("_content")))
        if text is not None:
            out.append(Message(role.lower(), text))
    return out


def _reply_meta(output: Any) -> Mapping[str, Any]:
    if not isinstance(output, dict):
        return {}
    replies = output.get("replies")
    if isinstance(replies, list) and replies and isinstance(replies[-1], dict):
        meta = replies[-1].get("meta", replies[-1].get("_meta"))
        if isinstance(meta, dict):
            return meta
    metas = output.get("meta")  # plain Generators: a parallel list of meta dicts
    if isinstance(metas, list) and metas and isinstance(metas[-1], dict):
        return metas[-1]
    return {}


class Haystack:
    name = "haystack"
    role_keys = frozenset({COMPONENT_TYPE, PIPELINE_INPUT})
    reads = AttributeSelection(frozenset({COMPONENT_TYPE, COMPONENT_INPUT, COMPONENT_OUTPUT, PIPELINE_INPUT}))

    def role(self, span: SpanRecord) -> str | None:
        a = span.attributes
        if PIPELINE_INPUT in a:
            return ENTRY
        t = _component_type(span)
        if not t:
            return None
        if t.endswith("Generator"):
            return CHAT
        if "Embedder" in t:
            return EMBEDDING
        if "Ranker" in t:
            return RERANK
        if "Retriever" in t or t.endswith("WebSearch"):
            return RETRIEVAL
        return None

    def llm_call(self, span: SpanRecord, trace: TraceView) -> LlmCall | None:
        t = _component_type(span)
        if not t.endswith("Generator"):
            return None
        inp = load_json(span.attributes.get(COMPONENT_INPUT))
        out = load_json(span.attributes.get(COMPONENT_OUTPUT))
        inputs = _messages(inp.get("messages")) if isinstance(inp, dict) else []
        if not inputs and isinstance(inp, dict) and isinstance(inp.get("prompt"), str):
            inputs = [Message("user", inp["prompt"])]
        if isinstance(inp, dict) and isinstance(inp.get("system_prompt"), str):
            inputs.insert(0, Message("system", inp["system_prompt"]))
        outputs = [Message("assistant" if m.role == "user" else m.role, m.content)
                   for m in _messages(out.get("replies") if isinstance(out, dict) else None)]
        meta = _reply_meta(out)
        raw_usage = meta.get("usage")
        usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        return LlmCall(
            self.name, inputs, outputs,
            response_model=as_str(meta.get("model")),
            provider=next((p for prefix, p in _PROVIDERS if t.startswith(prefix)), None),
            response_id=as_str(meta.get("id")),
            input_tokens=as_int(usage.get("prompt_tokens", usage.get("input_tokens"))),
            output_tokens=as_int(usage.get("completion_tokens", usage.get("output_tokens"))),
        )

    def retrieval(self, span: SpanRecord) -> Retrieval | None:
        if self.role(span) not in (RETRIEVAL, RERANK):
            return None
        docs = documents_from_value(span.attributes.get(COMPONENT_OUTPUT))
        inp = load_json(span.attributes.get(COMPONENT_INPUT))
        query = as_str(inp.get("query")) if isinstance(inp, dict) else None
        return Retrieval(docs, query) if docs else None

    def user_input(self, span: SpanRecord) -> str | None:
        data = load_json(span.attributes.get(PIPELINE_INPUT))
        if not isinstance(data, dict):
            return None
        # Pipeline inputs are keyed by component: the prompt builder's "question" names the
        # user's request better than a retriever's (possibly rewritten) "query".
        per_component = [v for v in data.values() if isinstance(v, dict)]
        for key in ("question", "query", "user_input", "input"):
            for inputs in per_component:
                if isinstance(inputs.get(key), str) and inputs[key].strip():
                    return str(inputs[key])
        return input_text(data)

    def conversation_id(self, span: SpanRecord) -> str | None:
        return None

    def content_hint(self, span: SpanRecord) -> str | None:
        return _HINT if _component_type(span).endswith("Generator") else None

    def diagnose(self, span: SpanRecord) -> str | None:
        return None


CONVENTION = Haystack()
