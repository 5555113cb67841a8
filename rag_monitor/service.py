"""A remote scoring service (the LLM judge, Azure AI Content Safety) shared by metrics.

The service's async client lives on the service's own :class:`~rag_monitor.loop_thread.LoopThread`
and is created there on first use; callers on any thread or loop reach it through
:meth:`ServiceHandle.call`, which hops to that loop and back. One client per service object means
one set of budgets, retries, circuit breaker and connection pool however many metrics, threads
or loops use it.
"""

from __future__ import annotations

import asyncio
import atexit
import weakref
from typing import Any, Awaitable, Callable, Coroutine, Generic, Protocol, TypeVar

from rag_monitor.loop_thread import LoopThread, run_blocking

__all__ = ["AsyncClient", "ServiceHandle"]

T = TypeVar("T")


class AsyncClient(Protocol):
    async def start(self) -> None: ...

    async def shutdown(self, deadline: float) -> None: ...


C = TypeVar("C", bound=AsyncClient)

# Services whose client was started and not yet closed. A script that never calls close() (or
# leaves no `with`) still gets its connection pool closed when the interpreter exits, instead of
# aiohttp's "Unclosed client session" warning on stderr: atexit runs while the daemon loop thread
# is still alive, so the client shuts down on its own loop.
_OPEN: "weakref.WeakSet[ServiceHandle[Any]]" = weakref.WeakSet()


@atexit.register
def _close_open_services() -> None:
    for handle in list(_OPEN):
        handle.close()


class ServiceHandle(Generic[C]):
    """Owns a client created by ``factory`` on a private loop thread."""

    def __init__(self, name: str, factory: Callable[[], C], shutdown_seconds: float = 5.0) -> None:
        self._factory = factory
        self._loop = LoopThread(name)
        self._client: C | None = None
        self._shutdown_seconds = shutdown_seconds
        self._closed = False

    async def _started(self) -> C:
        # Runs on the service loop only, so no lock is needed around the lazy start.
        if self._client is None:
            client = self._factory()
            await client.start()
            self._client = client
            _OPEN.add(self)
        return self._client

    async def call(self, fn: Callable[[C], Awaitable[T]]) -> T:
        """``await fn(client)`` on the service loop, from any loop."""
        if self._closed:
            raise RuntimeError("this service was closed")

        async def on_loop() -> T:
            return await fn(await self._started())

        return await self._loop.run_async(on_loop())

    def notify(self, fn: Callable[[C], None]) -> None:
        """Run ``fn(client)`` on the service loop without waiting (fire and forget counters)."""
        if self._client is None or self._closed:
            return
        client = self._client
        self._loop.loop().call_soon_threadsafe(fn, client)

    def run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the service loop and block the caller: for sync callers this saves
        creating an event loop per call. After :meth:`close` it runs on a throwaway loop (where
        the service's calls then fail as closed)."""
        if self._closed:
            return run_blocking(coro)
        return self._loop.run(coro)

    def query(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the service loop (where the client's state changes), blocking the caller;
        run in place when the loop is not running or this is its thread."""
        if not self._loop.running or self._loop.in_loop_thread():
            return fn()

        async def on_loop() -> T:
            return fn()

        return self._loop.run(on_loop())

    async def _shutdown(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.shutdown(asyncio.get_running_loop().time() + self._shutdown_seconds)

    def close(self) -> None:
        """Let in-flight calls finish (up to a few seconds), close the client, stop the thread."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        if self._loop.running:
            self._loop.run(self._shutdown())
            self._loop.stop()

    async def aclose(self) -> None:
        """:meth:`close` for async code: the caller's loop is not blocked while it waits."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        if self._loop.running:
            await self._loop.run_async(self._shutdown())
            self._loop.stop()
