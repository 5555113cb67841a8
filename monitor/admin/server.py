"""Admin server on :9464: ``/metrics``, ``/healthz``, ``/readyz``, the status page ``/`` and the
JSON API ``/api/*`` (documents and access rule in ``monitor.admin.api``, the page in
``monitor.admin.status_page``).

The server runs on its own thread and event loop, so health checks and scrapes never queue
behind ingest, assembly or evaluation on the pipeline's loop (a busy pipeline must not look dead
to Kubernetes, nor miss Prometheus' scrape timeout). Liveness still reflects a *wedged* pipeline:
the pipeline's loop beats every second, and ``/healthz`` answers 503 once the last beat is older
than ``admin.liveness_stall_seconds``. Everything the handlers read is thread-safe: registry
collection, the store's reader thread, rolling statistics copied in a worker thread.

Rendering the registry costs tens of milliseconds once the score histograms exist, so it runs in
a worker thread: a scrape never stalls the health checks. OpenMetrics is served when the scraper asks for
it (exemplars need it). ``/metrics``, the health checks and the page carry no conversation text
and are open; ``/api/*`` is loopback-only or token-protected, and its reads (rolling counters,
SQLite, JSON encoding of up to 1000 rows) run off the event loop too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import Awaitable, Callable, Mapping, Protocol, Sequence

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from exporters.release_metrics import ReleaseBoard
from monitor.admin.api import (
    EvaluationQuery,
    QueryError,
    StoredEvaluationView,
    encode_json,
    evaluation_item,
    parse_evaluations_query,
    parse_worst_query,
    regressions_document,
    releases_document,
    single_values,
)
from monitor.admin.catalogue import MetricDescription
from monitor.admin.feedback_api import FeedbackApi
from monitor.admin.responses import error_response, json_response, read_refusal, rejected
from monitor.admin.review_api import ReviewApi
from monitor.admin.health import PipelineStatus
from monitor.admin.status_page import page_response
from monitor.admin.summary import JailbreakSource, ReasonView, SummarySource, summary_document
from monitor.admin.turns import TurnView, parse_turns_query, turn_item
from monitor.admin.config import AdminConfig
from monitor.net.http_site import start_site
from monitor.telemetry import Telemetry

__all__ = ["AdminServer"]

log = logging.getLogger(__name__)

_STORE_OFF = "the result store is off (exporters.store.enabled)"
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ResultReads(EvaluationQuery, Protocol):
    """The result store's reads behind ``/api/*`` (``exporters.result_store.ResultStore``)."""

    async def worst_turns(self, *, since: float, metric: str | None = None,
                          limit: int = 20) -> Sequence[TurnView]: ...

    async def outcome_reasons(self, *, since: float) -> Sequence[ReasonView]: ...


class _ApiRoutes:
    """``/api/*``: each route behind ``decide_access`` and a cap on requests in flight (past it:
    503 + Retry-After, counted as ``requests_rejected{transport="admin", reason="busy"}``)."""

    def __init__(self, *, token: str | None, summary: SummarySource | None, store: ResultReads | None,
                 telemetry: Telemetry | None, clock: Callable[[], float], max_in_flight: int = 4,
                 excerpt_chars: int = 500, catalogue: Mapping[str, MetricDescription] | None = None,
                 pipeline: PipelineStatus | None = None, jailbreak: JailbreakSource | None = None,
                 releases: ReleaseBoard | None = None) -> None:
        self._jailbreak = jailbreak
        self._releases = releases
        self._token = token.encode() if token is not None else None
        self._summary = summary
        self._store = store
        self._catalogue = catalogue or {}
        self._pipeline = pipeline
        self._telemetry = telemetry
        self._clock = clock
        self._max_in_flight = max_in_flight
        self._in_flight = 0
        self._excerpt_chars = excerpt_chars
        self._failing: set[str] = set()

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/summary", self._guard(self._summary_route)),
                web.get("/api/pipeline", self._guard(self._pipeline_route)),
                web.get("/api/turns", self._guard(self._turns_route)),
                web.get("/api/evaluations", self._guard(self._evaluations_route)),
                web.get("/api/worst", self._guard(self._worst_route)),
                web.get("/api/releases", self._guard(self._releases_route)),
                web.get("/api/regressions", self._guard(self._regressions_route))]

    def _longest_seconds(self) -> float:
        windows = self._summary.windows if self._summary is not None else ()
        return max((seconds for _, seconds in windows), default=3600.0)

    def _rejected(self, reason: str) -> None:
        rejected(self._telemetry, reason)

    def _guard(self, handler: _Handler) -> _Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            refusal = read_refusal(request, self._token, self._telemetry)
            if refusal is not None:
                return refusal
            if self._in_flight >= self._max_in_flight:
                self._rejected("busy")
                return error_response(503, "too many API requests at once; retry shortly", headers={"Retry-After": "1"})
            self._in_flight += 1
            try:
                return await handler(request)
            except QueryError as exc:
                return error_response(400, str(exc), exc.parameter)
            finally:
                self._in_flight -= 1

        return guarded

    def _failed(self, what: str, exc: Exception) -> web.Response:
        # The page polls every 10 s: log once per failing streak, not once per request.
        if what not in self._failing:
            self._failing.add(what)
            log.warning("admin API: reading the %s failed: %r", what, exc)
        return error_response(503, f"the {what} is unavailable ({type(exc).__name__}); see the monitor's log")

    async def _summary_route(self, request: web.Request) -> web.StreamResponse:
        source = self._summary
        if source is None:
            return error_response(503, "rolling statistics are off: no summary source is wired")
        now = self._clock()
        reasons: Sequence[ReasonView] = ()
        if self._store is not None:
            try:  # the causes of skips and errors are a detail: the rates are served without them
                reasons = await self._store.outcome_reasons(since=now - self._longest_seconds())
            except Exception as exc:
                self._failed("result store", exc)
        catalogue, jailbreak = self._catalogue, self._jailbreak
        try:
            body = await asyncio.to_thread(lambda: encode_json(
                summary_document(source, now, catalogue=catalogue, reasons=reasons, jailbreak=jailbreak)))
        except Exception as exc:
            return self._failed("rolling statistics", exc)
        self._failing.discard("rolling statistics")
        return json_response(body)

    async def _pipeline_route(self, request: web.Request) -> web.StreamResponse:
        pipeline = self._pipeline
        if pipeline is None:
            return error_response(503, "pipeline health is not wired")
        try:
            body = await asyncio.to_thread(lambda: encode_json(pipeline.document()))
        except Exception as exc:
            return self._failed("pipeline counters", exc)
        self._failing.discard("pipeline counters")
        return json_response(body)

    async def _releases_route(self, request: web.Request) -> web.StreamResponse:
        single_values(request.query, ())
        board = self._releases
        if board is None:
            return error_response(503, "release comparisons are off (regressions.enabled)")
        return json_response(await asyncio.to_thread(lambda: encode_json(releases_document(board.snapshot()))))

    async def _regressions_route(self, request: web.Request) -> web.StreamResponse:
        single_values(request.query, ())
        board = self._releases
        if board is None:
            return error_response(503, "regression detection is off (regressions.enabled)")
        return json_response(await asyncio.to_thread(lambda: encode_json(regressions_document(board.snapshot()))))

    async def _turns_route(self, request: web.Request) -> web.StreamResponse:
        query = parse_turns_query(request.query, self._clock(), self._longest_seconds())
        if self._store is None:
            return error_response(503, _STORE_OFF)
        try:
            turns = await self._store.worst_turns(since=query.since, metric=query.metric, limit=query.limit)
        except Exception as exc:
            return self._failed("result store", exc)
        self._failing.discard("result store")

        def build() -> bytes:
            items = [turn_item(t, self._excerpt_chars) for t in turns]
            return encode_json({"items": items, "count": len(items),
                                "query": {"metric": query.metric, "since": query.since, "limit": query.limit}})

        return json_response(await asyncio.to_thread(build))

    async def _evaluations_route(self, request: web.Request) -> web.StreamResponse:
        query = parse_evaluations_query(request.query, self._clock())
        if self._store is None:
            return error_response(503, _STORE_OFF)
        try:
            rows = await self._store.evaluations(metric=query.metric, outcome=query.outcome,
                                                 since=query.since, limit=query.limit)
        except Exception as exc:
            return self._failed("result store", exc)
        return await self._items(rows, {"metric": query.metric, "outcome": query.outcome,
                                        "since": query.since, "limit": query.limit})

    async def _worst_route(self, request: web.Request) -> web.StreamResponse:
        query = parse_worst_query(request.query, self._clock(), self._longest_seconds())
        if self._store is None:
            return error_response(503, _STORE_OFF)
        try:
            rows = await self._store.worst_recent(since=query.since, limit=query.limit)
        except Exception as exc:
            return self._failed("result store", exc)
        return await self._items(rows, {"since": query.since, "limit": query.limit})

    async def _items(self, rows: Sequence[StoredEvaluationView], query: dict[str, object]) -> web.Response:
        self._failing.discard("result store")

        def build() -> bytes:
            items = [evaluation_item(row, self._excerpt_chars) for row in rows]
            return encode_json({"items": items, "count": len(items), "query": query})

        return json_response(await asyncio.to_thread(build))


class AdminServer:
    """Component. ``ready`` is a callable so readiness reflects the pipeline's live state.

    ``summary`` (rolling defect rates), ``store`` (stored evaluations), ``pipeline`` (the
    counters' health) and ``releases`` (the release comparisons and the change detector) feed
    ``/api/*``; each may be None, and then its endpoints answer 503 with a
    JSON error that the page shows. ``catalogue`` describes the configured metrics.
    ``telemetry`` counts refused API requests; ``clock`` (unix seconds) is for tests."""

    _BEAT_SECONDS = 1.0

    def __init__(self, config: AdminConfig, registry: CollectorRegistry, ready: Callable[[], bool], *,
                 summary: SummarySource | None = None, store: ResultReads | None = None,
                 telemetry: Telemetry | None = None, clock: Callable[[], float] = time.time,
                 catalogue: Mapping[str, MetricDescription] | None = None, pipeline: PipelineStatus | None = None,
                 jailbreak: JailbreakSource | None = None, releases: ReleaseBoard | None = None,
                 feedback: FeedbackApi | None = None, review: ReviewApi | None = None) -> None:
        self._config = config
        self._feedback = feedback  # POST /api/feedback, GET /api/agreement (monitor.admin.feedback_api)
        self._review = review  # GET /api/review (monitor.admin.review_api)
        self._registry = registry
        self._ready = ready
        self._pipeline = pipeline
        token = config.bearer_token.get_secret_value() if config.bearer_token is not None else None
        self._api = _ApiRoutes(token=token, summary=summary, store=store, telemetry=telemetry, clock=clock,
                               catalogue=catalogue, pipeline=pipeline, jailbreak=jailbreak, releases=releases)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._last_beat = time.monotonic()
        self.port: int | None = None

    def _app(self) -> web.Application:
        # A fresh Application per start: aiohttp freezes an app once it has run.
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/", self._page)
        app.add_routes(self._api.routes())
        if self._feedback is not None:
            app.add_routes(self._feedback.routes())
        if self._review is not None:
            app.add_routes(self._review.routes())
        return app

    async def _page(self, request: web.Request) -> web.Response:
        return page_response()

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        loop = asyncio.get_running_loop()
        body = await loop.run_in_executor(None, encoder, self._registry)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _healthz(self, request: web.Request) -> web.Response:
        stalled = time.monotonic() - self._last_beat
        if stalled > self._config.liveness_stall_seconds:
            return web.Response(status=503, text=f"pipeline event loop stalled for {stalled:.0f} s\n")
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready\n")

    async def _beat(self) -> None:
        while True:
            self._last_beat = time.monotonic()
            await asyncio.sleep(self._BEAT_SECONDS)

    async def _sample_pipeline(self) -> None:
        """Keep readings of the counters so that "recent" on the page is the last minutes."""
        pipeline = self._pipeline
        if pipeline is None:
            return
        while True:
            try:
                await asyncio.to_thread(pipeline.health.sample)
            except Exception as exc:  # a collector raising must not end the readings
                log.debug("reading the pipeline counters failed: %r", exc)
            await asyncio.sleep(pipeline.health.interval_seconds)

    def _serve(self, started: concurrent.futures.Future[int]) -> None:
        """The admin thread: its own loop, serving until ``shutdown`` stops it."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            try:
                self._runner, port = loop.run_until_complete(
                    start_site(self._app(), self._config.host, self._config.port, shutdown_timeout=2.0))
            except BaseException as exc:
                started.set_exception(exc)
                return
            started.set_result(port)
            sampler = loop.create_task(self._sample_pipeline(), name="admin-pipeline-readings")
            loop.run_forever()
            sampler.cancel()
            loop.run_until_complete(asyncio.gather(sampler, return_exceptions=True))
            runner, self._runner = self._runner, None
            if runner is not None:
                loop.run_until_complete(runner.cleanup())
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
            self._loop = None

    async def start(self) -> None:
        if self._thread is not None:
            return
        self._last_beat = time.monotonic()
        self._heartbeat = asyncio.create_task(self._beat(), name="admin-heartbeat")
        started: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._serve, args=(started,), name="rag-monitor-admin", daemon=True)
        self._thread.start()
        try:
            self.port = await asyncio.wrap_future(started)
        except BaseException:
            await self.shutdown(asyncio.get_running_loop().time() + 2.0)
            raise
        log.info("admin server on http://%s:%s (/ /api /metrics /healthz /readyz)", self._config.host, self.port)

    async def shutdown(self, deadline: float) -> None:
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None:
            heartbeat.cancel()
            await asyncio.gather(heartbeat, return_exceptions=True)
        thread, self._thread = self._thread, None
        if thread is None:
            return
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(loop.stop)
        remaining = max(0.1, deadline - asyncio.get_running_loop().time())
        await asyncio.to_thread(thread.join, remaining)
        if thread.is_alive():
            log.warning("admin server thread did not stop within the shutdown deadline")
