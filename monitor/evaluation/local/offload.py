"""Keep CPU-bound scoring off the event loop when it can take more than about a millisecond."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Callable, TypeVar

__all__ = ["INLINE_MAX_CHARS", "run_cpu_bound", "run_inline_here"]

T = TypeVar("T")

# Measured on the reference machine: tokenising and set-matching ~2,000 characters takes well
# under a millisecond, so smaller inputs run inline (an executor hop costs ~50-100 µs).
INLINE_MAX_CHARS = 2_000

# True in the local worker process: its loop serves nothing else, so a thread hop only adds cost.
_INLINE_ONLY: ContextVar[bool] = ContextVar("rag_monitor_cpu_inline_only", default=False)


def run_inline_here() -> None:
    """From now on, in this context (and tasks created from it), score inline, never in a thread."""
    _INLINE_ONLY.set(True)


async def run_cpu_bound(fn: Callable[..., T], *args: object, size: int, force_executor: bool = False) -> T:
    """``fn(*args)`` inline for small inputs, in the default executor otherwise."""
    if _INLINE_ONLY.get() or (size <= INLINE_MAX_CHARS and not force_executor):
        return fn(*args)
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)
