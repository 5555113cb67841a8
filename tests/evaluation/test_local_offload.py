"""Where local scoring runs: inline for small (weighted) inputs, in the executor otherwise."""

from __future__ import annotations

import asyncio
import threading

from monitor.evaluation.local.offload import (
    INLINE_MAX_CHARS,
    NON_ASCII_WEIGHT,
    SPACELESS_WEIGHT,
    run_cpu_bound,
    run_inline_here,
    weighted_chars,
)


def test_non_ascii_text_weighs_more_and_the_cap_bounds_it() -> None:
    assert weighted_chars("a" * 100, 1_000) == 100
    assert weighted_chars("a" * 5_000, 1_000) == 1_000
    assert weighted_chars("it’s" * 1_000, 1_000) == 1_000 * NON_ASCII_WEIGHT
    assert weighted_chars("中" * 100, 1_000) == 100 * SPACELESS_WEIGHT
    assert weighted_chars("tent 帐篷 " * 100, 500) == 500 * SPACELESS_WEIGHT
    big = "中" * INLINE_MAX_CHARS
    assert weighted_chars(big, len(big)) > INLINE_MAX_CHARS  # not inline, however it is counted


async def test_small_inputs_run_inline_and_large_ones_in_the_executor() -> None:
    here = threading.get_ident()
    assert await run_cpu_bound(threading.get_ident, size=INLINE_MAX_CHARS) == here
    assert await run_cpu_bound(threading.get_ident, size=INLINE_MAX_CHARS + 1) != here
    assert await run_cpu_bound(threading.get_ident, size=10, force_executor=True) != here


async def test_the_worker_process_scores_everything_inline() -> None:
    async def in_worker() -> int:
        run_inline_here()  # what worker_process.serve does; the context ends with this task
        return await run_cpu_bound(threading.get_ident, size=10 * INLINE_MAX_CHARS, force_executor=True)

    assert await asyncio.create_task(in_worker()) == threading.get_ident()
    assert await run_cpu_bound(threading.get_ident, size=INLINE_MAX_CHARS + 1) != threading.get_ident()
