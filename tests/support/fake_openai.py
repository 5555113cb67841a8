"""A deterministic OpenAI-compatible HTTP server for tests (aiohttp, 127.0.0.1 only).

Serves the two endpoints a RAG app calls through the real ``openai`` client:

- ``POST /v1/chat/completions`` — plain JSON, or Server-Sent Events when ``stream`` is true
  (a final usage-only chunk when ``stream_options.include_usage`` is true, then ``[DONE]``).
- ``POST /v1/embeddings`` — deterministic vectors derived from the input text, as floats or as
  base64 float32 (the ``openai`` client asks for base64 by default).

The answer is chosen from a scripted mapping: the first key that occurs (case-insensitively) in
the last user message wins, else ``default_answer``. Ids, token counts and vectors depend only on
the request and the request counter, so two runs of the same script see the same bytes.

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

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request)
        messages = body.get("messages") or []
        question = ""
        for message in reversed(messages):
            if message.get("role") == "user":
                question = _message_text(message.get("content"))
                break
        answer = self.answer_for(question)
        if isinstance(answer, FakeError):
            return self._error(answer)
        request_model = str(body.get("model", "gpt-4o-mini"))
        model = RESPONSE_MODELS.get(request_model, request_model)
        prompt_tokens = sum(count_tokens(_message_text(m.get("content"))) for m in messages)
        prompt_tokens += 3 * len(messages)  # per-message overhead, like the real tokenizer
        completion_tokens = count_tokens(answer)
        usage = {
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
        response_id = self._next_id("chatcmpl")
        self.chat_calls.append({
            "response_id": response_id,
            "request_model": request_model,
            "response_model": model,
            "input_tokens": prompt_tokens,
            "output_tokens": completion_tokens,
            "answer": answer,
            "streamed": bool(body.get("stream")),
            "messages": [{"role": m.get("role"), "content": _message_text(m.get("content"))}
                         for m in messages if isinstance(m, dict)],
        })
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, response_id, model, answer, usage, include_usage)
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
                    "message": {"role": "assistant", "content": answer, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
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

        await response.write(chunk({"role": "assistant", "content": "", "refusal": None}, None))
        words = answer.split(" ")
        step = self.stream_chunk_words
        for i in range(0, len(words), step):
            piece = " ".join(words[i : i + step])
            if i + step < len(words):
                piece += " "
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
