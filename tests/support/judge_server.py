"""A scriptable OpenAI-compatible ``/v1/chat/completions`` server for tests.

The server binds 127.0.0.1 on an ephemeral port and answers each request with the next scripted
behaviour (or the default one). It records every request body, its arrival time and the highest
number of requests in flight at once, so tests can check budgets and concurrency at the server
side, where they matter.

    async with JudgeServer() as server:
        server.script(reply_json({"score": 4}), rate_limited(retry_after=0.1))
        ...  # point the client at server.base_url
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from aiohttp import web

__all__ = [
    "Behaviour",
    "RecordedRequest",
    "JudgeServer",
    "reply",
    "reply_json",
    "schema_reply",
    "status",
    "rate_limited",
    "server_error",
    "content_filtered",
    "reject_response_format",
    "hang",
    "close_connection",
    "unused_base_url",
]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    index: int
    path: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    arrived_at: float


Behaviour = Callable[["JudgeServer", web.Request, RecordedRequest], Awaitable[web.StreamResponse]]


def _completion(content: str | None, prompt_tokens: int, completion_tokens: int,
                model: str, refusal: str | None = None, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{
            "index": 0,
            "finish_reason": finish_reason,
            "message": {"role": "assistant", "content": content, "refusal": refusal},
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def reply(content: str | None, *, prompt_tokens: int = 20, completion_tokens: int = 5,
          refusal: str | None = None, usage: bool = True, finish_reason: str = "stop") -> Behaviour:
    """Answer 200 with ``content`` as the assistant message (None → null content)."""

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        body = _completion(content, prompt_tokens, completion_tokens,
                           str(rec.body.get("model", "judge")), refusal, finish_reason)
        if not usage:
            del body["usage"]
        return web.json_response(body)

    return behave


def reply_json(obj: Any, **kwargs: Any) -> Behaviour:
    """Answer 200 with ``obj`` serialised as the assistant message."""
    return reply(json.dumps(obj), **kwargs)


def _request_schema(body: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """(name, schema) from ``response_format`` json_schema, else from the schema our client
    appends to the user message in ``json_object``/``none`` mode; None when there is neither."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return str(spec.get("name", "")), spec.get("schema") or {}
    user = next((m.get("content") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    marker = "matching this JSON schema:\n"
    if isinstance(user, str) and marker in user:
        return "", json.loads(user.rsplit(marker, 1)[1])
    return None


def _fill(schema: Mapping[str, Any], key: str, values: Mapping[str, Any], index: int = 0) -> Any:
    """A value valid under ``schema``: ``values[key]`` when given, else the middle of a numeric
    range, ``True``, ``"scripted"``, an array of ``minItems`` items (at least one when allowed), or an
    object of its properties; a number given for an object (a shared call's ``{reason, score}``) is
    put in its first numeric or boolean property."""
    kind = schema.get("type")
    if key in values:
        given = values[key]
        if kind == "object" and not isinstance(given, Mapping):
            # A shared call's per-metric object ({reason, score}): the number goes to its value.
            props = schema.get("properties", {})
            main = next((k for k, v in props.items() if v.get("type") in ("integer", "number", "boolean")), None)
            return {k: (given if k == main else _fill(v, k, {}, index)) for k, v in props.items()}
        return given
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _fill(v, k, values, index) for k, v in props.items()}
    if kind == "array":
        # At least one item where one is allowed: an empty list can mean "nothing to judge" (no intent).
        count = max(int(schema.get("minItems", 0)), min(1, int(schema.get("maxItems", 1))))
        return [_fill(schema.get("items", {}), "", values, i) for i in range(count)]
    if kind in ("integer", "number"):
        if key == "n":
            return index + 1  # per-chunk items are numbered in order
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is None and "-" in str(schema.get("description", "")):
            low, high = (float(x) for x in str(schema["description"]).split("-", 1))
        low, high = (low or 0), (high if high is not None else (low or 0))
        middle = (low + high) / 2
        return int(middle) if kind == "integer" else middle
    if kind == "boolean":
        return True
    return "scripted"


def schema_reply(values: Mapping[str, Any] | None = None) -> Behaviour:
    """Answer any request carrying a JSON schema with an object valid under it (see ``_fill``).

    ``values`` overrides by property name (``{"groundedness": 2}``) or by schema name, meaning the
    schema's first numeric top-level property (the ``score`` of a standalone ``groundedness`` call).
    Usage is estimated like the client does: prompt = characters of the messages and the
    ``response_format`` / 4, completion = reply characters / 4. No schema → 400.
    """
    overrides = dict(values or {})

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        found = _request_schema(rec.body)
        if found is None:
            return await status(400, {"error": {"message": "schema_reply: no JSON schema in the request"}})(
                server, request, rec)
        name, schema = found
        props = schema.get("properties", {})
        local = dict(overrides)
        if name in overrides:
            main = next((k for k, v in props.items() if v.get("type") in ("integer", "number")), None)
            if main is not None and main not in overrides:
                local[main] = overrides[name]
        content = json.dumps(_fill(schema, "", local))
        prompt = sum(len(str(m.get("content", ""))) for m in rec.body.get("messages", []))
        prompt += len(json.dumps(rec.body.get("response_format", "")))
        body = _completion(content, max(1, prompt // 4), max(1, len(content) // 4), str(rec.body.get("model", "judge")))
        return web.json_response(body)

    return behave


def status(code: int, body: Any = None, headers: Mapping[str, str] | None = None) -> Behaviour:
    """Answer with an HTTP error status and an OpenAI-style error body."""

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        payload = body if body is not None else {"error": {"message": f"status {code}", "type": "test"}}
        return web.json_response(payload, status=code, headers=dict(headers or {}))

    return behave


def rate_limited(retry_after: float | None = None, *, in_ms: bool = False) -> Behaviour:
    """429, optionally with ``Retry-After`` (seconds) or ``retry-after-ms``."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        if in_ms:
            headers["retry-after-ms"] = str(int(retry_after * 1000))
        else:
            headers["Retry-After"] = str(retry_after)
    # x-should-retry is what OpenAI sends; our client must not depend on it.
    return status(429, {"error": {"message": "Rate limit reached", "type": "requests",
                                  "code": "rate_limit_exceeded"}}, headers)


def content_filtered() -> Behaviour:
    """400 as Azure OpenAI answers a prompt its content filter blocks."""
    return status(400, {"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
                   "policy.", "type": None, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation",
                       "content_filter_result": {"violence": {"filtered": True, "severity": "high"}}}}})


def server_error(code: int = 500) -> Behaviour:
    """A 5xx answer."""
    return status(code, {"error": {"message": "internal error", "type": "server_error"}})


def reject_response_format(kind: str = "json_schema") -> Behaviour:
    """400 as servers answer a ``response_format`` they do not support."""
    message = f"Invalid parameter: 'response_format' of type '{kind}' is not supported with this model."
    return status(400, {"error": {"message": message, "type": "invalid_request_error",
                                  "param": "response_format", "code": None}})


def hang(seconds: float = 60.0) -> Behaviour:
    """Accept the request and answer nothing for ``seconds`` (or until the server stops)."""

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        try:
            await asyncio.wait_for(server.stopping.wait(), seconds)
        except TimeoutError:
            pass
        return web.json_response({"error": {"message": "too late"}}, status=504)

    return behave


def close_connection() -> Behaviour:
    """Drop the TCP connection without answering."""

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        # aiohttp needs a response object; nothing reaches the client any more.
        return web.Response(status=500)

    return behave


def unused_base_url() -> str:
    """A base URL on a loopback port nobody listens on (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass
class JudgeServer:
    """The server; use as ``async with``. ``clock`` stamps arrivals (default: loop time)."""

    default: Behaviour = field(default_factory=lambda: reply_json({"score": 3}))
    latency: float = 0.0
    clock: Callable[[], float] | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    max_in_flight: int = 0
    in_flight: int = 0
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _script: deque[Behaviour] = field(default_factory=deque)
    _runner: web.AppRunner | None = None
    base_url: str = ""

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests; the default answers once the queue is empty."""
        self._script.extend(behaviours)

    def bodies(self) -> list[Mapping[str, Any]]:
        return [r.body for r in self.requests]

    def arrivals(self) -> list[float]:
        return [r.arrived_at for r in self.requests]

    async def __aenter__(self) -> JudgeServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        # Azure OpenAI routes by deployment; accept that path too.
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        now = self.clock() if self.clock else asyncio.get_running_loop().time()
        rec = RecordedRequest(len(self.requests), request.path, await request.json(),
                              dict(request.headers), now)
        self.requests.append(rec)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            behaviour = self._script.popleft() if self._script else self.default
            return await behaviour(self, request, rec)
        finally:
            self.in_flight -= 1
