"""``gen_ai.evaluation.result`` log records, received by a real OTLP receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, SeverityNumber

from exporters.config import EvaluationEventsConfig
from exporters.evaluation_events import EVENT_NAME, MAX_EXPLANATION_CHARS, QUEUE, EvaluationEvents, event_attributes
from monitor.model import EvaluationResult, Score, ScoreStatus
from monitor.telemetry import QUEUE_DROPPED
from tests.exporters.results import result, score
from tests.support.otlp_sink import OtlpGrpcSink, OtlpHttpSink, attributes, log_records, value_of
from tests.support.recording import RecordingTelemetry

SERVICE = "rag-monitor-under-test"

pytestmark = pytest.mark.usefixtures("clean_otel_env")  # http_sink, grpc_sink: tests/exporters/conftest.py


def _config(**fields: Any) -> EvaluationEventsConfig:
    return EvaluationEventsConfig(**{"enabled": True, "timeout_seconds": 5.0, "schedule_delay_seconds": 0.05,
                                     **fields})


async def _stop(events: EvaluationEvents, seconds: float = 5.0) -> None:
    await events.shutdown(asyncio.get_running_loop().time() + seconds)


def _dropped(telemetry: RecordingTelemetry) -> int:
    return int(telemetry.value(QUEUE_DROPPED, queue=QUEUE))


def _records(sink: OtlpHttpSink | OtlpGrpcSink) -> list[LogRecord]:
    return [record for _, _, record in log_records(sink.of("logs"))]


def _by_metric(sink: OtlpHttpSink | OtlpGrpcSink) -> dict[str, LogRecord]:
    return {attributes(r.attributes)["gen_ai.evaluation.name"]: r for r in _records(sink)}


def _severity(metric: str, value: float, label: str) -> Score:
    return Score(metric=metric, value=value, scale=(0.0, 7.0), defect=True, label=label, reason="graphic threat")


async def test_one_record_per_score_on_the_evaluated_chat_span(http_sink: OtlpHttpSink) -> None:
    telemetry = RecordingTelemetry()
    events = EvaluationEvents(_config(endpoint=http_sink.base_url, headers={"Authorization": "Bearer ev"}),
                              SERVICE, telemetry)
    await events.start()
    long_reason = "The answer cites the policy. " * 100
    evaluated = result(
        score("groundedness", 2.0, defect=True, reason=long_reason),
        score("relevance", 5.0, defect=False, reason="on topic"),
        _severity("violence", 5.0, "Medium"),
        Score(metric="coherence", value=None, scale=(1.0, 5.0), status=ScoreStatus.ERROR, error_type="timeout",
              reason="judge timed out after 30 s"),
        score("similarity", None, status=ScoreStatus.SKIPPED),  # no ground truth: no record
        weight=4.0, response_id="chatcmpl-42")
    events.consume_result(evaluated)
    await _stop(events)
    await http_sink.wait_until(lambda: len(_records(http_sink)) >= 4)

    turn = evaluated.turn
    assert http_sink.of("logs")[-1].headers["authorization"] == "Bearer ev"
    resource, scope, _ = next(log_records(http_sink.of("logs")))
    assert attributes(resource.attributes)["service.name"] == SERVICE
    assert scope == "rag-monitor"
    records = _by_metric(http_sink)
    assert set(records) == {"groundedness", "relevance", "violence", "coherence"}
    for record in records.values():
        assert record.event_name == EVENT_NAME
        assert record.trace_id == bytes.fromhex(turn.trace_id)
        assert record.span_id == bytes.fromhex(turn.chat_span_id or "")
        assert record.time_unix_nano > 0 and record.observed_time_unix_nano > 0
        assert record.severity_number == SeverityNumber.SEVERITY_NUMBER_INFO
        assert value_of(record.body) is None

    common = {"gen_ai.response.id": "chatcmpl-42", "gen_ai.conversation.id": turn.conversation_id,
              "rag_monitor.sampling.weight": 4.0}
    grounded = attributes(records["groundedness"].attributes)
    explanation = grounded.pop("gen_ai.evaluation.explanation")
    assert len(explanation) == MAX_EXPLANATION_CHARS and long_reason.startswith(explanation[:-1])
    assert grounded == {"gen_ai.evaluation.name": "groundedness", "gen_ai.evaluation.score.value": 2.0,
                        "gen_ai.evaluation.score.label": "fail", "rag_monitor.evaluation.outcome": "defect",
                        "rag_monitor.evaluation.score.min": 1.0, "rag_monitor.evaluation.score.max": 5.0, **common}
    relevant = attributes(records["relevance"].attributes)
    assert relevant["gen_ai.evaluation.score.label"] == "pass"
    assert relevant["gen_ai.evaluation.explanation"] == "on topic"
    violence = attributes(records["violence"].attributes)
    assert (violence["gen_ai.evaluation.score.value"], violence["gen_ai.evaluation.score.label"]) == (5.0, "Medium")
    assert violence["rag_monitor.evaluation.outcome"] == "defect"
    assert violence["rag_monitor.evaluation.score.max"] == 7.0
    failed = attributes(records["coherence"].attributes)
    assert failed["error.type"] == "timeout"
    assert failed["gen_ai.evaluation.explanation"] == "judge timed out after 30 s"
    assert failed["rag_monitor.evaluation.outcome"] == "error"
    assert "gen_ai.evaluation.score.value" not in failed and "gen_ai.evaluation.score.label" not in failed
    assert _dropped(telemetry) == 0


async def test_grpc_and_unknown_chat_span_and_explanations_off(grpc_sink: OtlpGrpcSink) -> None:
    events = EvaluationEvents(_config(protocol="grpc", endpoint=grpc_sink.endpoint, include_explanation=False,
                                      headers={"X-Tenant": "acme"}), SERVICE, RecordingTelemetry())
    await events.start()
    known = result(score("fluency", 4.0, reason="reads well"))
    unknown = result(score("coherence", 4.0))
    unknown = dataclasses.replace(unknown, turn=dataclasses.replace(unknown.turn, chat_span_id=None))
    events.consume_result(known)
    events.consume_result(unknown)
    await grpc_sink.wait_until(lambda: len(_records(grpc_sink)) == 2)  # batched by the schedule delay
    await _stop(events)
    assert grpc_sink.of("logs")[0].headers["x-tenant"] == "acme"
    records = _by_metric(grpc_sink)
    assert records["fluency"].span_id == bytes.fromhex(known.turn.chat_span_id or "")
    assert records["coherence"].trace_id == bytes.fromhex(unknown.turn.trace_id)
    assert records["coherence"].span_id == b""  # not a made-up span
    assert "gen_ai.evaluation.explanation" not in attributes(records["fluency"].attributes)
    assert "gen_ai.response.id" not in attributes(records["fluency"].attributes)


async def test_unset_endpoint_falls_back_to_the_logs_endpoint_variable(
        http_sink: OtlpHttpSink, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", http_sink.base_url + "/v1/logs")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20env")
    events = EvaluationEvents(EvaluationEventsConfig(enabled=True), SERVICE, RecordingTelemetry())
    await events.start()
    events.consume_result(result(score("fluency", 5.0)))
    await _stop(events)
    await http_sink.wait_until(lambda: len(_records(http_sink)) == 1)
    assert http_sink.of("logs")[0].headers["authorization"] == "Bearer env"


async def test_a_stalled_collector_fills_the_bounded_queue_and_drops_are_counted(http_sink: OtlpHttpSink) -> None:
    telemetry = RecordingTelemetry()
    events = EvaluationEvents(_config(endpoint=http_sink.base_url, max_queue_size=4, max_export_batch_size=2),
                              SERVICE, telemetry)
    await events.start()
    http_sink.hold()
    events.consume_result(result(score("fluency", 5.0)))
    await http_sink.wait_until(lambda: http_sink.in_flight == 1)  # the exporter thread is stuck in it
    assert events.queue_depth == 0
    events.consume_result(result(*(score(f"m{i}", 3.0) for i in range(20))))
    assert events.queue_depth == events.queue_capacity == 4
    assert _dropped(telemetry) == 16
    http_sink.release()
    await http_sink.wait_until(lambda: len(_records(http_sink)) == 5)
    await _stop(events)
    names = [attributes(r.attributes)["gen_ai.evaluation.name"] for r in _records(http_sink)]
    assert sorted(names) == ["fluency", "m0", "m1", "m2", "m3"]  # the first ones admitted, none lost silently


async def test_shutdown_honours_its_deadline_and_counts_what_it_abandons(http_sink: OtlpHttpSink) -> None:
    telemetry = RecordingTelemetry()
    # Only a full batch wakes the export thread: nothing leaves on a timer mid-test.
    events = EvaluationEvents(_config(endpoint=http_sink.base_url, max_queue_size=8, max_export_batch_size=8,
                                      schedule_delay_seconds=60.0), SERVICE, telemetry)
    await events.start()
    http_sink.hold()
    events.consume_result(result(*(score(f"m{i}", 3.0) for i in range(8))))
    await http_sink.wait_until(lambda: http_sink.in_flight == 1)
    events.consume_result(result(*(score(f"late{i}", 3.0) for i in range(3))))
    await _stop(events, seconds=0.2)  # returns although the collector still holds the first batch
    events.consume_result(result(score("after", 1.0)))  # after shutdown: refused and counted
    assert _dropped(telemetry) == 1
    http_sink.release()
    await http_sink.wait_until(lambda: len(_records(http_sink)) == 8)
    loop = asyncio.get_running_loop()
    end = loop.time() + 5
    while _dropped(telemetry) < 4 and loop.time() < end:  # the export thread counts the abandoned batch
        await asyncio.sleep(0.01)
    assert _dropped(telemetry) == 4


async def test_not_started_or_stopped_drops_and_counts_without_raising() -> None:
    telemetry = RecordingTelemetry()
    events = EvaluationEvents(_config(endpoint="http://127.0.0.1:9"), SERVICE, telemetry)
    await _stop(events)
    await _stop(events)
    events.consume_result(result(score("fluency", 5.0), score("coherence", None, status=ScoreStatus.SKIPPED)))
    assert _dropped(telemetry) == 1  # the skipped score was never a record


def test_attributes_of_each_status() -> None:
    r: EvaluationResult = result(score("f1_score", 0.4, defect=True, scale=(0.0, 1.0)), weight=1.0)
    attrs = event_attributes(r, r.scores[0], include_explanation=True)
    assert attrs is not None and attrs["gen_ai.evaluation.score.label"] == "fail"
    assert "gen_ai.response.id" not in attrs  # the turn has none
    skipped = score("f1_score", None, status=ScoreStatus.SKIPPED)
    assert event_attributes(r, skipped, include_explanation=True) is None
    error = score("f1_score", None, status=ScoreStatus.ERROR)
    assert event_attributes(r, error, include_explanation=True)["error.type"] == "_OTHER"  # type: ignore[index]
