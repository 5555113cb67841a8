"""The review queue over HTTP on the admin port.

``GET /api/review?metric=&limit=`` (read access, as every ``/api/*``)
    ``{"items": [I, ...], "count": n, "strata": [S, ...], "writable": bool, "lookback_hours", "at"}``:
    judged turns no person has judged yet, drawn per metric and judge verdict with a known
    inclusion probability, the strata interleaved so defects and passes both come up. I:
    ``trace_id``, ``metric``, ``stratum`` (defect | pass: the judge's verdict),
    ``inclusion_probability``, ``timestamp``, ``service``, ``labels``, ``judge`` (``verdict``,
    ``value``, ``scale``, ``label``, ``reason``, ``judge_model``, ``prompt_version``),
    ``question``/``answer`` (excerpts, with ``*_truncated``). S: ``metric``, ``verdict``,
    ``probability``, ``judged`` (stored in the lookback window, read up to 1000), ``drawn``,
    ``waiting`` (drawn, not reviewed). ``writable``: ``admin.review_token`` is set, so people can
    send verdicts (``POST /api/feedback``); the status page shows its review view only then.
    ``metric`` narrows the queue to one metric; ``limit`` (1–1000) cuts it below ``review.max_items``.
    Without a result store: 503.

HTTP only: access, parameters, the busy cap. The queue is :class:`ReviewSource`'s
(``monitor.feedback.review_queue.ReviewQueue``, wired by the composition root).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Mapping, Protocol

from aiohttp import web

from monitor.admin.api import QueryError, encode_json, parse_limit, single_values
from monitor.admin.responses import error_response, json_response, read_refusal, rejected
from monitor.telemetry import Telemetry

__all__ = ["ReviewApi", "ReviewSource"]

log = logging.getLogger(__name__)
_METRIC_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


class ReviewSource(Protocol):
    async def document(self, *, metric: str | None = None, limit: int | None = None) -> Mapping[str, Any]:
        """The ``/api/review`` document."""
        ...


class ReviewApi:
    """``GET /api/review``. ``queue`` None (no result store): the route answers 503."""

    def __init__(self, queue: ReviewSource | None, *, read_token: str | None, telemetry: Telemetry | None = None,
                 max_in_flight: int = 2) -> None:
        self._queue = queue
        self._read = read_token.encode() if read_token else None
        self._telemetry = telemetry
        # Each answer reads up to two strata per metric from the store: a few at once is plenty.
        self._max_in_flight = max_in_flight
        self._in_flight = 0
        self._failing = False

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/review", self._review)]

    def _rejected(self, reason: str) -> None:
        rejected(self._telemetry, reason)

    async def _review(self, request: web.Request) -> web.StreamResponse:
        refusal = read_refusal(request, self._read, self._telemetry)
        if refusal is not None:
            return refusal
        try:
            values = single_values(request.query, ("metric", "limit"))
            metric = values.get("metric")
            if metric is not None and not _METRIC_ID.match(metric):
                raise QueryError("metric", "expected a metric id (letters, digits, _ . : -)")
            limit = parse_limit(values["limit"]) if "limit" in values else None
        except QueryError as exc:
            return error_response(400, str(exc), exc.parameter)
        if self._queue is None:
            return error_response(503, "the review queue needs the result store (exporters.store.enabled)")
        if self._in_flight >= self._max_in_flight:
            self._rejected("busy")
            return error_response(503, "too many review queue requests at once; retry shortly", headers={"Retry-After": "1"})
        self._in_flight += 1
        try:
            document = await self._queue.document(metric=metric, limit=limit)
        except Exception as exc:  # the store's failure is the page's message, not a 500
            if not self._failing:
                self._failing = True
                log.warning("admin API: reading the review queue failed: %r", exc)
            return error_response(503, f"the review queue is unavailable ({type(exc).__name__}); see the monitor's log")
        finally:
            self._in_flight -= 1
        self._failing = False
        return json_response(encode_json(document))
