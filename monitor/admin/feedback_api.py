"""People's verdicts over HTTP on the admin port, and the judge's agreement with them.

``POST /api/feedback`` (write token ``admin.review_token``; the route answers 404 without one)
    Body: a JSON object ``{"trace_id", "metric", "verdict"?: "pass" | "defect", "value"?: number,
    "reviewer"}`` (a verdict, a value on the metric's scale, or both when they agree). Answer 202:
    ``{"verdict": {"trace_id", "metric", "verdict", "value", "reviewer" (its hash), "source": "api",
    "at"}, "join": {"state": joined | pending | duplicate, "judge_verdict", "judge_value",
    "agreement": agree | disagree | null, "inclusion_probability"}}``. A bad body is a 400 ``{"error",
    "parameter"}`` naming the field; no token 401, the read token 403; the store down 503.

``GET /api/agreement`` (read access, as every ``/api/*``)
    ``{"metrics": {METRIC: {"n", "agree", "rate", "lower", "upper", "judge_models": {MODEL: {...the
    same}}}}, "at": unix s}`` (see ``monitor.feedback.metrics``).

HTTP only: access, body size and JSON. The fields, the verdict and its join are the intake's
(``monitor.feedback.intake``, wired by the composition root), which classifies its errors: a
``ValueError`` (with the ``field`` it names) is a 400, a ``ConnectionError`` a 503.
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Mapping, Protocol

from aiohttp import web

from monitor.admin.api import encode_json
from monitor.admin.responses import error_response, json_response, read_refusal, rejected
from monitor.telemetry import Telemetry

__all__ = ["FeedbackApi", "VerdictIntake", "MAX_BODY_BYTES"]

MAX_BODY_BYTES = 16 * 1024  # a verdict is a few hundred bytes


class VerdictIntake(Protocol):
    """The feedback stage as the API sees it (``monitor.feedback.intake.ApiIntake``)."""

    async def take(self, fields: Mapping[str, object]) -> Mapping[str, Any]:
        """Validate, store and join one verdict; the 202 document. ``ValueError`` for a bad field
        (its ``field`` attribute names it), ``ConnectionError`` when it cannot be stored now."""
        ...

    def agreement(self) -> Mapping[str, Any]:
        """The ``/api/agreement`` document."""
        ...


def _bearer(authorization: str | None) -> str:
    scheme, _, given = (authorization or "").strip().partition(" ")
    return given.strip() if scheme.lower() == "bearer" else ""


class FeedbackApi:
    """The two routes. ``review_token`` None: the write route is off (404)."""

    def __init__(self, intake: VerdictIntake, *, read_token: str | None, review_token: str | None,
                 telemetry: Telemetry | None = None, max_in_flight: int = 8) -> None:
        self._intake = intake
        self._read = read_token.encode() if read_token else None
        self._write = review_token.encode() if review_token else None
        self._telemetry = telemetry
        self._max_in_flight = max_in_flight
        self._in_flight = 0

    @property
    def writable(self) -> bool:
        """Whether a review token is configured (the page shows its review view only then)."""
        return self._write is not None

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/api/feedback", self._feedback), web.get("/api/agreement", self._agreement)]

    def _rejected(self, reason: str) -> None:
        rejected(self._telemetry, reason)

    async def _agreement(self, request: web.Request) -> web.StreamResponse:
        refusal = read_refusal(request, self._read, self._telemetry)
        if refusal is not None:
            return refusal
        if request.query:
            return error_response(400, "this endpoint takes no parameters", next(iter(request.query)))
        return json_response(encode_json(self._intake.agreement()))

    def _authorize_write(self, request: web.Request) -> web.Response | None:
        if self._write is None:
            self._rejected("not_found")
            return error_response(404, "human verdicts over the API are off: set admin.review_token (or review_token_file)")
        given = _bearer(request.headers.get("Authorization")).encode()
        if given and hmac.compare_digest(given, self._write):
            return None
        if given and self._read is not None and hmac.compare_digest(given, self._read):
            self._rejected("forbidden")
            return error_response(403, "the read token (admin.bearer_token) cannot write verdicts: send admin.review_token")
        self._rejected("unauthenticated")
        return error_response(401, "send Authorization: Bearer <admin.review_token>",
                      headers={"WWW-Authenticate": 'Bearer realm="rag-monitor-review"'})

    async def _feedback(self, request: web.Request) -> web.StreamResponse:
        refused = self._authorize_write(request)
        if refused is not None:
            return refused
        if self._in_flight >= self._max_in_flight:
            self._rejected("busy")
            return error_response(503, "too many verdicts at once; retry shortly", headers={"Retry-After": "1"})
        self._in_flight += 1
        try:
            return await self._take(request)
        finally:
            self._in_flight -= 1

    async def _take(self, request: web.Request) -> web.Response:
        if request.content_type != "application/json":
            return self._bad("send Content-Type: application/json", "body")
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return self._bad(f"the body is over {MAX_BODY_BYTES} bytes", "body")
        raw = await request.read()  # a chunked body is bounded by the server's client_max_size
        if len(raw) > MAX_BODY_BYTES:
            return self._bad(f"the body is over {MAX_BODY_BYTES} bytes", "body")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            return self._bad(f"the body is not JSON ({exc})", "body")
        if not isinstance(body, dict):
            return self._bad("the body must be a JSON object", "body")
        try:
            document = await self._intake.take(body)
        except ValueError as exc:
            return self._bad(str(exc), str(getattr(exc, "field", "body")))
        except ConnectionError as exc:
            return error_response(503, str(exc), headers={"Retry-After": "5"})
        return json_response(encode_json(document), 202)

    def _bad(self, message: str, parameter: str) -> web.Response:
        self._rejected("bad_request")
        return error_response(400, message, parameter)
