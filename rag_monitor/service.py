"""A remote scoring service (the LLM judge, Azure AI Content Safety) shared by metrics.

The service's async client lives on the service's own :class:`~rag_monitor.loop_thread.LoopThread`
and is created there on first use; callers on any thread or loop reach it through
:meth:`ServiceHandle.call`, which hops to that loop and back. One client per service object means
one set of budgets, retries, circuit breaker and connection pool however many metrics, threads
or loops use it.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Awaitable, Callable, Coroutine, Generic, Protocol, TypeVar

from rag_monitor.loop_thread import LoopThread, run_blocking

__all__ = ["AsyncClient", "ServiceHandle"]

T = TypeVar("T")


class AsyncClient(Protocol):
    async def start(self) -> None: ...

    async def shutdown(self, deadline: float) -> None: ...


C = TypeVar("C", bound=AsyncClient)


class _Slot(Generic[C]):
    """The started client, held apart from its :class:`ServiceHandle` so the handle's finalizer
    can reach it without keeping the handle alive."""

    def __init__(self) -> None:
        self.client: C | None = None


def _close(loop: LoopThread, slot: _Slot[Any], shutdown_seconds: float) -> None:
    """Shut the client down on its own loop and stop the loop: called by :meth:`ServiceHandle.close`,
    or by the handle's finalizer when a handle that was never closed is garbage-collected or the
    interpreter exits — so a forgotten ``close()`` costs no "Unclosed client session" warning."""
    client, slot.client = slot.client, None
    if not loop.running:
        return

    async def shutdown() -> None:
        if client is not None:
            await client.shutdown(asyncio.get_running_loop().time() + shutdown_seconds)

    if loop.in_loop_thread():  # collected on the loop's own thread: it cannot block on itself
        task = loop.loop().create_task(shutdown())
        task.add_done_callback(lambda _: loop.loop().stop())
        return
    loop.run(shutdown())
    loop.stop()


class ServiceHandle(Generic[C]):
    """Owns a client created by ``factory`` on a private loop thread."""

    def __init__(self, name: str, factory: Callable[[], C], shutdown_seconds: float = 5.0) -> None:
        self._factory = factory
        self._loop = LoopThread(name)
        self._slot: _Slot[C] = _Slot()
        self._shutdown_seconds = shutdown_seconds
        self._closed = False
        # Runs once: on close(), when the handle is collected unclosed, or at interpreter exit
        # (while the daemon loop thread still runs), whichever comes first.
        self._finalizer = weakref.finalize(self, _close, self._loop, self._slot, shutdown_seconds)

    @property
    def _client(self) -> C | None:
        return self._slot.client

    async def _started(self) -> C:
        # Runs on the service loop only, so no lock is needed around the lazy start.
        if self._slot.client is None:
            client = self._factory()
            await client.start()
            self._slot.client = client
        return self._slot.client

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

    def close(self) -> None:
        """Let in-flight calls finish (up to a few seconds), close the client, stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._finalizer()

    async def aclose(self) -> None:
        """:meth:`close` for async code: the caller's loop is not blocked while it waits."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        client, self._slot.client = self._slot.client, None
        if self._loop.running:
            async def shutdown() -> None:
                if client is not None:
                    await client.shutdown(asyncio.get_running_loop().time() + self._shutdown_seconds)

            await self._loop.run_async(shutdown())
            self._loop.stop()
