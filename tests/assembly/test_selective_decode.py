"""The sidecar decodes only the span attributes the assembly reads (``span_attributes_read``).

Every capture from the real libraries must assemble to the same turns whether its spans carry
every attribute or only the selected ones: a key a convention reads but does not declare in its
``reads`` would be lost at ingest, and shows up here as a differing field.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from monitor.assembly.assembler import Assembler
from monitor.assembly.config import AssemblyConfig, AttributeMapping
from monitor.assembly.turns import span_attributes_read
from monitor.telemetry import NullTelemetry
from monitor.model import AttributeSelection, Turn
from monitor.offline.inspect import turn_to_json
from monitor.receivers.decode import PROTOBUF, decode_logs, decode_traces, sniff_format
from tests.assembly.test_captures import CAPTURES, CASES, absent_fields, assert_turn_matches, expected_turns
from tests.support.otlp_payloads import _kv, rag_trace_spans, request


class _Turns:
    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def consume_turn(self, turn: Turn) -> None:
        self.turns.append(turn)


def _read(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def _assemble(case: str, selection: AttributeSelection | None, config: AssemblyConfig) -> list[dict]:
    sink = _Turns()
    assembler = Assembler(config.model_copy(update={"max_pending_traces": 10**9}), sink, NullTelemetry())
    directory = CAPTURES / case
    for path in sorted(directory.glob("logs-*")):
        body = _read(path)
        assembler.consume_logs(decode_logs(body, sniff_format(body)).records)
    for path in sorted(directory.glob("traces-*")):
        body = _read(path)
        assembler.consume_spans(decode_traces(body, sniff_format(body), None, config.max_attribute_chars,
                                              selection).records)
    assembler.flush()
    return sorted((turn_to_json(t) for t in sink.turns), key=lambda r: r["trace_id"])


@pytest.mark.parametrize("case", CASES)
def test_captures_assemble_alike_from_the_selected_attributes(case):
    config = AssemblyConfig()
    selected = _assemble(case, span_attributes_read(config.mapping), config)
    assert selected == _assemble(case, None, config)
    exp = expected_turns(case)
    assert len(selected) == len(exp)
    for got, want in zip(selected, exp):
        assert_turn_matches(got, want, absent_fields(case))


def test_unread_attributes_are_not_decoded_and_mapped_ones_are():
    mapping = AttributeMapping(question=["app.question"], labels={"route": "http.route"})
    selection = span_attributes_read(mapping)
    rng = random.Random(3)
    spans = rag_trace_spans(rng, rng.randbytes(16), 5, 1_000)
    for s in spans:
        s.attributes.append(_kv("app.question", "mapped"))
    records = decode_traces(request(spans).SerializeToString(), PROTOBUF, None, 1 << 20, selection).records
    keys = set().union(*(r.attributes for r in records))
    assert {"app.question", "http.route", "gen_ai.input.messages", "gen_ai.conversation.id"} <= keys
    assert not keys & {"db.system", "db.statement", "server.address", "server.port"}
    everything = decode_traces(request(spans).SerializeToString(), PROTOBUF).records
    assert {"db.system", "server.port"} <= set().union(*(r.attributes for r in everything))


def test_prefixed_keys_are_kept_and_the_json_form_selects_alike():
    selection = AttributeSelection(frozenset({"a"}), ("llm.input_messages.",))
    body = (b'{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},'
            b'"scopeSpans":[{"scope":{},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c",'
            b'"spanId":"eee19b7ec3c1b174","name":"s","attributes":['
            b'{"key":"a","value":{"intValue":"1"}},{"key":"b","value":{"stringValue":"x"}},'
            b'{"key":"llm.input_messages.0.message.role","value":{"stringValue":"user"}}]}]}]}]}')
    (record,) = decode_traces(body, "application/json", None, 1 << 20, selection).records
    assert dict(record.attributes) == {"a": 1, "llm.input_messages.0.message.role": "user"}
    assert dict(record.resource) == {"service.name": "s"}  # resource attributes are kept whole


def test_the_text_cap_and_the_nesting_limit_hold_for_selected_values():
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    from monitor.errors import DecodeError
    from monitor.receivers.decode import MAX_VALUE_DEPTH

    selection = AttributeSelection(frozenset({"gen_ai.input.messages", "deep"}))
    rng = random.Random(4)
    spans = rag_trace_spans(rng, rng.randbytes(16), 5, 1_000)
    spans[0].attributes.append(_kv("gen_ai.input.messages", "x" * 5_000))
    spans[0].attributes.append(_kv("app.unread", "y" * 5_000))
    decoded = decode_traces(request(spans).SerializeToString(), PROTOBUF, None, 1_000, selection)
    kept = [r.attributes["gen_ai.input.messages"] for r in decoded.records if "gen_ai.input.messages" in r.attributes]
    assert kept and all(len(v) <= 1_000 for v in kept)
    # The selected over-cap texts are cut and counted; the unread one is neither kept nor counted.
    assert decoded.truncated == sum(1 for s in spans for kv in s.attributes
                                    if kv.key == "gen_ai.input.messages" and len(kv.value.string_value) > 1_000)
    assert not any("app.unread" in r.attributes for r in decoded.records)

    value = AnyValue(string_value="leaf")
    for _ in range(MAX_VALUE_DEPTH + 5):
        outer = AnyValue()
        outer.array_value.values.append(value)
        value = outer
    spans[1].attributes.append(KeyValue(key="deep", value=value))
    with pytest.raises(DecodeError, match="nested deeper"):
        decode_traces(request(spans).SerializeToString(), PROTOBUF, None, 1_000, selection)
