"""Admin server on :9464: ``/metrics``, ``/healthz``, ``/readyz``.

Rendering the registry costs tens of milliseconds once the score histograms exist, so it runs in
a worker thread: a scrape never stalls ingest. OpenMetrics is served when the scraper asks for
it (exemplars need it).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from monitor.config import AdminConfig
from monitor.http_site import start_site

__all__ = ["AdminServer"]

log = logging.getLogger(__name__)


class AdminServer:
    """Component. ``ready`` is a callable so readiness reflects the pipeline's live state."""

    def __init__(self, config: AdminConfig, registry: CollectorRegistry, ready: Callable[[], bool]) -> None:
        self._config = config
        self._registry = registry
        self._ready = ready
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    def _app(self) -> web.Application:
        # A fresh Application per start: aiohttp freezes an app once it has run.
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        return app

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        loop = asyncio.get_running_loop()
        body = await loop.run_in_executor(None, encoder, self._registry)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready\n")

    async def start(self) -> None:
        if self._runner is not None:
            return
        self._runner, self.port = await start_site(self._app(), self._config.host, self._config.port,
                                                   shutdown_timeout=2.0)
        log.info("admin server on http://%s:%s (/metrics /healthz /readyz)", self._config.host, self.port)

    async def shutdown(self, deadline: float) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
