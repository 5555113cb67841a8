"""Forward received OTLP bodies, unchanged, to the app's real collector (OTLP/HTTP).

The app's request is answered before anything is sent downstream: ``offer`` only enqueues into
a queue bounded in requests *and* bytes, and a full queue drops the body (counted). Workers send
with a timeout and retry only retryable answers (429, 502, 503, 504, connection errors) a few
times with backoff — never without bound, so a dead downstream costs at most the queue.
"""

from __future__ import annotations

import asyncio
import io
import logging
import random
from dataclasses import dataclass

import aiohttp

from monitor.receivers.config import ForwardConfig
from monitor.telemetry import Telemetry, counter

__all__ = ["Forwarder"]

log = logging.getLogger(__name__)
_RETRYABLE = {429, 502, 503, 504}

FORWARDED = counter("rag_monitor_forward_total", "Bodies forwarded to the downstream collector, by outcome.", "outcome")


@dataclass(frozen=True, slots=True)
class _Item:
    path: str
    body: bytes
    content_type: str
    content_encoding: str | None


class Forwarder:
    """Component and ``BodySink``. Outcomes: sent, queue_full, failed, retried, shutdown_drop."""

    def __init__(self, config: ForwardConfig, telemetry: Telemetry) -> None:
        if not config.endpoint:
            raise ValueError("forward.endpoint is not set")
        self._config = config
        self._base = config.endpoint.rstrip("/")
        self._telemetry = telemetry
        self._queue: asyncio.Queue[_Item] = asyncio.Queue(maxsize=config.max_queue_requests)
        self._queued_bytes = 0
        self._session: aiohttp.ClientSession | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._accepting = False

    @property
    def queue_depth(self) -> int:
        return self._queue.qsize()

    def offer(self, path: str, body: bytes, content_type: str, content_encoding: str | None) -> None:
        if not self._accepting:
            self._telemetry.add(FORWARDED, outcome="shutdown_drop")
            return
        if self._queued_bytes + len(body) > self._config.max_queue_bytes or self._queue.full():
            self._telemetry.add(FORWARDED, outcome="queue_full")
            return
        self._queue.put_nowait(_Item(path, body, content_type, content_encoding))
        self._queued_bytes += len(body)

    async def drained(self) -> None:
        """Wait until every accepted body has been sent or given up on."""
        await self._queue.join()

    async def start(self) -> None:
        if self._session is not None:
            return
        timeout = aiohttp.ClientTimeout(total=self._config.timeout_seconds)
        self._session = aiohttp.ClientSession(timeout=timeout, headers=self._config.headers)
        self._accepting = True
        self._workers = [asyncio.create_task(self._work(), name=f"forward-{i}")
                         for i in range(self._config.concurrency)]

    async def shutdown(self, deadline: float) -> None:
        self._accepting = False
        if self._session is None:
            return
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(self._queue.join(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            pass
        for w in self._workers:
            w.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
            self._telemetry.add(FORWARDED, outcome="shutdown_drop")
        self._queued_bytes = 0
        session, self._session = self._session, None
        await session.close()

    async def _work(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._send(item)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let one body kill the worker
                log.exception("forwarding failed unexpectedly")
                self._telemetry.add(FORWARDED, outcome="failed")
            finally:
                self._queued_bytes -= len(item.body)
                self._queue.task_done()

    async def _send(self, item: _Item) -> None:
        assert self._session is not None
        headers = {"Content-Type": item.content_type}
        if item.content_encoding:
            headers["Content-Encoding"] = item.content_encoding
        url = self._base + item.path
        for attempt in range(1, self._config.max_attempts + 1):
            try:
                async with self._session.post(url, data=io.BytesIO(item.body), headers=headers) as resp:
                    await resp.read()
                    if resp.status < 300:
                        self._telemetry.add(FORWARDED, outcome="sent")
                        return
                    if resp.status not in _RETRYABLE:
                        self._telemetry.add(FORWARDED, outcome="failed")
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            if attempt < self._config.max_attempts:
                self._telemetry.add(FORWARDED, outcome="retried")
                await asyncio.sleep(min(2.0, 0.1 * 2 ** attempt) * random.uniform(0.5, 1.0))
        self._telemetry.add(FORWARDED, outcome="failed")
