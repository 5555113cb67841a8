"""Time for the judge client, injectable so budgets, backoff and the breaker test fast.

``sleep`` takes a ``wake`` event so that shutdown cuts every retry or budget wait short: the
sleeper returns early instead of holding the process past its deadline.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

__all__ = ["Clock", "LoopClock"]


class Clock(Protocol):
    """Monotonic seconds and an interruptible sleep."""

    def now(self) -> float:
        """Monotonic time in seconds."""
        ...

    async def sleep(self, seconds: float, wake: asyncio.Event) -> bool:
        """Sleep ``seconds``; return False when ``wake`` was set before (or during) the sleep."""
        ...


class LoopClock:
    """The running event loop's clock (the production clock)."""

    def now(self) -> float:
        """``loop.time()``: the same clock as component deadlines."""
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float, wake: asyncio.Event) -> bool:
        """Wait for ``wake`` with a timeout: no extra task per sleep."""
        if wake.is_set():
            return False
        try:
            await asyncio.wait_for(wake.wait(), max(0.0, seconds))
        except TimeoutError:
            return True
        return False
