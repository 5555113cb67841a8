"""Load generators for the ingest benchmark: separate processes posting OTLP/HTTP protobuf bodies
with fresh trace ids and conversation ids drawn round robin from a pool of ``conversations``.

Process ``i`` of ``procs`` sends conversation ids ``i, i + procs, i + 2·procs, …`` modulo the
pool, so between them every conversation of the pool gets a turn before any gets a second one:
with a pool of 100k the sidecar sees as many distinct open conversations as the load can reach.
Only loopback; each process runs its own event loop and keep-alive connections.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from ingest_bodies import TRACES_PER_BODY, BodyTemplate, conversation_id, render

__all__ = ["LoadPlan", "load_process", "post_bodies"]

_HEADERS = {"Content-Type": "application/x-protobuf"}


@dataclass(frozen=True, slots=True)
class LoadPlan:
    port: int
    connections: int
    seconds: float
    conversations: int  # size of the conversation-id pool
    procs: int = 1
    index: int = 0
    max_seconds: float = 0.0  # past ``seconds``, keep on until ``min_ids`` ids were sent, up to this
    min_ids: int = 0  # of this process's share of the pool


class _Ids:
    """Round-robin conversation ids of one process (its share of the pool)."""

    def __init__(self, plan: LoadPlan) -> None:
        self._plan = plan
        self.taken = 0

    def take(self, n: int) -> list[bytes]:
        p = self._plan
        out = [conversation_id((self.taken + j) * p.procs % p.conversations + p.index) for j in range(n)]
        self.taken += n
        return out


async def post_bodies(plan: LoadPlan, templates: list[BodyTemplate]) -> dict[str, Any]:
    """Post ``templates`` round robin over ``plan.connections`` connections for ``plan.seconds``."""
    stats: dict[str, Any] = {"ok": 0, "503": 0, "other": 0, "spans_ok": 0, "turns_ok": 0, "errors": 0}
    ids = _Ids(plan)
    url = f"http://127.0.0.1:{plan.port}/v1/traces"
    start = time.perf_counter()
    soft, hard = start + plan.seconds, start + max(plan.seconds, plan.max_seconds)

    def more() -> bool:
        now = time.perf_counter()
        return now < soft or (now < hard and ids.taken < plan.min_ids)

    async def worker(i: int, session: aiohttp.ClientSession) -> None:
        k = i
        while more():
            template = templates[k % len(templates)]
            k += plan.connections
            body = render(template, ids.take(TRACES_PER_BODY), os.urandom(8))
            try:
                async with session.post(url, data=body, headers=_HEADERS) as r:
                    await r.read()
            except aiohttp.ClientError:
                stats["errors"] += 1
                await asyncio.sleep(0.05)
                continue
            if r.status == 200:
                stats["ok"] += 1
                stats["spans_ok"] += template.spans
                stats["turns_ok"] += TRACES_PER_BODY
            elif r.status == 503:
                stats["503"] += 1
                await asyncio.sleep(0.05)  # what an OTLP exporter does with Retry-After, shortened
            else:
                stats["other"] += 1

    connector = aiohttp.TCPConnector(limit=plan.connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(i, session) for i in range(plan.connections)))
    stats["ids_taken"] = ids.taken
    return stats


def load_process(plan: LoadPlan, templates: list[BodyTemplate], ready: Any, go: Any, out: Any) -> None:
    """Entry point of one load-generator process: wait for ``go``, post, put the stats on ``out``."""
    ready.set()
    if not go.wait(120):
        out.put({"index": plan.index, "error": "never started"})
        return
    try:
        cpu0 = time.process_time()
        stats = asyncio.run(post_bodies(plan, templates))
        out.put({"index": plan.index, **stats, "cpu_seconds": time.process_time() - cpu0})
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the run still has figures
        out.put({"index": plan.index, "error": repr(exc)})
