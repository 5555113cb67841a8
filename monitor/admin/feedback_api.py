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

Both run on the admin thread; a verdict is handed to the pipeline's loop (``VerdictJoin``) and the
answer waits for it to be stored and joined.
"""

from __future__ import annotations

import hmac
import json
import time
from typing import Any, Awaitable, Callable, Mapping, Protocol

from aiohttp import web

from monitor.admin.api import decide_access, encode_json
from monitor.feedback.join import JoinState, StoreUnavailable
from monitor.feedback.metrics import AgreementBoard, snapshot_document
from monitor.feedback.verdicts import DefectRule, HumanVerdict, VerdictError, make_verdict
from monitor.telemetry import REQUESTS_REJECTED, Telemetry

__all__ = ["FeedbackApi", "VerdictSubmitter", "MAX_BODY_BYTES"]

MAX_BODY_BYTES = 16 * 1024  # a verdict is a few hundred bytes
_FIELDS = ("trace_id", "metric", "verdict", "value", "reviewer")
_TRANSPORT = "admin"
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class VerdictSubmitter(Protocol):
    """``monitor.feedback.join.VerdictJoin`` as the API sees it (called from the admin thread)."""

    async def submit_threadsafe(self, verdict: HumanVerdict) -> JoinState: ...


def _json(document: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(body=encode_json(document), status=status, content_type="application/json",
                        charset="utf-8", headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                                                  **(headers or {})})


def _error(status: int, message: str, parameter: str | None = None,
           headers: Mapping[str, str] | None = None) -> web.Response:
    doc = {"error": message} if parameter is None else {"error": message, "parameter": parameter}
    return _json(doc, status, headers)


def _bearer(authorization: str | None) -> str:
    scheme, _, given = (authorization or "").strip().partition(" ")
    return given.strip() if scheme.lower() == "bearer" else ""


def verdict_document(v: HumanVerdict) -> dict[str, Any]:
    return {"trace_id": v.trace_id, "metric": v.metric, "verdict": v.verdict, "value": v.value,
            "reviewer": v.reviewer, "source": v.source, "at": v.at}


class FeedbackApi:
    """The two routes. ``review_token`` None: the write route is off (404)."""

    def __init__(self, *, rules: Mapping[str, DefectRule], join: VerdictSubmitter, board: AgreementBoard,
                 read_token: str | None, review_token: str | None, telemetry: Telemetry | None = None,
                 clock: Callable[[], float] = time.time, max_in_flight: int = 8) -> None:
        self._rules = rules
        self._join = join
        self._board = board
        self._read = read_token.encode() if read_token else None
        self._write = review_token.encode() if review_token else None
        self._telemetry = telemetry
        self._clock = clock
        self._max_in_flight = max_in_flight
        self._in_flight = 0

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/api/feedback", self._feedback), web.get("/api/agreement", self._agreement)]

    def _rejected(self, reason: str) -> None:
        if self._telemetry is not None:
            self._telemetry.add(REQUESTS_REJECTED, transport=_TRANSPORT, reason=reason)

    async def _agreement(self, request: web.Request) -> web.StreamResponse:
        decision = decide_access(remote=request.remote, host=request.headers.get("Host"),
                                 authorization=request.headers.get("Authorization"), token=self._read)
        if not decision.allowed:
            self._rejected(decision.reason)
            headers = {"WWW-Authenticate": 'Bearer realm="rag-monitor"'} if decision.status == 401 else None
            return _error(decision.status, decision.message, headers=headers)
        if request.query:
            return _error(400, "this endpoint takes no parameters", next(iter(request.query)))
        return _json(snapshot_document(self._board.snapshot()))

    def _authorize_write(self, request: web.Request) -> web.Response | None:
        if self._write is None:
            self._rejected("not_found")
            return _error(404, "human verdicts over the API are off: set admin.review_token (or review_token_file)")
        given = _bearer(request.headers.get("Authorization")).encode()
        if given and hmac.compare_digest(given, self._write):
            return None
        if given and self._read is not None and hmac.compare_digest(given, self._read):
            self._rejected("forbidden")
            return _error(403, "the read token (admin.bearer_token) cannot write verdicts: send admin.review_token")
        self._rejected("unauthenticated")
        return _error(401, "send Authorization: Bearer <admin.review_token>",
                      headers={"WWW-Authenticate": 'Bearer realm="rag-monitor-review"'})

    async def _feedback(self, request: web.Request) -> web.StreamResponse:
        refused = self._authorize_write(request)
        if refused is not None:
            return refused
        if self._in_flight >= self._max_in_flight:
            self._rejected("busy")
            return _error(503, "too many verdicts at once; retry shortly", headers={"Retry-After": "1"})
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
        raw = await request.content.read(MAX_BODY_BYTES + 1)
        if len(raw) > MAX_BODY_BYTES:
            return self._bad(f"the body is over {MAX_BODY_BYTES} bytes", "body")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            return self._bad(f"the body is not JSON ({exc})", "body")
        if not isinstance(body, dict):
            return self._bad("the body must be a JSON object", "body")
        unknown = sorted(set(body) - set(_FIELDS))
        if unknown:
            return self._bad(f"unknown field {unknown[0]!r} (fields: {', '.join(_FIELDS)})", unknown[0])
        for name in ("trace_id", "metric", "reviewer"):
            if name not in body:
                return self._bad(f"{name} is required", name)
        try:
            verdict = make_verdict(self._rules, trace_id=body["trace_id"], metric=body["metric"],
                                   verdict=body.get("verdict"), value=body.get("value"), reviewer=body["reviewer"],
                                   source="api", at=self._clock())
        except VerdictError as exc:
            return self._bad(str(exc), exc.field)
        try:
            state = await self._join.submit_threadsafe(verdict)
        except StoreUnavailable as exc:
            return _error(503, str(exc), headers={"Retry-After": "5"})
        return _json({"verdict": verdict_document(verdict), "join": state.document()}, 202)

    def _bad(self, message: str, parameter: str) -> web.Response:
        self._rejected("bad_request")
        return _error(400, message, parameter)
