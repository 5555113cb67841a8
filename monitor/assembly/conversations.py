"""Group turns into conversations by conversation id (the trace id when the app sets none).

A conversation is open until no turn arrives for ``conversation_idle_seconds``; then it is
closed and handed downstream complete. Every turn is handed downstream as it arrives, because
evaluation is online: waiting for the close would delay every verdict by the idle timeout.

The tracker keeps no turn text: each turn carries its own history, and per conversation only a
turn count and the time it was last seen are kept (about 200 bytes), so 100,000 concurrent
conversations fit in a few tens of MiB whatever the turns' size. Past ``max_open_conversations``
the least recently active one is closed early (counted ``evicted``).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Protocol

from monitor.assembly.config import AssemblyConfig
from monitor.model import Conversation, Turn
from monitor.telemetry import Telemetry, counter

__all__ = ["ConversationSink", "ConversationTracker", "CONVERSATIONS_CLOSED"]

CONVERSATIONS_CLOSED = counter("rag_monitor_conversations_closed_total", "Conversations closed, by reason.", "reason")


class ConversationSink(Protocol):
    def turn_added(self, turn: Turn) -> None:
        """A new turn of an open conversation (``turn.conversation_id``). Must not block."""
        ...

    def conversation_closed(self, conversation: Conversation) -> None: ...


@dataclass(slots=True)
class _Open:
    turns: int = 0
    last_seen: float = 0.0


class ConversationTracker:
    """TurnConsumer + Component."""

    def __init__(self, config: AssemblyConfig, sink: ConversationSink, telemetry: Telemetry,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cfg = config
        self._sink = sink
        self._telemetry = telemetry
        self._clock = clock
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._task: asyncio.Task[None] | None = None

    @property
    def open_conversations(self) -> int:
        return len(self._open)

    def consume_turn(self, turn: Turn) -> None:
        conv = self._open.get(turn.conversation_id)
        if conv is None:
            while len(self._open) >= self._cfg.max_open_conversations:
                self._close(next(iter(self._open)), "evicted")
            conv = self._open[turn.conversation_id] = _Open()
        else:
            self._open.move_to_end(turn.conversation_id)
        conv.turns += 1
        conv.last_seen = self._clock()
        self._sink.turn_added(turn)

    def _close(self, conversation_id: str, reason: str) -> None:
        conv = self._open.pop(conversation_id, None)
        if conv is None:
            return
        self._telemetry.add(CONVERSATIONS_CLOSED, reason=reason)
        self._sink.conversation_closed(Conversation(conversation_id, conv.turns, True))

    def close_idle(self, now: float | None = None) -> int:
        """Close conversations idle for longer than the timeout; they sit in LRU order."""
        now = self._clock() if now is None else now
        limit = now - self._cfg.conversation_idle_seconds
        n = 0
        while self._open:
            cid, conv = next(iter(self._open.items()))
            if conv.last_seen > limit:
                break
            self._close(cid, "idle")
            n += 1
        return n

    def close_all(self, reason: str = "shutdown") -> None:
        for cid in list(self._open):
            self._close(cid, reason)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._sweep(), name="conversation-sweep")

    async def _sweep(self) -> None:
        interval = min(5.0, self._cfg.conversation_idle_seconds / 4)
        while True:
            await asyncio.sleep(interval)
            self.close_idle()

    async def shutdown(self, deadline: float) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.close_all()
