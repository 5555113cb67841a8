"""``rag-monitor inspect``: run saved OTLP bodies through the real assembler, print turns.

The user's tool for checking that their spans are understood: same decoder, same assembler code
as the server, no network. ``--explain`` says, per trace, what was found, what is missing and —
when a trace yields no turn — why, with the switch to change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from monitor.errors import DecodeError, PayloadTooLarge
from monitor.assembly.assembler import Assembler
from monitor.assembly.config import AssemblyConfig
from monitor.assembly.turns import Explanation, NoTurn
from monitor.telemetry import NullTelemetry
from monitor.model import Turn
from monitor.receivers.decode import JSON, decode_logs, decode_traces, decompress, sniff_format

__all__ = ["InspectError", "TraceReport", "inspect_files", "inspect_traces", "turn_to_json", "explain_text"]


class InspectError(ValueError):
    """A file that cannot be inspected; the message names the file and the format tried."""

_MAX_FILE = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TraceReport:
    """One trace's outcome: its turn, or the reason and hint why there is none."""

    trace_id: str
    turn: Turn | None
    reason: str | None
    hint: str | None
    explanation: Explanation
    spans: int
    logs: int


class _Collect:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.reports: list[TraceReport] = []

    def consume_turn(self, turn: Turn) -> None:
        self.turns.append(turn)

    def trace_done(self, trace_id: str, turn: Turn | None, no_turn: NoTurn | None, explanation: Explanation,
                   spans: int, logs: int) -> None:
        self.reports.append(TraceReport(trace_id, turn, no_turn.reason if no_turn else None,
                                        no_turn.hint if no_turn else None, explanation, spans, logs))


def _read(path: Path, what: str) -> tuple[bytes, str]:
    """The (decompressed) body of ``path`` and its wire format; raises InspectError naming both."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InspectError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise InspectError(f"{path}: the file is empty; expected a saved OTLP {what} export "
                           "(protobuf or OTLP/JSON, gzip ok)")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = decompress(raw, "gzip", _MAX_FILE)
        except (DecodeError, PayloadTooLarge) as exc:
            raise InspectError(f"{path}: gzip: {exc}") from None
    return raw, sniff_format(raw)


def _decode_error(path: Path, what: str, fmt: str, exc: Exception) -> InspectError:
    if fmt == JSON:
        return InspectError(f"{path}: not a valid OTLP/JSON {what} export: {exc}")
    return InspectError(f"{path}: neither OTLP/JSON (it does not start with '{{') nor an OTLP protobuf {what} "
                        f"export ({exc})")


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


def inspect_traces(traces: Iterable[Path], logs: Iterable[Path], config: AssemblyConfig) -> list[TraceReport]:
    """Decode every file (protobuf or OTLP/JSON, gzip allowed), assemble, return one report per
    trace in order of start. Raises :class:`InspectError` naming the file and the format tried
    (an empty file, garbage, a body with no spans)."""
    sink = _Collect()
    assembler = Assembler(config.model_copy(update={"max_pending_traces": 10**9}), sink, NullTelemetry(),
                          observer=sink)
    for path in logs:
        body, fmt = _read(path, "logs")
        try:
            records = decode_logs(body, fmt, None, config.max_attribute_chars).records
        except (DecodeError, PayloadTooLarge) as exc:
            raise _decode_error(path, "logs", fmt, exc) from None
        assembler.consume_logs(records)
    for path in traces:
        body, fmt = _read(path, "trace")
        try:
            spans = decode_traces(body, fmt, None, config.max_attribute_chars).records
        except (DecodeError, PayloadTooLarge) as exc:
            raise _decode_error(path, "trace", fmt, exc) from None
        if not spans:
            shown = "OTLP/JSON" if fmt == JSON else "OTLP protobuf"
            raise InspectError(f"{path}: read as {shown} but it holds no spans; expected a saved "
                               "ExportTraceServiceRequest (a --logs file goes after --logs)")
        assembler.consume_spans(spans)
    assembler.flush()
    return sink.reports


def inspect_files(traces: Iterable[Path], logs: Iterable[Path], config: AssemblyConfig) -> list[Turn]:
    """The turns of :func:`inspect_traces`, in order of their start time."""
    turns = [r.turn for r in inspect_traces(traces, logs, config) if r.turn is not None]
    return sorted(turns, key=lambda t: t.start_time_unix_nano)


def _clip(text: str | None, n: int = 90) -> str:
    if text is None:
        return "—"
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= n else flat[: n - 1] + "…", ensure_ascii=False)


def explain_text(report: TraceReport) -> str:
    """A person-readable account of one trace."""
    ex = report.explanation
    head = f"trace {report.trace_id}: {report.spans} spans, {report.logs} log records"
    lines = [head]
    if ex.instrumentations:
        lines.append(f"  instrumentation scopes: {', '.join(ex.instrumentations)}")
    turn = report.turn
    if turn is None:
        lines.append(f"  NO TURN ({report.reason}): {report.hint}")
    else:
        lines.append(f"  turn: question {_clip(turn.question)}")
        lines.append(f"        answer {_clip(turn.answer)}")
        lines.append(f"        {len(turn.documents)} documents, {len(turn.history)} history messages, "
                     f"system prompt {'yes' if turn.system_prompt else 'no'}, conversation {turn.conversation_id}, "
                     f"model {turn.request_model or '—'} → {turn.response_model or '—'}, "
                     f"tokens {turn.usage.input_tokens}/{turn.usage.output_tokens}")
    for note in ex.notes:
        lines.append(f"  - {note}")
    if ex.missing:
        lines.append(f"  missing: {', '.join(m.replace('_', ' ') for m in ex.missing)}")
    return "\n".join(lines)


def dumps(turn: Turn) -> str:
    return json.dumps(turn_to_json(turn), ensure_ascii=False)
