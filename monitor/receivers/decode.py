"""OTLP request bodies (protobuf or OTLP/JSON, optionally gzip) → SpanRecord / LogRecord.

Both wire forms are converted straight into the data model. JSON is *not* routed through
``json_format``: OTLP/JSON writes trace and span ids as hex (protobuf JSON would expect
base64), enums as integers and 64-bit integers as strings or numbers. Every type is checked,
and a bad body raises :class:`DecodeError` with a message that names the offending field.
Spans and log records that decode but cannot be used (missing or all-zero ids) are dropped and
counted per request, which the receiver reports in ``partial_success``.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson
from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from monitor.errors import DecodeError, PayloadTooLarge, UnsupportedMediaType
from monitor.model import AttributeSelection, LogRecord, SpanEvent, SpanRecord
from monitor.surrogates import may_hold_surrogates, replace_lone_surrogates

__all__ = [
    "PROTOBUF",
    "JSON",
    "Decoded",
    "DecodedSpans",
    "DecodedLogs",
    "media_type_of",
    "decompress",
    "decode_traces",
    "parse_trace_request",
    "trace_request_spans",
    "decode_trace_request",
    "decode_logs",
    "sniff_format",
    "MAX_VALUE_DEPTH",
    "DEFAULT_MAX_CHARS",
]

# AnyValue nesting (arrays/maps inside attribute values) past this depth is refused: no exporter
# writes it, and unbounded recursion is a way to crash a decoder.
MAX_VALUE_DEPTH = 32
DEFAULT_MAX_CHARS = 1024 * 1024

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


R = TypeVar("R", SpanRecord, LogRecord)


@dataclass(slots=True)
class Decoded(Generic[R]):
    """The usable records of one request, and how many were rejected for which reason."""

    records: list[R] = field(default_factory=list)
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    # Text values longer than ``max_chars`` are cut where they enter; ``truncated`` counts them.
    max_chars: int = DEFAULT_MAX_CHARS
    truncated: int = 0

    def text(self, value: str) -> str:
        if len(value) > self.max_chars:
            self.truncated += 1
            return value[: self.max_chars]
        return value

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1


DecodedSpans = Decoded[SpanRecord]
DecodedLogs = Decoded[LogRecord]


def media_type_of(content_type: str | None) -> str:
    """Map a Content-Type header to PROTOBUF or JSON; raise UnsupportedMediaType otherwise."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    if base in (PROTOBUF, "application/protobuf"):
        return PROTOBUF
    if base == JSON:
        return JSON
    raise UnsupportedMediaType(
        f"unsupported Content-Type {content_type!r}: send {PROTOBUF} or {JSON}"
    )


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """Undo Content-Encoding (identity, gzip, deflate) without ever holding more than ``limit``
    bytes: a gzip bomb fails fast instead of filling memory."""
    enc = (encoding or "identity").strip().lower()
    if enc in ("", "identity"):
        if len(body) > limit:
            raise PayloadTooLarge(f"body of {len(body)} bytes exceeds the limit of {limit}")
        return body
    if enc == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif enc == "deflate":
        wbits = zlib.MAX_WBITS
    else:
        raise UnsupportedMediaType(f"unsupported Content-Encoding {encoding!r}: use gzip or identity")
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise DecodeError(f"body is not valid {enc}: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise PayloadTooLarge(f"decompressed body exceeds the limit of {limit} bytes")
    if not inflater.eof:
        raise DecodeError(f"{enc} stream is truncated")
    return out


def sniff_format(body: bytes) -> str:
    """Guess the wire form of a saved body (for ``inspect``): JSON starts with ``{``."""
    stripped = body.lstrip()
    return JSON if stripped[:1] == b"{" else PROTOBUF


# --------------------------------------------------------------------------- protobuf


def _pb_any(v: Any, out: Decoded[Any], depth: int = 0) -> Any:
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return out.text(v.string_value)
    if kind == "int_value":
        return v.int_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "double_value":
        return v.double_value
    if kind in ("array_value", "kvlist_value") and depth >= MAX_VALUE_DEPTH:
        raise DecodeError(f"attribute value nested deeper than {MAX_VALUE_DEPTH} levels")
    if kind == "array_value":
        return [_pb_any(x, out, depth + 1) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_any(kv.value, out, depth + 1) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value
    return None


def _pb_attrs(kvs: Any, decoded: Decoded[Any]) -> dict[str, Any]:
    # Strings are most attribute values; test for them inline to save a call per attribute.
    out = {}
    cap = decoded.max_chars
    for kv in kvs:
        v = kv.value
        if v.WhichOneof("value") == "string_value":
            text = v.string_value
            out[kv.key] = text if len(text) <= cap else decoded.text(text)
        else:
            out[kv.key] = _pb_any(v, decoded)
    return out


def _pb_selected_attrs(kvs: Any, decoded: Decoded[Any], keys: frozenset[str], prefixes: tuple[str, ...]) -> dict[str, Any]:
    # Only the keys a reader needs: the value of any other key is never touched (no text copied,
    # no nested value walked), which is most of a span's attributes on HTTP/DB/plumbing spans.
    out = {}
    cap = decoded.max_chars
    for kv in kvs:
        key = kv.key
        if key not in keys and not key.startswith(prefixes):
            continue
        v = kv.value
        if v.WhichOneof("value") == "string_value":
            text = v.string_value
            out[key] = text if len(text) <= cap else decoded.text(text)
        else:
            out[key] = _pb_any(v, decoded)
    return out


def _parse_pb(cls: Any, body: bytes) -> Any:
    try:
        return cls.FromString(body)
    except (ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError(f"body is not a valid {cls.DESCRIPTOR.name} protobuf: {exc}") from None


def _pb_spans(req: Any, now_ns: int, max_chars: int, body_bytes: int,
              selection: AttributeSelection | None = None) -> DecodedSpans:
    out: DecodedSpans = Decoded(max_chars=max_chars)
    append = out.records.append
    keys, prefixes = (selection.keys, selection.prefixes) if selection is not None else (frozenset(), ())
    # Each span is charged its share of the body: what the assembler's byte budget counts.
    size = body_bytes // max(1, sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans))
    for rs in req.resource_spans:
        resource = _pb_attrs(rs.resource.attributes, out)
        for ss in rs.scope_spans:
            scope_name, scope_version = ss.scope.name, ss.scope.version
            for s in ss.spans:  # the per-span work is written inline: this loop runs for every span
                trace_id, span_id = s.trace_id.hex(), s.span_id.hex()
                if len(trace_id) != 32 or trace_id == _ZERO_TRACE or len(span_id) != 16 or span_id == _ZERO_SPAN:
                    out.reject("invalid_id")
                    continue
                start, end = s.start_time_unix_nano, s.end_time_unix_nano
                if not start or not end or end < start:
                    start, end = _times(start, end, now_ns)
                events = s.events
                status = s.status
                append(SpanRecord(
                    trace_id, span_id, s.parent_span_id.hex(), s.name, s.kind, start, end, status.code,
                    status.message,
                    _pb_attrs(s.attributes, out) if selection is None else _pb_selected_attrs(
                        s.attributes, out, keys, prefixes),
                    tuple(SpanEvent(e.name, e.time_unix_nano, _pb_attrs(e.attributes, out)) for e in events)
                    if events else (),
                    resource, scope_name, scope_version, size,
                ))
    return out


def _pb_logs(req: Any, now_ns: int, max_chars: int, body_bytes: int) -> DecodedLogs:
    out: DecodedLogs = Decoded(max_chars=max_chars)
    append = out.records.append
    size = body_bytes // max(1, sum(len(sl.log_records) for rl in req.resource_logs for sl in rl.scope_logs))
    for rl in req.resource_logs:
        resource = _pb_attrs(rl.resource.attributes, out)
        for sl in rl.scope_logs:
            scope_name = sl.scope.name
            for r in sl.log_records:
                trace_id, span_id = r.trace_id.hex(), r.span_id.hex()
                if trace_id == _ZERO_TRACE:
                    trace_id = ""
                if span_id == _ZERO_SPAN:
                    span_id = ""
                if trace_id and len(trace_id) != 32 or span_id and len(span_id) != 16:
                    out.reject("invalid_id")
                    continue
                ts = r.time_unix_nano or r.observed_time_unix_nano or now_ns
                body = _pb_any(r.body, out) if r.HasField("body") else None
                append(LogRecord(
                    trace_id, span_id, ts, r.event_name, body, _pb_attrs(r.attributes, out),
                    resource, scope_name, r.severity_number, size,
                ))
    return out


def _times(start: int, end: int, now_ns: int) -> tuple[int, int]:
    # A span without times still carries content; anchor it at arrival so ordering and the
    # decision wait keep working instead of dropping the span.
    if not start:
        start = end or now_ns
    if not end or end < start:
        end = start
    return start, end


# --------------------------------------------------------------------------- OTLP/JSON


class _J:
    """Typed accessors for OTLP/JSON that raise DecodeError naming the JSON path."""

    @staticmethod
    def obj(v: Any, path: str) -> dict[str, Any]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise DecodeError(f"{path}: expected an object, got {type(v).__name__}")
        return v

    @staticmethod
    def arr(v: Any, path: str) -> list[Any]:
        if v is None:
            return []
        if not isinstance(v, list):
            raise DecodeError(f"{path}: expected an array, got {type(v).__name__}")
        return v

    @staticmethod
    def string(v: Any, path: str) -> str:
        if v is None:
            return ""
        if not isinstance(v, str):
            raise DecodeError(f"{path}: expected a string, got {type(v).__name__}")
        return v

    @staticmethod
    def int64(v: Any, path: str) -> int:
        if v is None:
            return 0
        if isinstance(v, bool):
            raise DecodeError(f"{path}: expected an integer, got a boolean")
        if isinstance(v, int):
            return v
        if isinstance(v, str):
            try:
                return int(v)
            except ValueError:
                pass
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise DecodeError(f"{path}: expected an integer (number or decimal string), got {v!r:.40}")

    @staticmethod
    def hex_id(v: Any, path: str, size: int) -> str:
        s = _J.string(v, path).lower()
        if s and (len(s) != size * 2 or any(c not in "0123456789abcdef" for c in s)):
            raise DecodeError(f"{path}: expected {size * 2} hex digits, got {s[:40]!r}")
        return s


def _json_any(v: Any, path: str, out: Decoded[Any], depth: int = 0) -> Any:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise DecodeError(f"{path}: expected an AnyValue object, got {type(v).__name__}")
    if "stringValue" in v:
        return out.text(_J.string(v["stringValue"], path + ".stringValue"))
    if ("arrayValue" in v or "kvlistValue" in v) and depth >= MAX_VALUE_DEPTH:
        raise DecodeError(f"{path}: attribute value nested deeper than {MAX_VALUE_DEPTH} levels")
    if "intValue" in v:
        return _J.int64(v["intValue"], path + ".intValue")
    if "boolValue" in v:
        b = v["boolValue"]
        if not isinstance(b, bool):
            raise DecodeError(f"{path}.boolValue: expected a boolean")
        return b
    if "doubleValue" in v:
        d = v["doubleValue"]
        if isinstance(d, bool) or not isinstance(d, (int, float, str)):
            raise DecodeError(f"{path}.doubleValue: expected a number")
        try:
            return float(d)
        except ValueError:
            raise DecodeError(f"{path}.doubleValue: expected a number, got {d!r:.40}") from None
    if "arrayValue" in v:
        values = _J.arr(_J.obj(v["arrayValue"], path + ".arrayValue").get("values"), path)
        return [_json_any(x, f"{path}.arrayValue.values[{i}]", out, depth + 1) for i, x in enumerate(values)]
    if "kvlistValue" in v:
        values = _J.arr(_J.obj(v["kvlistValue"], path + ".kvlistValue").get("values"), path)
        return _json_attrs(values, path + ".kvlistValue.values", out, depth + 1)
    if "bytesValue" in v:
        try:
            return base64.b64decode(_J.string(v["bytesValue"], path), validate=True)
        except binascii.Error:
            raise DecodeError(f"{path}.bytesValue: not valid base64") from None
    return None


def _json_attrs(kvs: Any, path: str, decoded: Decoded[Any], depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, kv in enumerate(_J.arr(kvs, path)):
        p = f"{path}[{i}]"
        kv = _J.obj(kv, p)
        out[_J.string(kv.get("key"), p + ".key")] = _json_any(kv.get("value"), p + ".value", decoded, depth)
    return out


def _json_load(body: bytes) -> dict[str, Any]:
    try:
        doc = orjson.loads(body)  # about 40 % of json's time
    except orjson.JSONDecodeError:
        # What orjson refuses and json accepts (lone surrogate escapes, NaN, integers past 64
        # bits) goes to json, and so do real errors, which get json's message.
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, ValueError) as exc:
            raise DecodeError(f"body is not valid JSON: {exc}") from None
        except RecursionError:
            raise DecodeError("body is JSON nested too deeply to be an OTLP request") from None
        if may_hold_surrogates(body):  # "\ud800" parses to a str nothing downstream can encode
            doc = replace_lone_surrogates(doc)
    if not isinstance(doc, dict):
        raise DecodeError("body must be a JSON object")
    return doc


def _json_spans(doc: dict[str, Any], now_ns: int, max_chars: int, body_bytes: int,
                selection: AttributeSelection | None = None) -> DecodedSpans:
    out: DecodedSpans = Decoded(max_chars=max_chars)
    for i, rs in enumerate(_J.arr(doc.get("resourceSpans"), "resourceSpans")):
        p = f"resourceSpans[{i}]"
        rs = _J.obj(rs, p)
        resource = _json_attrs(_J.obj(rs.get("resource"), p + ".resource").get("attributes"), p + ".resource.attributes",
                               out)
        for j, ss in enumerate(_J.arr(rs.get("scopeSpans"), p + ".scopeSpans")):
            q = f"{p}.scopeSpans[{j}]"
            ss = _J.obj(ss, q)
            scope = _J.obj(ss.get("scope"), q + ".scope")
            scope_name = _J.string(scope.get("name"), q + ".scope.name")
            scope_version = _J.string(scope.get("version"), q + ".scope.version")
            for k, s in enumerate(_J.arr(ss.get("spans"), q + ".spans")):
                _json_span(_J.obj(s, f"{q}.spans[{k}]"), f"{q}.spans[{k}]", resource, scope_name, scope_version, now_ns, out)
    if out.records:  # charge each span its share of the body (the assembler's byte budget)
        size = body_bytes // len(out.records)
        if selection is None:
            out.records[:] = [r._replace(size=size) for r in out.records]
        else:  # every value was validated above; keep what the reader needs
            out.records[:] = [r._replace(size=size, attributes={k: v for k, v in r.attributes.items() if k in selection})
                              for r in out.records]
    return out


def _json_span(s: dict[str, Any], p: str, resource: dict[str, Any], scope_name: str,
               scope_version: str, now_ns: int, out: DecodedSpans) -> None:
    trace_id = _J.hex_id(s.get("traceId"), p + ".traceId", 16)
    span_id = _J.hex_id(s.get("spanId"), p + ".spanId", 8)
    parent = _J.hex_id(s.get("parentSpanId"), p + ".parentSpanId", 8)
    if not trace_id or trace_id == _ZERO_TRACE or not span_id or span_id == _ZERO_SPAN:
        out.reject("invalid_id")
        return
    start, end = _times(_J.int64(s.get("startTimeUnixNano"), p + ".startTimeUnixNano"),
                        _J.int64(s.get("endTimeUnixNano"), p + ".endTimeUnixNano"), now_ns)
    status = _J.obj(s.get("status"), p + ".status")
    events = tuple(
        SpanEvent(
            _J.string(_J.obj(e, f"{p}.events[{n}]").get("name"), f"{p}.events[{n}].name"),
            _J.int64(e.get("timeUnixNano"), f"{p}.events[{n}].timeUnixNano"),
            _json_attrs(e.get("attributes"), f"{p}.events[{n}].attributes", out),
        )
        for n, e in enumerate(_J.arr(s.get("events"), p + ".events"))
    )
    out.records.append(SpanRecord(
        trace_id, span_id, "" if parent == _ZERO_SPAN else parent,
        _J.string(s.get("name"), p + ".name"), _J.int64(s.get("kind"), p + ".kind"), start, end,
        _J.int64(status.get("code"), p + ".status.code"), _J.string(status.get("message"), p + ".status.message"),
        _json_attrs(s.get("attributes"), p + ".attributes", out), events, resource, scope_name, scope_version,
    ))


def _json_logs(doc: dict[str, Any], now_ns: int, max_chars: int, body_bytes: int) -> DecodedLogs:
    out: DecodedLogs = Decoded(max_chars=max_chars)
    for i, rl in enumerate(_J.arr(doc.get("resourceLogs"), "resourceLogs")):
        p = f"resourceLogs[{i}]"
        rl = _J.obj(rl, p)
        resource = _json_attrs(_J.obj(rl.get("resource"), p + ".resource").get("attributes"), p + ".resource.attributes",
                               out)
        for j, sl in enumerate(_J.arr(rl.get("scopeLogs"), p + ".scopeLogs")):
            q = f"{p}.scopeLogs[{j}]"
            sl = _J.obj(sl, q)
            scope_name = _J.string(_J.obj(sl.get("scope"), q + ".scope").get("name"), q + ".scope.name")
            for k, r in enumerate(_J.arr(sl.get("logRecords"), q + ".logRecords")):
                r_path = f"{q}.logRecords[{k}]"
                r = _J.obj(r, r_path)
                trace_id = _J.hex_id(r.get("traceId"), r_path + ".traceId", 16)
                span_id = _J.hex_id(r.get("spanId"), r_path + ".spanId", 8)
                ts = (_J.int64(r.get("timeUnixNano"), r_path + ".timeUnixNano")
                      or _J.int64(r.get("observedTimeUnixNano"), r_path + ".observedTimeUnixNano") or now_ns)
                out.records.append(LogRecord(
                    "" if trace_id == _ZERO_TRACE else trace_id, "" if span_id == _ZERO_SPAN else span_id,
                    ts, _J.string(r.get("eventName"), r_path + ".eventName"),
                    _json_any(r.get("body"), r_path + ".body", out),
                    _json_attrs(r.get("attributes"), r_path + ".attributes", out), resource, scope_name,
                    _J.int64(r.get("severityNumber"), r_path + ".severityNumber"),
                ))
    if out.records:  # each record's share of the body (the assembler's byte budget)
        size = body_bytes // len(out.records)
        out.records[:] = [r._replace(size=size) for r in out.records]
    return out


# --------------------------------------------------------------------------- entry points


def decode_traces(body: bytes, media_type: str, now_ns: int | None = None,
                  max_chars: int = DEFAULT_MAX_CHARS, selection: AttributeSelection | None = None) -> DecodedSpans:
    """Decode an ExportTraceServiceRequest body (already decompressed); text values are cut at
    ``max_chars`` (counted in ``truncated``). With a ``selection``, spans keep only the selected
    attributes (resource and event attributes are kept whole); from protobuf the others are
    skipped unread, from JSON (already parsed) they are validated, then dropped."""
    now_ns = now_ns or time.time_ns()
    if media_type == PROTOBUF:
        return decode_trace_request(parse_trace_request(body), len(body), now_ns, max_chars, selection)
    return _json_spans(_json_load(body), now_ns, max_chars, len(body), selection)


def parse_trace_request(body: bytes) -> Any:
    """Parse a protobuf ExportTraceServiceRequest without converting anything (upb parses in C
    and keeps string fields as views of the body, so this costs about 2 ms per MiB at worst)."""
    return _parse_pb(ExportTraceServiceRequest, body)


def trace_request_spans(request: Any) -> int:
    """How many spans a parsed request holds: what converting it will cost."""
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def decode_trace_request(request: Any, body_bytes: int, now_ns: int | None = None,
                         max_chars: int = DEFAULT_MAX_CHARS, selection: AttributeSelection | None = None) -> DecodedSpans:
    """Convert a request from :func:`parse_trace_request` (``body_bytes``: its encoded size, what
    the spans are charged), as :func:`decode_traces` does."""
    return _pb_spans(request, now_ns or time.time_ns(), max_chars, body_bytes, selection)


def decode_logs(body: bytes, media_type: str, now_ns: int | None = None,
                max_chars: int = DEFAULT_MAX_CHARS) -> DecodedLogs:
    """Decode an ExportLogsServiceRequest body (already decompressed)."""
    now_ns = now_ns or time.time_ns()
    if media_type == PROTOBUF:
        return _pb_logs(_parse_pb(ExportLogsServiceRequest, body), now_ns, max_chars, len(body))
    return _json_logs(_json_load(body), now_ns, max_chars, len(body))
