"""The fleet benchmark's traffic: one paced OTLP/HTTP stream whose conversations have their turns
spread over it, sent from a process of its own so its CPU is never the sidecar's.

**Conversations.** Turn ``k`` of the stream (``k`` = 0, 1, 2, … over every trace sent, 20 a body)
is turn ``j = k mod T`` of conversation ``k div T − j·W + (T−1)·W`` (``T`` turns a conversation,
``W`` conversations open at a time). So every conversation's turns are ``T·W`` turns apart (at 400
turns/s and W = 400, 3 s), one turn in ``T`` opens a new conversation, and a body's 20 traces all
belong to different conversations. The first ``(T−1)·W`` turns of the stream include later turns
of conversations whose first turn was never sent: to the sidecar they are new ones; the warm-up
covers them.

**Pacing.** Body ``i`` leaves at ``t0 + i / rate`` (open loop: a slow reply does not delay the next
send; at most ``max_in_flight`` requests in flight, past which a send waits and counts as late).
Bodies come from ``ingest_bodies`` (5 spans a trace, 20 traces a body) with fresh trace ids and
the stream's conversation ids filled in.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from ingest_bodies import TRACES_PER_BODY, BodyTemplate, conversation_id, render

__all__ = ["Stream", "sender_process"]

_HEADERS = {"Content-Type": "application/x-protobuf"}


@dataclass(frozen=True, slots=True)
class Stream:
    turns_per_conversation: int = 3
    open_conversations: int = 400

    def conversation(self, k: int) -> int:
        t, w = self.turns_per_conversation, self.open_conversations
        j = k % t
        return k // t - j * w + (t - 1) * w

    def ids(self, k: int) -> list[bytes]:
        return [conversation_id(self.conversation(k + t)) for t in range(TRACES_PER_BODY)]


async def _send(port: int, templates: list[BodyTemplate], rate: float, stream: Stream, stop: Any,
                max_in_flight: int) -> dict[str, Any]:
    stats: dict[str, Any] = {"bodies": 0, "ok": 0, "non_200": 0, "errors": 0, "late": 0, "max_late_s": 0.0,
                             "spans": 0, "turns": 0}
    url = f"http://127.0.0.1:{port}/v1/traces"
    slots = asyncio.Semaphore(max_in_flight)
    tasks: set[asyncio.Task[None]] = set()

    async def post(session: aiohttp.ClientSession, body: bytes, spans: int) -> None:
        try:
            async with session.post(url, data=body, headers=_HEADERS) as r:
                await r.read()
                if r.status == 200:
                    stats["ok"] += 1
                    stats["spans"] += spans
                    stats["turns"] += TRACES_PER_BODY
                else:
                    stats["non_200"] += 1
        except aiohttp.ClientError:
            stats["errors"] += 1
        finally:
            slots.release()

    connector = aiohttp.TCPConnector(limit=max_in_flight)
    async with aiohttp.ClientSession(connector=connector) as session:
        t0 = time.perf_counter()
        i = 0
        while not stop.is_set():
            due = t0 + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()
            late = time.perf_counter() - due
            if late > 0.05:
                stats["late"] += 1
            stats["max_late_s"] = max(stats["max_late_s"], late)
            template = templates[i % len(templates)]
            body = render(template, stream.ids(i * TRACES_PER_BODY), os.urandom(8))
            task = asyncio.create_task(post(session, body, template.spans))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            i += 1
            stats["bodies"] = i
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        stats["seconds"] = time.perf_counter() - t0
    return stats


def sender_process(port: int, templates: list[BodyTemplate], rate: float, stream: Stream,
                   ready: Any, go: Any, stop: Any, out: Any, max_in_flight: int = 16) -> None:
    """Entry point of the sender process: wait for ``go``, send until ``stop``, put the stats on ``out``."""
    ready.set()
    if not go.wait(300):
        out.put({"error": "never started"})
        return
    try:
        cpu0 = time.process_time()
        stats = asyncio.run(_send(port, templates, rate, stream, stop, max_in_flight))
        out.put({**stats, "cpu_seconds": time.process_time() - cpu0})
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the run still has figures
        out.put({"error": repr(exc)})
