"""A stage that reports through its own telemetry protocol (judge, sampling) can still count any
declared counter with ``add``: it reaches the same Prometheus registry with no other edit."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from exporters.evaluation_metrics import PrometheusJudgeTelemetry, PrometheusSamplingTelemetry
from exporters.prometheus import PrometheusTelemetry
from monitor.judge.telemetry import JudgeTelemetry, RecordingJudgeTelemetry, TeeJudgeTelemetry
from monitor.telemetry import QUEUE_DROPPED
from samplers.telemetry import SamplingTelemetry


def test_judge_and_sampling_sinks_count_declared_counters_on_the_registry() -> None:
    registry = CollectorRegistry()
    counters = PrometheusTelemetry(registry)
    judge: JudgeTelemetry = PrometheusJudgeTelemetry(registry, counters)
    sampling: SamplingTelemetry = PrometheusSamplingTelemetry(registry, counters)
    judge.add(QUEUE_DROPPED, 2, queue="judge_test")
    sampling.add(QUEUE_DROPPED, queue="sampling_test")
    assert registry.get_sample_value("rag_monitor_queue_dropped_total", {"queue": "judge_test"}) == 2
    assert registry.get_sample_value("rag_monitor_queue_dropped_total", {"queue": "sampling_test"}) == 1


def test_the_tee_and_the_recording_sink_pass_add_on() -> None:
    recording = RecordingJudgeTelemetry()
    TeeJudgeTelemetry(recording).add(QUEUE_DROPPED, 3, queue="q")
    assert recording.counters.value(QUEUE_DROPPED, queue="q") == 3
