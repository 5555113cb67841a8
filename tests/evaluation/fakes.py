"""Test doubles for the evaluation tests: a scripted in-process judge and sample turns."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

from monitor.judge.types import JudgeError, JudgeReply, JudgeRequest
from monitor.model import Document, JudgeUsage, Message, Turn

__all__ = ["FakeJudge", "rag_turn", "USAGE"]

USAGE = JudgeUsage(prompt_tokens=100, completion_tokens=20, latency_seconds=0.5, calls=1)
Script = Mapping[str, Any] | JudgeError | Callable[[JudgeRequest], Mapping[str, Any]]


class FakeJudge:
    """Replies from a script keyed by request metric; records requests.

    A script entry is a reply object, a ``JudgeError`` to raise, or a function of the request.
    A list of entries is consumed in order (the last one repeats). Reply objects are validated
    against the request's declaration as the real client does (a ``JudgeError`` when invalid).
    """

    def __init__(self, script: Mapping[str, Script | Sequence[Script]] | None = None) -> None:
        self.script = dict(script or {})
        self.requests: list[JudgeRequest[Any]] = []
        self._calls: dict[str, int] = defaultdict(int)

    async def complete_json(self, request: JudgeRequest[Any]) -> JudgeReply[Any]:
        self.requests.append(request)
        entry = self.script.get(request.metric)
        if entry is None:
            raise AssertionError(f"no scripted reply for {request.metric}")
        if isinstance(entry, list):
            n = self._calls[request.metric]
            entry = entry[min(n, len(entry) - 1)]
        self._calls[request.metric] += 1
        if isinstance(entry, JudgeError):
            raise entry
        data = entry(request) if callable(entry) else entry
        try:
            value = request.reply.validate(data)
        except JudgeError as err:
            err.usage = USAGE
            raise
        return JudgeReply(value=value, data=data, usage=USAGE, raw_text="")


def rag_turn(**overrides: Any) -> Turn:
    """The seed's tent example as a Turn, with ``overrides`` applied."""
    fields: dict[str, Any] = dict(
        trace_id="t1",
        conversation_id="c1",
        question="Which tent is the most waterproof?",
        answer="The Alpine Explorer Tent is the most waterproof.",
        documents=(
            Document(id="d1", content="From our product list, the Alpine Explorer tent is the most waterproof."),
            Document(id="d2", content="The Adventure Dining Table has higher weight."),
        ),
        history=(Message("user", "Hi"), Message("assistant", "Hello! How can I help?")),
        system_prompt="You are the Contoso outdoor shop assistant. Answer only about our products.",
        ground_truth="The Alpine Explorer Tent has the highest rainfly waterproof rating at 3000m",
    )
    fields.update(overrides)
    return Turn(**fields)
