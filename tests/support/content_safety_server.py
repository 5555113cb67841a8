"""A local stand-in for the Azure AI Content Safety REST API, for tests.

The real service cannot be reached from tests (no network, no Azure resource), so this server
speaks the documented request and response shapes on 127.0.0.1:

* ``POST /contentsafety/text:analyze?api-version=2023-10-01`` — body ``{"text", "categories"?,
  "outputType"?, "blocklistNames"?, "haltOnBlocklistHit"?}``; answer ``{"blocklistsMatch": [],
  "categoriesAnalysis": [{"category": "Hate", "severity": 0}, ...]}``. ``text`` is limited to
  10,000 characters; ``FourSeverityLevels`` (the default) answers 0, 2, 4 or 6.
* ``POST /contentsafety/text:detectGroundedness?api-version=2024-09-15-preview`` — body
  ``{"domain"?, "task"?, "qna"?: {"query"}, "text", "groundingSources", "reasoning"?,
  "llmResource"?}``; answer ``{"ungroundedDetected", "ungroundedPercentage",
  "ungroundedDetails": [{"text", "reason"?}]}``. ``text`` ≤ 7,500, sources ≤ 55,000 characters.

Errors use the service's shape ``{"error": {"code", "message"}}``; a wrong or missing
``Ocp-Apim-Subscription-Key`` is 401. Severities are decided by ``severity_for(category, text)``
(default: 0) and groundedness by ``groundedness_for(body)``; ``script()`` queues one-off
behaviours (429 with Retry-After, 5xx, a hang, a malformed body) ahead of the normal answer.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from aiohttp import web

__all__ = ["ContentSafetyServer", "RecordedCall", "error", "too_many", "hang", "malformed", "KEY"]

KEY = "test-content-safety-key"
_CATEGORIES = ("Hate", "SelfHarm", "Sexual", "Violence")

Scripted = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class RecordedCall:
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any


def _error(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status, headers=dict(headers or {}))


def error(status: int, code: str = "InternalServerError") -> Scripted:
    """Answer ``status`` with the service's error body."""

    async def behave(request: web.Request) -> web.StreamResponse:
        return _error(status, code, f"scripted {status}")

    return behave


def too_many(retry_after: float) -> Scripted:
    """429 with ``Retry-After`` (seconds)."""

    async def behave(request: web.Request) -> web.StreamResponse:
        return _error(429, "TooManyRequests", "Rate limit is exceeded.", {"Retry-After": str(retry_after)})

    return behave


def hang(seconds: float) -> Scripted:
    """Answer nothing for ``seconds``."""

    async def behave(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(seconds)
        return _error(504, "Timeout", "too late")

    return behave


def malformed(body: Any) -> Scripted:
    """200 with ``body`` as it is (a reply the client must reject)."""

    async def behave(request: web.Request) -> web.StreamResponse:
        return web.json_response(body)

    return behave


def _eight_to_four(severity: int) -> int:
    return min(6, severity - severity % 2)


@dataclass
class ContentSafetyServer:
    """Use as ``async with ContentSafetyServer() as server``; ``server.endpoint`` is the
    resource endpoint to configure (the SDK appends ``/contentsafety``)."""

    severity_for: Callable[[str, str], int] = lambda category, text: 0
    groundedness_for: Callable[[Mapping[str, Any]], Mapping[str, Any]] = (
        lambda body: {"ungroundedDetected": False, "ungroundedPercentage": 0, "ungroundedDetails": []})
    latency: float = 0.0
    """Seconds every answer is delayed (in-flight requests overlap for concurrency checks)."""
    calls: list[RecordedCall] = field(default_factory=list)
    max_in_flight: int = 0
    endpoint: str = ""
    _in_flight: int = 0
    _script: deque[Scripted] = field(default_factory=deque)
    _runner: web.AppRunner | None = None

    def script(self, *behaviours: Scripted) -> None:
        self._script.extend(behaviours)

    async def __aenter__(self) -> "ContentSafetyServer":
        app = web.Application()
        app.router.add_post("/contentsafety/text:analyze", self._analyze)
        app.router.add_post("/contentsafety/text:detectGroundedness", self._groundedness)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.endpoint = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _admit(self, request: web.Request, api_version: str) -> tuple[Any, web.StreamResponse | None]:
        try:
            body = await request.json()
        except ValueError:
            body = None
        self.calls.append(RecordedCall(request.path, dict(request.query), dict(request.headers), body))
        if request.headers.get("Ocp-Apim-Subscription-Key") != KEY:
            return body, _error(401, "401", "Access denied due to invalid subscription key or wrong API endpoint.")
        if request.query.get("api-version") != api_version:
            return body, _error(404, "404", "Resource not found (unsupported api-version)")
        if self._script:
            return body, await self._script.popleft()(request)
        if not isinstance(body, dict):
            return body, _error(400, "InvalidRequestBody", "The request body is not valid JSON.")
        return body, None

    async def _counted(self, handler: Callable[[], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            return await handler()
        finally:
            self._in_flight -= 1

    async def _analyze(self, request: web.Request) -> web.StreamResponse:
        async def handle() -> web.StreamResponse:
            body, early = await self._admit(request, "2023-10-01")
            if early is not None:
                return early
            text, categories = body.get("text"), body.get("categories") or list(_CATEGORIES)
            output_type = body.get("outputType", "FourSeverityLevels")
            if not isinstance(text, str) or not text:
                return _error(400, "InvalidRequestBody", "text is required")
            if len(text) > 10_000:
                return _error(400, "InvalidRequestBody", "text exceeds 10000 characters")
            if any(c not in _CATEGORIES for c in categories) or output_type not in ("FourSeverityLevels", "EightSeverityLevels"):
                return _error(400, "InvalidRequestBody", "invalid categories or outputType")
            analysis = []
            for category in categories:
                severity = self.severity_for(category, text)
                if output_type == "FourSeverityLevels":
                    severity = _eight_to_four(severity)
                analysis.append({"category": category, "severity": severity})
            return web.json_response({"blocklistsMatch": [], "categoriesAnalysis": analysis})

        return await self._counted(handle)

    async def _groundedness(self, request: web.Request) -> web.StreamResponse:
        async def handle() -> web.StreamResponse:
            body, early = await self._admit(request, "2024-09-15-preview")
            if early is not None:
                return early
            text, sources = body.get("text"), body.get("groundingSources")
            if not isinstance(text, str) or not text or len(text) > 7_500:
                return _error(400, "InvalidRequestBody", "text is required and at most 7500 characters")
            if not isinstance(sources, list) or not sources or sum(len(s) for s in sources) > 55_000:
                return _error(400, "InvalidRequestBody", "groundingSources: 1 to 55000 characters required")
            if body.get("task") == "QnA" and not (body.get("qna") or {}).get("query"):
                return _error(400, "InvalidRequestBody", "qna.query is required for the QnA task")
            if body.get("reasoning") and not body.get("llmResource"):
                return _error(400, "InvalidRequestBody", "reasoning needs llmResource")
            return web.json_response(dict(self.groundedness_for(body)))

        return await self._counted(handle)
