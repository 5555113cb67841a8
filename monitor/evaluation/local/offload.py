"""Keep CPU-bound scoring off the event loop when it can take more than about a millisecond."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Callable, TypeVar

from monitor.evaluation.local.text import has_spaceless

__all__ = ["INLINE_MAX_CHARS", "NON_ASCII_WEIGHT", "SPACELESS_WEIGHT", "weighted_chars", "script_weight", "run_cpu_bound", "run_inline_here"]

T = TypeVar("T")

# Measured on the reference machine (benchmarks/README-local.md, "Cost per evaluated turn"): the
# local metrics read ASCII text at about 17 µs per KiB, so up to 48,000 characters (a 16 KiB
# turn's answer and documents, twice over) cost under a millisecond and run inline; the
# executor hop itself costs 50-100 µs of CPU and, the work holding the GIL, frees the loop only
# at the interpreter's 5 ms switch interval anyway.
INLINE_MAX_CHARS = 48_000
# Other text costs more per character, and counts this many times so what runs inline stays
# under a millisecond: typographic punctuation or accents about 1.5x; a script written without
# spaces up to 40x (a new bigram term per character, ~0.7 µs each when every bigram is new).
NON_ASCII_WEIGHT = 2
SPACELESS_WEIGHT = 40

# True in the local worker process: its loop serves nothing else, so a thread hop only adds cost.
_INLINE_ONLY: ContextVar[bool] = ContextVar("rag_monitor_cpu_inline_only", default=False)


def run_inline_here() -> None:
    """From now on, in this context (and tasks created from it), score inline, never in a thread."""
    _INLINE_ONLY.set(True)


def weighted_chars(text: str, cap: int, per_char: int = 1) -> int:
    """What ``text`` counts towards INLINE_MAX_CHARS when a metric reads at most ``cap`` characters
    of it and costs ``per_char`` times what lexical groundedness costs per ASCII character."""
    chars = min(len(text), cap) * per_char
    return chars * script_weight(text, cap, chars)


def script_weight(text: str, cap: int, chars: int = 0) -> int:
    """1 for ASCII, NON_ASCII_WEIGHT, or SPACELESS_WEIGHT for a script written without spaces
    (looked for only when ``chars``, what the text counts otherwise, could still run inline)."""
    if text.isascii():  # a flag: O(1)
        return 1
    if chars * NON_ASCII_WEIGHT > INLINE_MAX_CHARS:
        return NON_ASCII_WEIGHT  # off the loop whatever the script: no need to look
    return SPACELESS_WEIGHT if has_spaceless(text[:cap]) else NON_ASCII_WEIGHT


async def run_cpu_bound(fn: Callable[..., T], *args: object, size: int, force_executor: bool = False) -> T:
    """``fn(*args)`` inline for small inputs, in the default executor otherwise."""
    if _INLINE_ONLY.get() or (size <= INLINE_MAX_CHARS and not force_executor):
        return fn(*args)
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)
