"""Keep CPU-bound scoring off the event loop when it can take more than about a millisecond."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Callable, TypeVar

__all__ = ["INLINE_MAX_CHARS", "NON_ASCII_WEIGHT", "weighted_chars", "run_cpu_bound", "run_inline_here"]

T = TypeVar("T")

# Measured on the reference machine (benchmarks/README-local.md, "Cost per evaluated turn"): the
# local metrics read ASCII text at about 20 µs per KiB, so up to 24,000 characters (a 16 KiB
# turn's answer and documents) cost about half a millisecond and run inline; the executor hop
# itself costs 50-100 µs of CPU and, the work holding the GIL, frees the loop only at the
# interpreter's 5 ms switch interval anyway.
INLINE_MAX_CHARS = 24_000
# Non-ASCII text costs more per character: about 1.5x for typographic punctuation or accents,
# up to 40x for a script written without spaces (one new term per character: ~1 µs each when
# every bigram is new). It counts this many times, so what runs inline stays near a millisecond.
NON_ASCII_WEIGHT = 20

# True in the local worker process: its loop serves nothing else, so a thread hop only adds cost.
_INLINE_ONLY: ContextVar[bool] = ContextVar("rag_monitor_cpu_inline_only", default=False)


def run_inline_here() -> None:
    """From now on, in this context (and tasks created from it), score inline, never in a thread."""
    _INLINE_ONLY.set(True)


def weighted_chars(text: str, cap: int) -> int:
    """What ``text`` counts towards INLINE_MAX_CHARS when a metric reads at most ``cap`` characters of it."""
    return min(len(text), cap) * (1 if text.isascii() else NON_ASCII_WEIGHT)  # isascii: a flag, O(1)


async def run_cpu_bound(fn: Callable[..., T], *args: object, size: int, force_executor: bool = False) -> T:
    """``fn(*args)`` inline for small inputs, in the default executor otherwise."""
    if _INLINE_ONLY.get() or (size <= INLINE_MAX_CHARS and not force_executor):
        return fn(*args)
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)
