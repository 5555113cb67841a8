"""Parsers for the message and document shapes the conventions use. Pure functions.

Each takes an attribute value as decoded from OTLP (a JSON string or a structured list/dict)
and returns model objects, ignoring what it does not understand rather than failing: spans from
the wild are messy, and a partly understood trace is better than none.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import orjson

from monitor.model import Document, Message
from monitor.surrogates import may_hold_surrogates, replace_lone_surrogates

__all__ = [
    "load_json",
    "genai_messages",
    "genai_text",
    "indexed",
    "indexed_messages",
    "indexed_documents",
    "documents_from_value",
    "as_float",
    "as_int",
    "as_str",
    "input_text",
]


def load_json(value: Any) -> Any:
    """A JSON string → Python value; structured values pass through; bad JSON → None."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        s = value.strip()
        if not s or s[0] not in "[{\"":
            return None
        try:
            # Message and document JSON is most of a turn's bytes; orjson parses it in about
            # 40 % of json's time. What orjson refuses and json accepts (NaN, Infinity, lone
            # surrogates) goes to json; the one difference left: an integer past 64 bits comes
            # back as a float (as JavaScript, where most of these payloads are read, has it).
            return orjson.loads(s)
        except (orjson.JSONDecodeError, TypeError):
            pass
        try:
            parsed = json.loads(s)
        except (ValueError, RecursionError):
            return None
        return replace_lone_surrogates(parsed) if may_hold_surrogates(s) else parsed
    return value


def as_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float, bool)):
        return str(value)
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def genai_text(content: Any) -> str | None:
    """Text of a message's content in any of the shapes seen: a string, a list of parts
    (``{"type": "text", "content"|"text": …}``), or OpenAI's ``[{"type":"text","text":…}]``."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        for key in ("content", "text", "value"):
            if isinstance(content.get(key), str):
                return content[key]
        return None
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "input_text", "output_text"):
                t = part.get("content", part.get("text"))
                if isinstance(t, str):
                    texts.append(t)
        return "\n".join(texts) if texts else None
    return None


def genai_messages(value: Any) -> list[Message]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON string or structured).

    Also accepts the chat-completions shape ``[{"role", "content"}]`` that some emitters use."""
    data = load_json(value)
    if isinstance(data, dict):
        data = data.get("messages", [data])
    if not isinstance(data, list):
        return []
    out = []
    for item in data:
        if not isinstance(item, dict):
            continue
        role = as_str(item.get("role")) or "assistant"
        text = genai_text(item["parts"]) if "parts" in item else genai_text(item.get("content"))
        if text is None and isinstance(item.get("message"), dict):  # gen_ai.choice-like
            role = as_str(item["message"].get("role")) or role
            text = genai_text(item["message"].get("content"))
        if text is not None:
            out.append(Message(role, text))
    return out


def indexed(attrs: Mapping[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """Collect flattened ``prefix.N.rest`` keys into ``{N: {rest: value}}``."""
    head = prefix + "."
    cut = len(head)
    out: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(head):
            continue
        idx, _, rest = key[cut:].partition(".")
        if idx.isdigit() and rest:
            out.setdefault(int(idx), {})[rest] = value
    return out


def _oi_content(fields: Mapping[str, Any], content_key: str, contents_key: str) -> str | None:
    text = as_str(fields.get(content_key))
    if text is not None:
        return text
    parts = indexed(fields, contents_key)
    texts = [as_str(p.get("message_content.text")) for _, p in sorted(parts.items())]
    joined = [t for t in texts if t]
    return "\n".join(joined) if joined else None


def indexed_messages(attrs: Mapping[str, Any], prefix: str, role_key: str, content_key: str,
                     contents_key: str | None = None) -> list[Message]:
    """Flattened messages: OpenInference ``llm.input_messages.N.message.role`` or OpenLLMetry
    ``gen_ai.prompt.N.role``."""
    out = []
    for _, fields in sorted(indexed(attrs, prefix).items()):
        text = _oi_content(fields, content_key, contents_key) if contents_key else as_str(fields.get(content_key))
        if text is None:
            continue
        out.append(Message(as_str(fields.get(role_key)) or "user", text))
    return out


def indexed_documents(attrs: Mapping[str, Any], prefix: str) -> list[Document]:
    """OpenInference ``retrieval.documents.N.document.{id,content,score,metadata}``."""
    out = []
    for _, f in sorted(indexed(attrs, prefix).items()):
        title = None
        score = as_float(f.get("document.score"))
        meta = load_json(f.get("document.metadata"))
        if isinstance(meta, dict):
            title = as_str(meta.get("title"))
            if score is None:
                score = next((as_float(meta[k]) for k in _SCORE_KEYS if as_float(meta.get(k)) is not None), None)
        doc = Document(as_str(f.get("document.id")), as_str(f.get("document.content")), score, title)
        if doc.id is not None or doc.content is not None:
            out.append(doc)
    return out


_CONTENT_KEYS = ("content", "text", "page_content", "pageContent", "document", "chunk", "body")  # pageContent: LangChain.js
_ID_KEYS = ("id", "id_", "doc_id", "document_id", "node_id", "chunk_id", "uri")
_SCORE_KEYS = ("score", "relevance_score", "similarity", "similarity_score")


def _first_of(item: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        v = item.get(k)
        if v is not None:
            return v
    return None


def _doc_from_mapping(item: Mapping[str, Any]) -> Document | None:
    # LlamaIndex NodeWithScore: {"node": {"id_", "text", "metadata"}, "score"}.
    node = item.get("node")
    if isinstance(node, dict):
        item = {**node, "score": item.get("score", node.get("score"))}
    # LangChain's serialised Document: {"lc": 1, "kwargs": {"id", "page_content", "metadata"}}.
    kwargs = item.get("kwargs")
    if isinstance(kwargs, dict) and "page_content" in kwargs:
        item = kwargs
    raw_meta = item.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    content = item.get("content")
    if not isinstance(content, str):
        content = next((item[k] for k in _CONTENT_KEYS if isinstance(item.get(k), str)), None)
    doc_id = as_str(_first_of(item, _ID_KEYS))
    if not doc_id:
        # metadata "source" is a file or URL shared by many chunks, not a chunk id.
        doc_id = as_str(_first_of(meta, _ID_KEYS)) if meta else None
    score = as_float(_first_of(item, _SCORE_KEYS))
    if score is None and meta:  # frameworks without a score field keep it in the metadata
        score = as_float(_first_of(meta, _SCORE_KEYS))
    title = as_str(item.get("title")) or (as_str(meta.get("title")) if meta else None)
    if content is None and doc_id is None:
        return None
    return Document(doc_id or None, content, score, title)


def documents_from_value(value: Any) -> list[Document] | None:
    """A list of document-like objects (GenAI ``gen_ai.retrieval.documents``, a traceloop task
    output, a tool result, a custom attribute) → documents; None when the value is not such a list.
    Elements may themselves be JSON strings (OpenLLMetry's LlamaIndex retriever output)."""
    data = load_json(value)
    if isinstance(data, dict):
        for key in ("documents", "docs", "results", "chunks", "context", "nodes", "source_nodes"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list) or not data:
        return None
    items = [load_json(item) if isinstance(item, str) else item for item in data]
    docs = [_doc_from_mapping(item) for item in items if isinstance(item, dict)]
    found = [d for d in docs if d is not None]
    # Every element must look like a document; a list of arbitrary dicts is not a retrieval.
    return found if found and len(found) == len(data) else None


# Keys under which frameworks pass the end user's request into a chain, pipeline or workflow,
# most specific first (LangChain chain inputs, LlamaIndex query bundles, Haystack pipeline inputs,
# traceloop decorator arguments).
_INPUT_KEYS = ("question", "query", "query_str", "user_input", "input", "user_query", "str_or_query_bundle",
               "query_bundle", "prompt", "message", "q", "text", "content")
_INPUT_WRAPPERS = ("inputs", "kwargs", "input_data", "data", "args")


def input_text(value: Any, _depth: int = 0) -> str | None:
    """The user's request inside a chain/workflow input: plain text, or a JSON object holding it
    under a well-known key (possibly one or two wrappers deep), or the first positional argument."""
    if _depth > 3:
        return None
    data = load_json(value) if isinstance(value, (str, bytes, bytearray)) else value
    if data is None:
        # Not JSON: plain text (OpenInference's text/plain input.value).
        text = as_str(value)
        return text.strip() or None if text else None
    if isinstance(data, str):
        return data.strip() or None
    if isinstance(data, dict):
        for key in _INPUT_KEYS:
            v = data.get(key)
            if isinstance(v, str) and v.strip():
                return v
            if isinstance(v, dict):
                inner = input_text(v, _depth + 1)
                if inner:
                    return inner
        for key in _INPUT_WRAPPERS:
            if key in data:
                inner = input_text(data[key], _depth + 1)
                if inner:
                    return inner
        # A message-shaped input ({"messages": [...]}): the last user message.
        msgs = genai_messages(data) if isinstance(data.get("messages"), list) else []
        return next((m.content for m in reversed(msgs) if m.role in ("user", "human")), None)
    if isinstance(data, list) and data:
        if all(isinstance(m, dict) and "role" in m for m in data):
            msgs = genai_messages(data)
            return next((m.content for m in reversed(msgs) if m.role in ("user", "human")), None)
        return input_text(data[0], _depth + 1)
    return None
