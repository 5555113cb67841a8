"""``rag-monitor inspect``: run saved OTLP bodies through the real assembler, print turns.

The user's tool for checking that their spans are understood: same decoder, same assembler code
as the server, no network.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from monitor.assembly.assembler import Assembler
from monitor.config import AssemblyConfig
from monitor.interfaces import NullTelemetry
from monitor.model import Turn
from monitor.receivers.decode import decode_logs, decode_traces, decompress, sniff_format

__all__ = ["inspect_files", "turn_to_json"]

_MAX_FILE = 256 * 1024 * 1024


class _Collect:
    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def consume_turn(self, turn: Turn) -> None:
        self.turns.append(turn)


def _read(path: Path) -> bytes:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        return decompress(raw, "gzip", _MAX_FILE)
    return raw


def turn_to_json(turn: Turn) -> dict[str, Any]:
    """The documented ``inspect`` output object for one turn."""
    return {
        "trace_id": turn.trace_id,
        "conversation_id": turn.conversation_id,
        "question": turn.question,
        "answer": turn.answer,
        "history": [{"role": m.role, "content": m.content} for m in turn.history],
        "documents": [{"id": d.id, "content": d.content, "score": d.score} for d in turn.documents],
        "system_prompt": turn.system_prompt,
        "request_model": turn.request_model,
        "response_model": turn.response_model,
        "usage": {"input_tokens": turn.usage.input_tokens, "output_tokens": turn.usage.output_tokens},
        "provider": turn.provider,
        "service": turn.service,
        "labels": dict(turn.labels),
        "response_id": turn.response_id,
        "chat_span_id": turn.chat_span_id,
        "latency_seconds": turn.latency_seconds,
        "error": turn.error,
        "convention": turn.convention,
    }


def inspect_files(traces: Iterable[Path], logs: Iterable[Path], config: AssemblyConfig) -> list[Turn]:
    """Decode every file (protobuf or OTLP/JSON, gzip allowed), assemble, return turns in order
    of their start time. Raises DecodeError naming nothing but the content problem; the CLI adds
    the file name."""
    sink = _Collect()
    assembler = Assembler(config.model_copy(update={"max_pending_traces": 10**9}), sink, NullTelemetry())
    for path in logs:
        body = _read(path)
        assembler.consume_logs(decode_logs(body, sniff_format(body)).records)
    for path in traces:
        body = _read(path)
        assembler.consume_spans(decode_traces(body, sniff_format(body)).records)
    assembler.flush()
    return sorted(sink.turns, key=lambda t: t.start_time_unix_nano)


def dumps(turn: Turn) -> str:
    return json.dumps(turn_to_json(turn), ensure_ascii=False)


