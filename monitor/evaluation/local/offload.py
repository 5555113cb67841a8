"""Keep CPU-bound scoring off the event loop when it can take more than about a millisecond."""

from __future__ import annotations

import asyncio
from typing import Callable, TypeVar

__all__ = ["INLINE_MAX_CHARS", "run_cpu_bound"]

T = TypeVar("T")

# Measured on the reference machine: tokenising and set-matching ~2,000 characters takes well
# under a millisecond, so smaller inputs run inline (an executor hop costs ~50-100 µs).
INLINE_MAX_CHARS = 2_000


async def run_cpu_bound(fn: Callable[..., T], *args: object, size: int, force_executor: bool = False) -> T:
    """``fn(*args)`` inline for small inputs, in the default executor otherwise."""
    if size <= INLINE_MAX_CHARS and not force_executor:
        return fn(*args)
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)
