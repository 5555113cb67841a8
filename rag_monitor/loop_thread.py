"""One event loop on its own thread, owned by a :class:`~rag_monitor.Judge`.

Why a thread: the judge client's HTTP session, concurrency slots and budget windows belong to
one event loop, and a judge is meant to be configured once and shared by every metric, sync or
async, from any thread or loop (a notebook, a pytest test, a web service). Running every judge
call on the judge's own loop keeps one budget, one circuit breaker and one connection pool for
all of them; ``score()`` can then block on that loop even where the caller's thread already
runs a loop (Jupyter), and ``ascore()`` awaits it without blocking the caller's loop.

The thread starts on first use (nothing happens at construction) and stops on :meth:`stop`.
It is a daemon thread, so a forgotten ``close()`` never keeps the interpreter alive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine, TypeVar

__all__ = ["LoopThread", "run_blocking"]

T = TypeVar("T")


class LoopThread:
    """An event loop running in a background thread; coroutines are submitted to it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._loop is not None

    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop, started on first call."""
        with self._lock:
            if self._loop is None:
                ready = threading.Event()
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._run, args=(loop, ready), name=self._name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def in_loop_thread(self) -> bool:
        """True when called from the loop's own thread (where blocking on it would deadlock)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; the returned future is safe to use from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and block the calling thread until it is done."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("blocking call made from the judge's own loop; use the async API there")
        return self.submit(coro).result()

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and await it from another loop (cancellation propagates)."""
        if self.in_loop_thread():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def stop(self) -> None:
        """Stop the loop and join the thread. Safe twice and before first use."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if threading.current_thread() is not thread:
            thread.join()


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code.

    With no loop running in this thread that is :func:`asyncio.run`. Where one already runs
    (a Jupyter cell), ``asyncio.run`` is refused, so the coroutine runs on a short-lived helper
    thread with its own loop while this thread waits.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rag-monitor-sync") as pool:
        return pool.submit(asyncio.run, coro).result()
