"""OTLP metrics push, received by a real OTLP receiver on 127.0.0.1 and checked field by field."""

from __future__ import annotations

import asyncio
import logging
import math
import socket
from typing import Any

import pytest
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality, Metric
from prometheus_client import CollectorRegistry

from exporters.config import OtlpMetricsConfig
from exporters.evaluation_metrics import PrometheusResults
from exporters.labels import LabelPolicy
from exporters.otlp_metrics import OtlpMetrics, http_endpoint, resolve_protocol, rolling_readings
from exporters.prometheus import PrometheusTelemetry, ScrapeTimeCollector
from exporters.rolling import RollingStats
from exporters.spec import EVALUATION, JUDGE, JUDGE_LATENCY_BUCKETS, SCORE_BUCKETS
from monitor.model import EvaluationResult, ScoreStatus
from monitor.receivers.ingest import SPANS_RECEIVED
from monitor.telemetry import QUEUE_DROPPED
from tests.exporters.results import result, score
from tests.support.otlp_sink import OtlpGrpcSink, OtlpHttpSink, attributes, latest_metrics

SERVICE = "rag-monitor-under-test"
CUMULATIVE = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE

pytestmark = pytest.mark.usefixtures("clean_otel_env")  # http_sink, grpc_sink: tests/exporters/conftest.py


def _config(**fields: Any) -> OtlpMetricsConfig:
    return OtlpMetricsConfig(**{"enabled": True, "interval_seconds": 60.0, "timeout_seconds": 2.0, **fields})


async def _stop(component: OtlpMetrics, seconds: float = 5.0) -> None:
    await component.shutdown(asyncio.get_running_loop().time() + seconds)


def _number(point: Any) -> float:
    return float(getattr(point, point.WhichOneof("value")))


def _points(metric: Metric) -> dict[frozenset[tuple[str, Any]], Any]:
    data = getattr(metric, metric.WhichOneof("data"))
    return {frozenset(attributes(p.attributes).items()): p for p in data.data_points}


def _key(**attrs: str) -> frozenset[tuple[str, Any]]:
    return frozenset(attrs.items())


def _results() -> list[EvaluationResult]:
    # route is allow-listed with room for two values: /c becomes "other". user_tier is not.
    return [
        result(score("groundedness", 4.0, defect=False), score("relevance", None, status=ScoreStatus.ERROR),
               score("fluency", None, status=ScoreStatus.SKIPPED), weight=2.0,
               labels={"route": "/a", "user_tier": "gold"}),
        result(score("groundedness", 2.0, defect=True), weight=4.0, labels={"route": "/b", "user_tier": "gold"}),
        result(score("groundedness", 5.0, defect=False), labels={"route": "/c", "user_tier": "free"}),
    ]


def _judge_calls(metrics: OtlpMetrics) -> None:
    metrics.call_finished("groundedness", "ok", 0.3)
    metrics.call_finished("groundedness", "timeout", 20.0)
    metrics.reply_rejected("groundedness", "parse_error")
    metrics.attempt_failed("groundedness", "server_error")
    metrics.tokens("groundedness", "prompt", 120)
    metrics.tokens("groundedness", "completion", 30)
    metrics.circuit_state("open")
    metrics.budget_waited("tokens", 0.5)
    metrics.budget_shed("requests")


FIVE_MIN = {"metric": "groundedness", "service": "rag-app", "window": "5m"}
HOUR = {"metric": "groundedness", "service": "rag-app", "window": "1h"}


def _defect_rates() -> list[tuple[str, dict[str, str], float]]:
    return [("rag_monitor_defect_rate", FIVE_MIN, 0.25), ("rag_monitor_defect_rate_lower", FIVE_MIN, 0.1),
            ("rag_monitor_defect_rate_upper", FIVE_MIN, 0.6), ("rag_monitor_window_evaluations", FIVE_MIN, 4.0),
            ("rag_monitor_defect_rate", HOUR, math.nan)]  # NaN: no data, no point


async def test_push_over_http_carries_every_instrument_field_by_field(http_sink: OtlpHttpSink) -> None:
    registry = CollectorRegistry()
    telemetry = PrometheusTelemetry(registry)
    telemetry.add(SPANS_RECEIVED, 5, transport="http")
    telemetry.add(QUEUE_DROPPED, 2, queue="evaluation")
    registry.register(ScrapeTimeCollector({"evaluation": (lambda: 3, 100)}, lambda: 7, lambda: 11, lambda: 1))
    prometheus = PrometheusResults(registry, LabelPolicy(["route"], max_values=2))  # same names: not bridged
    metrics = OtlpMetrics(_config(endpoint=http_sink.base_url, headers={"Authorization": "Bearer s3cret"}),
                          LabelPolicy(["route"], max_values=2), SERVICE, _defect_rates, registry)
    await metrics.start()
    results = _results()
    for r in results:
        metrics.consume_result(r)
        prometheus.consume_result(r)
    _judge_calls(metrics)
    await _stop(metrics)  # the final collection is the flush
    await http_sink.wait_until(lambda: bool(http_sink.of("metrics")))

    request = http_sink.of("metrics")[-1]
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/x-protobuf"
    got = latest_metrics(http_sink.of("metrics"))
    for resource, scope, _ in got.values():
        assert attributes(resource.attributes)["service.name"] == SERVICE
        assert scope == "rag-monitor"

    evaluations = got["rag_monitor_evaluations"][2]
    assert evaluations.description == EVALUATION[0].help and evaluations.unit == ""
    assert evaluations.sum.is_monotonic and evaluations.sum.aggregation_temporality == CUMULATIVE
    points = _points(evaluations)
    expected_counts = {
        _key(metric="groundedness", service="rag-app", route="/a", outcome="pass"): 1,
        _key(metric="groundedness", service="rag-app", route="/b", outcome="defect"): 1,
        _key(metric="groundedness", service="rag-app", route="other", outcome="pass"): 1,
        _key(metric="relevance", service="rag-app", route="/a", outcome="error"): 1,
        _key(metric="fluency", service="rag-app", route="/a", outcome="skipped"): 1,
    }
    assert {k: _number(p) for k, p in points.items()} == expected_counts

    weight = got["rag_monitor_evaluation_weight"][2]
    assert weight.sum.is_monotonic
    assert {k: _number(p) for k, p in _points(weight).items()} == {
        _key(metric="groundedness", service="rag-app", route="/a", outcome="pass"): 2.0,
        _key(metric="groundedness", service="rag-app", route="/b", outcome="defect"): 4.0,
        _key(metric="groundedness", service="rag-app", route="other", outcome="pass"): 1.0,
    }

    hist = got["rag_monitor_score"][2]
    assert hist.histogram.aggregation_temporality == CUMULATIVE
    by_route = {dict(k)["route"]: p for k, p in _points(hist).items()}
    assert set(by_route) == {"/a", "/b", "other"}
    for route, value in (("/a", 4.0), ("/b", 2.0), ("other", 5.0)):
        p = by_route[route]
        assert set(attributes(p.attributes)) == {"metric", "service", "route"}
        assert list(p.explicit_bounds) == list(SCORE_BUCKETS)
        assert (p.count, p.sum) == (1, value)
        expected_buckets = [0] * (len(SCORE_BUCKETS) + 1)
        expected_buckets[SCORE_BUCKETS.index(value)] = 1  # upper bounds are inclusive, as Prometheus' le
        assert list(p.bucket_counts) == expected_buckets
    exemplar = by_route["/a"].exemplars[0]
    assert exemplar.trace_id == bytes.fromhex(results[0].turn.trace_id)
    assert exemplar.span_id == bytes.fromhex(results[0].turn.chat_span_id or "")
    assert exemplar.as_double == 4.0

    # No exported attribute set ever holds a key outside the allow-list.
    for name in ("rag_monitor_evaluations", "rag_monitor_evaluation_weight", "rag_monitor_score"):
        for key in _points(got[name][2]):
            assert {k for k, _ in key} <= {"metric", "service", "route", "outcome"}

    calls = got["rag_monitor_judge_requests"][2]
    assert calls.description == JUDGE[0].help
    assert {k: _number(p) for k, p in _points(calls).items()} == {_key(outcome="ok"): 1, _key(outcome="timeout"): 1}
    assert {k: _number(p) for k, p in _points(got["rag_monitor_judge_replies_rejected"][2]).items()} == {
        _key(outcome="parse_error"): 1}
    assert {k: _number(p) for k, p in _points(got["rag_monitor_judge_attempts_failed"][2]).items()} == {
        _key(outcome="server_error"): 1}
    assert {k: _number(p) for k, p in _points(got["rag_monitor_judge_tokens"][2]).items()} == {
        _key(type="prompt", metric="groundedness", call="single"): 120,
        _key(type="completion", metric="groundedness", call="single"): 30}
    duration = got["rag_monitor_judge_request_duration_seconds"][2]
    assert duration.unit == "s"
    (d,) = duration.histogram.data_points
    assert list(d.explicit_bounds) == list(JUDGE_LATENCY_BUCKETS) and (d.count, d.sum) == (2, 20.3)
    assert d.bucket_counts[JUDGE_LATENCY_BUCKETS.index(0.5)] == 1 and d.bucket_counts[8] == 1  # 0.3 ≤ 0.5, 20 ≤ 30
    circuit = got["rag_monitor_judge_circuit_open"][2]
    assert [_number(p) for p in circuit.gauge.data_points] == [1.0]
    waited = got["rag_monitor_judge_budget_wait_seconds"][2]
    assert waited.unit == "s" and waited.sum.is_monotonic
    assert {k: _number(p) for k, p in _points(waited).items()} == {_key(limiter="tokens"): 0.5}
    assert {k: _number(p) for k, p in _points(got["rag_monitor_judge_budget_shed"][2]).items()} == {
        _key(limiter="requests"): 1}

    rates = {name: {k: _number(p) for k, p in _points(got[name][2]).items()}
             for name in ("rag_monitor_defect_rate", "rag_monitor_defect_rate_lower",
                          "rag_monitor_defect_rate_upper", "rag_monitor_window_evaluations")}
    assert rates == {"rag_monitor_defect_rate": {_key(**FIVE_MIN): 0.25},
                     "rag_monitor_defect_rate_lower": {_key(**FIVE_MIN): 0.1},
                     "rag_monitor_defect_rate_upper": {_key(**FIVE_MIN): 0.6},
                     "rag_monitor_window_evaluations": {_key(**FIVE_MIN): 4.0}}
    assert got["rag_monitor_defect_rate"][2].WhichOneof("data") == "gauge"

    # Self-telemetry bridged from the Prometheus registry: counters stay monotonic sums.
    spans = got["rag_monitor_spans_received"][2]
    assert spans.sum.is_monotonic and spans.sum.aggregation_temporality == CUMULATIVE
    assert spans.description == "Spans received, by transport."
    assert {k: _number(p) for k, p in _points(spans).items()} == {_key(transport="http"): 5}
    dropped = _points(got["rag_monitor_queue_dropped"][2])
    assert {k: _number(p) for k, p in dropped.items()} == {_key(queue="evaluation"): 2}
    depth = got["rag_monitor_queue_depth"][2]
    assert depth.WhichOneof("data") == "gauge"
    assert {k: _number(p) for k, p in _points(depth).items()} == {_key(queue="evaluation"): 3}
    assert _number(got["rag_monitor_pending_traces"][2].gauge.data_points[0]) == 7
    # Families this component instruments itself are not bridged a second time.
    names = [m.name for item in http_sink.of("metrics") for rm in item.message.resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics]
    assert names.count("rag_monitor_evaluations") == len(http_sink.of("metrics"))


class LeakyPolicy(LabelPolicy):
    """A label policy with a bug: it passes a label that is not allow-listed."""

    def as_dict(self, result: EvaluationResult) -> dict[str, str]:
        return {**super().as_dict(result), "user_tier": result.turn.labels.get("user_tier", "")}


async def test_views_drop_attributes_outside_the_allow_list(http_sink: OtlpHttpSink) -> None:
    metrics = OtlpMetrics(_config(endpoint=http_sink.base_url), LeakyPolicy(["route"], max_values=10), SERVICE)
    await metrics.start()
    for r in _results():
        metrics.consume_result(r)
    await _stop(metrics)
    await http_sink.wait_until(lambda: bool(http_sink.of("metrics")))
    got = latest_metrics(http_sink.of("metrics"))
    for name in ("rag_monitor_evaluations", "rag_monitor_evaluation_weight", "rag_monitor_score"):
        keys = [dict(k) for k in _points(got[name][2])]
        assert keys and all("user_tier" not in k and "route" in k for k in keys)
    # With the leaked key dropped, the two "gold" and one "free" results still add up per route.
    assert sum(_number(p) for p in _points(got["rag_monitor_evaluations"][2]).values()) == 5


async def test_grpc_push_arrives_on_the_interval_with_headers_as_metadata(grpc_sink: OtlpGrpcSink) -> None:
    metrics = OtlpMetrics(_config(protocol="grpc", endpoint=grpc_sink.endpoint, interval_seconds=0.2,
                                  headers={"Authorization": "Bearer g"}), LabelPolicy([], max_values=5), SERVICE)
    assert metrics.protocol == "grpc"
    await metrics.start()
    try:
        metrics.consume_result(result(score("coherence", 3.0, defect=False)))

        def pushed() -> bool:  # by the periodic reader, not by shutdown
            metric = latest_metrics(grpc_sink.of("metrics")).get("rag_monitor_evaluations")
            return metric is not None and bool(metric[2].sum.data_points)

        await grpc_sink.wait_until(pushed)
        item = grpc_sink.of("metrics")[-1]
        assert item.headers["authorization"] == "Bearer g"
        resource, _, evaluations = latest_metrics(grpc_sink.of("metrics"))["rag_monitor_evaluations"]
        assert attributes(resource.attributes)["service.name"] == SERVICE
        assert {k: _number(p) for k, p in _points(evaluations).items()} == {
            _key(metric="coherence", service="rag-app", outcome="pass"): 1}
    finally:
        await _stop(metrics)


@pytest.mark.parametrize("variable,suffix", [("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics"),
                                             ("OTEL_EXPORTER_OTLP_ENDPOINT", "")])
async def test_unset_endpoint_and_headers_fall_back_to_the_standard_environment(
        http_sink: OtlpHttpSink, monkeypatch: pytest.MonkeyPatch, variable: str, suffix: str) -> None:
    monkeypatch.setenv(variable, http_sink.base_url + suffix)  # signal variable: full URL; generic: base
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-tenant=acme")
    metrics = OtlpMetrics(OtlpMetricsConfig(enabled=True), LabelPolicy([], max_values=5), SERVICE)
    await metrics.start()
    metrics.consume_result(result(score("fluency", 5.0)))
    await _stop(metrics)
    await http_sink.wait_until(lambda: bool(http_sink.of("metrics")))
    assert http_sink.of("metrics")[-1].headers["x-tenant"] == "acme"
    assert "rag_monitor_evaluations" in latest_metrics(http_sink.of("metrics"))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_collector_that_is_down_never_raises_into_the_pipeline(caplog: pytest.LogCaptureFixture) -> None:
    metrics = OtlpMetrics(_config(endpoint=f"http://127.0.0.1:{_closed_port()}", timeout_seconds=0.5,
                                  interval_seconds=0.1), LabelPolicy([], max_values=5), SERVICE)
    await metrics.start()
    for _ in range(3):
        metrics.consume_result(result(score("fluency", 5.0)))
        metrics.call_finished("fluency", "ok", 0.2)
    await asyncio.wait_for(_stop(metrics, seconds=2.0), 10)
    # The failure is reported (by the SDK exporter's own log line), not raised.
    assert any(r.name.startswith("opentelemetry.exporter.otlp") and r.levelno >= logging.ERROR
               and "Failed to export" in r.getMessage() for r in caplog.records)


async def test_lifecycle_shutdown_twice_without_start_and_restart(http_sink: OtlpHttpSink) -> None:
    metrics = OtlpMetrics(_config(endpoint=http_sink.base_url), LabelPolicy([], max_values=5), SERVICE)
    await _stop(metrics)
    metrics.consume_result(result(score("fluency", 5.0)))  # not started: ignored, no error
    for run in range(2):
        await metrics.start()
        await metrics.start()  # idempotent
        metrics.consume_result(result(score("fluency", 5.0)))
        await _stop(metrics)
        await _stop(metrics)
        await http_sink.wait_until(lambda: len(http_sink.of("metrics")) == run + 1)
        (point,) = latest_metrics(http_sink.of("metrics"))["rag_monitor_evaluations"][2].sum.data_points
        assert _number(point) == 1  # a fresh provider per run


async def test_rolling_readings_adapt_rolling_stats() -> None:
    rolling = RollingStats((("5m", 300.0),), clock=lambda: 1_000_000.0)
    rolling.consume_result(result(score("violence", 6.0, defect=True, scale=(0.0, 7.0))))
    rolling.consume_result(result(score("violence", 0.0, defect=False, scale=(0.0, 7.0))))
    readings = {name: (attrs, value) for name, attrs, value in rolling_readings(rolling)()}
    attrs = {"metric": "violence", "service": "rag-app", "window": "5m"}
    assert readings["rag_monitor_defect_rate"] == (attrs, 0.5)
    assert readings["rag_monitor_window_evaluations"] == (attrs, 2.0)
    assert readings["rag_monitor_defect_rate_lower"][1] < 0.5 < readings["rag_monitor_defect_rate_upper"][1]


def test_endpoint_is_a_base_url_and_the_signal_path_is_appended_once() -> None:
    assert http_endpoint("http://collector:4318", "metrics") == "http://collector:4318/v1/metrics"
    assert http_endpoint("https://collector:4318/", "logs") == "https://collector:4318/v1/logs"
    assert http_endpoint("http://gw/otlp/v1/metrics", "metrics") == "http://gw/otlp/v1/metrics"
    assert http_endpoint(None, "metrics") is None
    with pytest.raises(ValueError, match="http://"):
        http_endpoint("collector:4317", "metrics")


def test_protocol_comes_from_config_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_protocol(None, "metrics") == "http/protobuf"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert resolve_protocol(None, "metrics") == "grpc"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf")
    assert resolve_protocol(None, "metrics") == "http/protobuf"
    assert resolve_protocol("grpc", "metrics") == "grpc"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json")
    with pytest.raises(ValueError, match="http/json"):
        OtlpMetrics(OtlpMetricsConfig(enabled=True), LabelPolicy([], max_values=5), SERVICE)
