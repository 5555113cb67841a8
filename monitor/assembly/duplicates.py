"""One model call recorded by two instrumentations: a framework's chat span (LangChain's) and its
client library's (openai's), both with content. Counted twice, the turn's usage doubles and its
model may be the framework's idea of it (the requested one). Pure functions over one trace.
"""

from __future__ import annotations

from typing import MutableMapping, Sequence

from monitor.assembly.conventions.base import LlmCall
from monitor.model import Message, SpanRecord

__all__ = ["one_call_twice"]


def one_call_twice(leaves: Sequence[SpanRecord],
                   calls: MutableMapping[str, LlmCall]) -> list[tuple[SpanRecord, SpanRecord]]:
    """Pairs ``(kept, dropped)`` of chat spans that record one call: two instrumentation scopes,
    the same input messages, overlapping in time, parent/child or siblings. The span that saw the
    response (a response id, a served model unlike the requested one; else the inner one) is kept
    and its call in ``calls`` gets the other's gaps filled in, so usage counts once and the served
    model wins. Calls with different inputs (a query rewrite before the answer), one library's own
    steps and calls one after the other are never paired."""
    by_inputs: dict[tuple[Message, ...], list[SpanRecord]] = {}
    for s in leaves:
        call = calls[s.span_id]
        if call.inputs:
            by_inputs.setdefault(tuple(call.inputs), []).append(s)
    pairs: list[tuple[SpanRecord, SpanRecord]] = []
    dropped: set[str] = set()
    for group in by_inputs.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if a.span_id in dropped or b.span_id in dropped or not _one_call(a, b):
                    continue
                keep, drop = sorted((a, b), key=lambda s: _served_first(s, calls[s.span_id]))
                calls[keep.span_id] = calls[keep.span_id].merge(calls[drop.span_id])
                dropped.add(drop.span_id)
                pairs.append((keep, drop))
    return pairs


def _served_first(span: SpanRecord, call: LlmCall) -> tuple[bool, bool, int]:
    served = call.response_model is not None and call.response_model != call.request_model
    # The client span sits inside the framework's: it starts later.
    return call.response_id is None, not served, -span.start_time_unix_nano


def _one_call(a: SpanRecord, b: SpanRecord) -> bool:
    # Two instrumentations (a framework's and its client library's); one library's two spans are
    # two calls even with the same text (an agent's steps differ only in tool messages).
    if a.scope_name == b.scope_name:
        return False
    overlap = a.start_time_unix_nano < b.end_time_unix_nano and b.start_time_unix_nano < a.end_time_unix_nano
    related = (a.parent_span_id == b.parent_span_id or a.parent_span_id == b.span_id
               or b.parent_span_id == a.span_id)
    return overlap and related
