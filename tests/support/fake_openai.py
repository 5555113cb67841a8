"""A deterministic OpenAI-compatible HTTP server for tests (aiohttp, 127.0.0.1 only).

Serves the endpoints a RAG app calls through the real ``openai`` client:

- ``POST /v1/chat/completions`` — plain JSON, or Server-Sent Events when ``stream`` is true
  (a final usage-only chunk when ``stream_options.include_usage`` is true, then ``[DONE]``).
- ``POST /v1/responses`` — the Responses API (what the OpenAI Agents SDK calls by default),
  plain JSON or its typed SSE events (``response.created`` … ``response.completed``).
- ``POST /v1/embeddings`` — deterministic vectors derived from the input text, as floats or as
  base64 float32 (the ``openai`` client asks for base64 by default).

The answer is chosen from a scripted mapping: the first key that occurs (case-insensitively) in
the last user message wins, else ``default_answer``. Ids, token counts and vectors depend only on
the request and the request counter, so two runs of the same script see the same bytes.

Tool calls (both APIs, plain and streamed): when the request offers ``tools`` (and
``tool_choice`` is not ``"none"``) and no tool result follows the last user message, the server
answers with ONE call to the first tool, ``finish_reason="tool_calls"`` (chat) / a
``function_call`` output item (responses). Its arguments are a JSON object whose string
parameter (the first required string property, else ``query``, else the first property) is the
last user message text. Once a tool result (``role=tool`` / ``function_call_output``) follows the
last user message, the scripted answer is given as usual. Every model call — tool-call turns too
(``answer`` None, ``tool_calls`` set) — is recorded in ``chat_calls``.

Usage::

    server = FakeOpenAI({"refund": "Refunds take 5 days."})
    base_url = await server.start()          # "http://127.0.0.1:PORT/v1"
    ...
    await server.close()
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from aiohttp import web

__all__ = ["FakeOpenAI", "FakeError", "ReceivedRequest", "count_tokens", "run_in_thread"]

# Request model -> the dated snapshot name a real deployment reports back.
RESPONSE_MODELS: dict[str, str] = {
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
}
DEFAULT_ANSWER = "I could not find that in the documentation."
CREATED = 1_735_689_600  # fixed "created" timestamp (2025-01-01T00:00:00Z)
SYSTEM_FINGERPRINT = "fp_fake0001"


@dataclass(frozen=True)
class FakeError:
    """A scripted failure: answer a matching question with this HTTP status."""

    status: int = 500
    message: str = "scripted failure"
    type: str = "server_error"


@dataclass
class ReceivedRequest:
    path: str
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


def count_tokens(text: str) -> int:
    """A stand-in tokenizer: whitespace-separated words (deterministic, good enough)."""
    return len(text.split())


def _message_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        )
    return str(content)


def _vector(text: str, dimensions: int) -> list[float]:
    """Deterministic unit-ish vector from a hash of the text."""
    out: list[float] = []
    counter = 0
    while len(out) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        for i in range(0, len(digest), 2):
            if len(out) == dimensions:
                break
            out.append(round((int.from_bytes(digest[i : i + 2], "big") / 65535.0) * 2 - 1, 6))
        counter += 1
    return out


def _pieces(text: str, words_per_piece: int) -> list[str]:
    """Split ``text`` into stream deltas of a few words each (joined they give ``text`` back)."""
    words = text.split(" ")
    out = []
    for i in range(0, len(words), words_per_piece):
        piece = " ".join(words[i : i + words_per_piece])
        if i + words_per_piece < len(words):
            piece += " "
        out.append(piece)
    return out


def _tool_signature(tool: Any) -> tuple[str, dict[str, Any]]:
    """(name, JSON-schema parameters) of a chat-completions or responses-API tool definition."""
    if not isinstance(tool, dict):
        return "", {}
    spec = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    parameters = spec.get("parameters")
    return str(spec.get("name") or ""), parameters if isinstance(parameters, dict) else {}


def _query_parameter(parameters: dict[str, Any]) -> str:
    """The parameter that gets the user's text: first required string property, else ``query``."""
    properties = parameters.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    for name in parameters.get("required") or []:
        if isinstance(properties.get(name), dict) and properties[name].get("type") == "string":
            return str(name)
    if "query" in properties or not properties:
        return "query"
    return str(next(iter(properties)))


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Responses API ``input`` as a list of items (a bare string is one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [item for item in (raw or []) if isinstance(item, dict)]


def _item_as_message(item: dict[str, Any]) -> dict[str, Any]:
    """A Responses API input item as ``{role, content}`` for the call log."""
    kind = item.get("type") or "message"
    if kind == "function_call":
        return {"role": "assistant", "content": ""}
    if kind == "function_call_output":
        output = item.get("output")
        return {"role": "tool", "content": output if isinstance(output, str) else _message_text(output)}
    if kind == "message":
        return {"role": item.get("role"), "content": _message_text(item.get("content"))}
    return {"role": kind, "content": ""}


class FakeOpenAI:
    """Deterministic OpenAI-compatible server. Bind is always 127.0.0.1."""

    def __init__(
        self,
        answers: Mapping[str, str | FakeError] | None = None,
        *,
        default_answer: str = DEFAULT_ANSWER,
        embedding_dimensions: int = 8,
        stream_chunk_words: int = 3,
        port: int = 0,
    ) -> None:
        self.answers: dict[str, str | FakeError] = dict(answers or {})
        self.default_answer = default_answer
        self.embedding_dimensions = embedding_dimensions
        self.stream_chunk_words = max(1, stream_chunk_words)
        self.requests: list[ReceivedRequest] = []
        # Every chat completion answered, in order: what the app's ground truth is built from.
        self.chat_calls: list[dict[str, Any]] = []
        self._port = port
        self._counter = 0
        self._runner: web.AppRunner | None = None
        self.base_url: str | None = None

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> str:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        # Test-only: the apps under test read back what the "LLM" really answered per call.
        app.router.add_get("/_test/chat-calls", self._calls)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        sockets = site._server.sockets if site._server else []  # type: ignore[union-attr]
        port = sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> "FakeOpenAI":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- scripting

    def answer_for(self, question: str) -> str | FakeError:
        lowered = question.lower()
        for key, answer in self.answers.items():
            if key.lower() in lowered:
                return answer
        return self.default_answer

    def _next_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-fake{self._counter:06d}"

    # ---------------------------------------------------------------- handlers

    async def _read(self, request: web.Request) -> dict[str, Any]:
        body = await request.json()
        self.requests.append(ReceivedRequest(request.path, body, dict(request.headers)))
        return body

    @staticmethod
    def _error(err: FakeError) -> web.Response:
        payload = {"error": {"message": err.message, "type": err.type, "param": None, "code": None}}
        return web.json_response(payload, status=err.status)

    async def _models(self, request: web.Request) -> web.Response:
        data = [
            {"id": m, "object": "model", "created": CREATED, "owned_by": "fake"}
            for m in RESPONSE_MODELS
        ]
        return web.json_response({"object": "list", "data": data})

    async def _calls(self, request: web.Request) -> web.Response:
        return web.json_response(self.chat_calls)

    @staticmethod
    def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _tool_call(self, tools: Any, tool_choice: Any, question: str, tool_result_in: bool) -> dict[str, str] | None:
        """The one tool call to make now, or None (answer with text)."""
        if tool_result_in or not isinstance(tools, list) or not tools or tool_choice == "none":
            return None
        name, parameters = _tool_signature(tools[0])
        if not name:
            return None
        return {"id": self._next_id("call"), "name": name,
                "arguments": json.dumps({_query_parameter(parameters): question}, ensure_ascii=False)}

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request)
        messages = body.get("messages") or []
        question = ""
        last_user = -1
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if isinstance(message, dict) and message.get("role") == "user":
                question = _message_text(message.get("content"))
                last_user = index
                break
        tool_result_in = any(isinstance(m, dict) and m.get("role") == "tool" for m in messages[last_user + 1:])
        tool_call = self._tool_call(body.get("tools"), body.get("tool_choice"), question, tool_result_in)
        answer: str | FakeError = "" if tool_call else self.answer_for(question)
        if isinstance(answer, FakeError):
            return self._error(answer)
        request_model = str(body.get("model", "gpt-4o-mini"))
        model = RESPONSE_MODELS.get(request_model, request_model)
        prompt_tokens = sum(count_tokens(_message_text(m.get("content"))) for m in messages)
        prompt_tokens += 3 * len(messages)  # per-message overhead, like the real tokenizer
        if tool_call:
            completion_tokens = count_tokens(f"{tool_call['name']} {tool_call['arguments']}")
        else:
            completion_tokens = count_tokens(answer)
        usage = self._usage(prompt_tokens, completion_tokens)
        response_id = self._next_id("chatcmpl")
        self.chat_calls.append({
            "response_id": response_id,
            "request_model": request_model,
            "response_model": model,
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "answer": None if tool_call else answer,
            "streamed": bool(body.get("stream")),
            "messages": [{"role": m.get("role"), "content": _message_text(m.get("content"))}
                         for m in messages if isinstance(m, dict)],
            "api": "chat.completions",
            "finish_reason": "tool_calls" if tool_call else "stop",
            "tool_calls": [tool_call] if tool_call else [],
        })
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, response_id, model, answer, usage, include_usage, tool_call)
        if tool_call:
            message: dict[str, Any] = {
                "role": "assistant", "content": None, "refusal": None,
                "tool_calls": [{"id": tool_call["id"], "type": "function",
                                "function": {"name": tool_call["name"], "arguments": tool_call["arguments"]}}],
            }
        else:
            message = {"role": "assistant", "content": answer, "refusal": None}
        payload = {
            "id": response_id,
            "object": "chat.completion",
            "created": CREATED,
            "model": model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "service_tier": "default",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if tool_call else "stop",
                }
            ],
            "usage": usage,
        }
        return web.json_response(payload, headers={"x-request-id": f"req_{response_id}"})

    async def _stream(
        self,
        request: web.Request,
        response_id: str,
        model: str,
        answer: str,
        usage: dict[str, Any],
        include_usage: bool,
        tool_call: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "x-request-id": f"req_{response_id}",
            }
        )
        await response.prepare(request)

        def chunk(delta: dict[str, Any], finish: str | None, with_choice: bool = True) -> bytes:
            data: dict[str, Any] = {
                "id": response_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "system_fingerprint": SYSTEM_FINGERPRINT,
                "service_tier": "default",
                "choices": (
                    [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
                    if with_choice
                    else []
                ),
            }
            if include_usage:
                data["usage"] = None
            return f"data: {json.dumps(data)}\n\n".encode()

        if tool_call:
            await response.write(chunk({
                "role": "assistant", "content": None, "refusal": None,
                "tool_calls": [{"index": 0, "id": tool_call["id"], "type": "function",
                                "function": {"name": tool_call["name"], "arguments": ""}}],
            }, None))
            for piece in _pieces(tool_call["arguments"], self.stream_chunk_words):
                await response.write(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None))
            await response.write(chunk({}, "tool_calls"))
        else:
            await response.write(chunk({"role": "assistant", "content": "", "refusal": None}, None))
            for piece in _pieces(answer, self.stream_chunk_words):
                await response.write(chunk({"content": piece}, None))
            await response.write(chunk({}, "stop"))
        if include_usage:
            final = {
                "id": response_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "system_fingerprint": SYSTEM_FINGERPRINT,
                "service_tier": "default",
                "choices": [],
                "usage": usage,
            }
            await response.write(f"data: {json.dumps(final)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/responses``: the same scripting as chat completions, Responses API shapes."""
        body = await self._read(request)
        items = _input_items(body)
        question = ""
        last_user = -1
        for index in range(len(items) - 1, -1, -1):
            if (items[index].get("type") or "message") == "message" and items[index].get("role") == "user":
                question = _message_text(items[index].get("content"))
                last_user = index
                break
        tool_result_in = any(i.get("type") == "function_call_output" for i in items[last_user + 1:])
        tool_call = self._tool_call(body.get("tools"), body.get("tool_choice"), question, tool_result_in)
        answer: str | FakeError = "" if tool_call else self.answer_for(question)
        if isinstance(answer, FakeError):
            return self._error(answer)
        request_model = str(body.get("model", "gpt-4o-mini"))
        model = RESPONSE_MODELS.get(request_model, request_model)
        messages = [_item_as_message(i) for i in items]
        instructions = body.get("instructions")
        if isinstance(instructions, str) and instructions:
            messages.insert(0, {"role": "system", "content": instructions})
        input_tokens = sum(count_tokens(m["content"]) for m in messages) + 3 * len(messages)
        if tool_call:
            output_tokens = count_tokens(f"{tool_call['name']} {tool_call['arguments']}")
        else:
            output_tokens = count_tokens(answer)
        response_id = self._next_id("resp")
        if tool_call:
            item: dict[str, Any] = {"type": "function_call", "id": self._next_id("fc"), "call_id": tool_call["id"],
                                    "name": tool_call["name"], "arguments": tool_call["arguments"],
                                    "status": "completed"}
        else:
            item = {"type": "message", "id": self._next_id("msg"), "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": answer, "annotations": [], "logprobs": []}]}
        self.chat_calls.append({
            "response_id": response_id,
            "request_model": request_model,
            "response_model": model,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "answer": None if tool_call else answer,
            "streamed": bool(body.get("stream")),
            "messages": messages,
            "api": "responses",
            "finish_reason": "tool_calls" if tool_call else "stop",
            "tool_calls": [tool_call] if tool_call else [],
        })
        response: dict[str, Any] = {
            "id": response_id,
            "object": "response",
            "created_at": CREATED,
            "status": "completed",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": instructions,
            "max_output_tokens": body.get("max_output_tokens"),
            "model": model,
            "output": [item],
            "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "store": bool(body.get("store", True)),
            "temperature": body.get("temperature", 1.0),
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input_tokens + output_tokens,
            },
            "user": None,
            "metadata": body.get("metadata") or {},
        }
        headers = {"x-request-id": f"req_{response_id}"}
        if not body.get("stream"):
            return web.json_response(response, headers=headers)
        return await self._stream_response(request, response, item, headers)

    async def _stream_response(self, request: web.Request, response: dict[str, Any], item: dict[str, Any],
                               headers: dict[str, str]) -> web.StreamResponse:
        """The Responses API event stream for one output item."""
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                             **headers})
        await stream.prepare(request)
        sequence = 0

        async def event(kind: str, **data: Any) -> None:
            nonlocal sequence
            payload = {"type": kind, "sequence_number": sequence, **data}
            sequence += 1
            await stream.write(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())

        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        await event("response.created", response=pending)
        await event("response.in_progress", response=pending)
        common = {"item_id": item["id"], "output_index": 0}
        if item["type"] == "function_call":
            await event("response.output_item.added", output_index=0,
                        item={**item, "arguments": "", "status": "in_progress"})
            for piece in _pieces(item["arguments"], self.stream_chunk_words):
                await event("response.function_call_arguments.delta", **common, delta=piece)
            await event("response.function_call_arguments.done", **common, name=item["name"],
                        arguments=item["arguments"])
        else:
            text = item["content"][0]["text"]
            await event("response.output_item.added", output_index=0,
                        item={**item, "status": "in_progress", "content": []})
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            await event("response.content_part.added", **common, content_index=0, part=empty)
            for piece in _pieces(text, self.stream_chunk_words):
                await event("response.output_text.delta", **common, content_index=0, delta=piece, logprobs=[])
            await event("response.output_text.done", **common, content_index=0, text=text, logprobs=[])
            await event("response.content_part.done", **common, content_index=0, part=item["content"][0])
        await event("response.output_item.done", output_index=0, item=item)
        await event("response.completed", response=response)
        await stream.write_eof()
        return stream

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await self._read(request)
        inputs = body.get("input")
        if isinstance(inputs, str):
            texts = [inputs]
        elif isinstance(inputs, list) and all(isinstance(x, str) for x in inputs):
            texts = list(inputs)
        else:  # token arrays: hash their repr
            texts = [json.dumps(x) for x in (inputs if isinstance(inputs, list) else [inputs])]
        dimensions = int(body.get("dimensions") or self.embedding_dimensions)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = _vector(text, dimensions)
            embedding: Any = (
                base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                if as_base64
                else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(count_tokens(t) for t in texts)
        payload = {
            "object": "list",
            "data": data,
            "model": str(body.get("model", "text-embedding-3-small")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return web.json_response(payload)


def run_in_thread(server: FakeOpenAI) -> tuple[str, threading.Event]:
    """Run ``server`` on its own event loop in a daemon thread; returns (base_url, stop event).

    For synchronous callers (scripts, sync tests). Set the event to stop the server.
    """
    started = threading.Event()
    stop = threading.Event()
    holder: dict[str, Any] = {}

    def target() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)

        async def main() -> None:
            try:
                holder["url"] = await server.start()
            except BaseException as exc:  # surfaced to the caller below
                holder["error"] = exc
                started.set()
                return
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)
            await server.close()

        loop.run_until_complete(main())
        loop.close()

    threading.Thread(target=target, name="fake-openai", daemon=True).start()
    started.wait(10)
    if "error" in holder:
        raise holder["error"]
    if "url" not in holder:
        raise RuntimeError("fake OpenAI server did not start")
    return holder["url"], stop
