"""Test doubles for the judge: a manual clock and a standard request."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import Field

from monitor.judge.replies import Reason, ReplyModel, ReplyShape, whole_number
from monitor.judge.types import JudgeRequest

__all__ = ["FakeClock", "ScaledClock", "Graded", "reply_shape", "SCHEMA", "GOOD", "make_request", "is_probe"]


class FakeClock:
    """Time that moves only when someone sleeps (to the sleeper's wake-up time) or on
    :meth:`advance`. Concurrent sleepers never move time backwards."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    async def sleep(self, seconds: float, wake: asyncio.Event) -> bool:
        self.sleeps.append(seconds)
        if wake.is_set():
            return False
        self._now = max(self._now, self._now + max(0.0, seconds))
        await asyncio.sleep(0)
        return not wake.is_set()


class ScaledClock:
    """The loop's clock running ``factor`` times faster: a minute of budget window passes in
    ``60 / factor`` real seconds, with real I/O in between (unlike :class:`FakeClock`, concurrent
    sleepers do not push each other's time forward)."""

    def __init__(self, factor: float) -> None:
        self.factor = factor

    def now(self) -> float:
        return asyncio.get_running_loop().time() * self.factor

    async def sleep(self, seconds: float, wake: asyncio.Event) -> bool:
        if wake.is_set():
            return False
        try:
            await asyncio.wait_for(wake.wait(), max(0.0, seconds) / self.factor)
        except TimeoutError:
            return True
        return False


class Graded(ReplyModel):
    """The test reply: an integer score 1-5 and a reason."""

    score: Annotated[int, Field(ge=1, le=5), whole_number]
    reason: Reason


def reply_shape(name: str = "groundedness") -> ReplyShape[Graded]:
    return ReplyShape(name, Graded)


SCHEMA = reply_shape().json_schema

GOOD = {"score": 4, "reason": "every claim is supported by the context"}


def make_request(metric: str = "groundedness", *, max_output_tokens: int = 100) -> JudgeRequest[Graded]:
    return JudgeRequest(
        metric=metric,
        system="You grade groundedness from 1 to 5. Reply in JSON.",
        user="<context>Paris is the capital of France.</context>\n<answer>Paris.</answer>",
        reply=reply_shape(metric),
        max_output_tokens=max_output_tokens,
    )


def is_probe(body: Any) -> bool:
    """True for the client's rate-limit probe (one short user message, no system prompt), which
    belongs to no evaluation; every evaluation request carries a system prompt."""
    messages = body.get("messages", [])
    return len(messages) == 1 and messages[0].get("role") == "user"
