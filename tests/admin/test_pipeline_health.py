"""Pipeline health from the real Prometheus instruments, and the findings that explain an empty
page: one test per hand-off where traffic can stop."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from exporters.evaluation_metrics import PrometheusJudgeTelemetry, PrometheusResults, PrometheusSamplingTelemetry
from exporters.prometheus import PrometheusTelemetry, ScrapeTimeCollector
from monitor.admin.diagnosis import Setting, diagnose
from monitor.admin.health import PipelineStatus
from monitor.admin.pipeline import PipelineHealth, read_pipeline
from monitor.assembly.assembler import TRACES_WITHOUT_TURN, TURNS_ASSEMBLED
from monitor.model import EvaluationResult, Score, ScoreStatus, Turn
from monitor.receivers.ingest import SPANS_RECEIVED
from monitor.telemetry import REQUESTS_REJECTED

SETTING = Setting(receiver="http://127.0.0.1:4318", judge_enabled=True, sampling="always: every conversation",
                  no_turn_hints={"no_chat_call": "no LLM chat span in the trace"})


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class Parts:
    """The sidecar's real instruments on one registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.telemetry = PrometheusTelemetry(self.registry)
        self.sampling = PrometheusSamplingTelemetry(self.registry)
        self.judge = PrometheusJudgeTelemetry(self.registry)
        self.results = PrometheusResults(self.registry)
        self.registry.register(ScrapeTimeCollector({"evaluation": (lambda: 3, 1000)}, lambda: 2, lambda: 7,
                                                   lambda: 1))

    def evaluated(self, outcome: str) -> None:
        value = None if outcome in ("error", "skipped") else 2.0
        score = Score("groundedness", value, (1.0, 5.0), status=outcome if value is None else ScoreStatus.OK,
                      defect=None if value is None else outcome == "defect")
        self.results.consume_result(EvaluationResult(Turn("t", "c", "q", "a"), (score,)))


def codes(counts, **kw) -> list[str]:
    return [f.code for f in diagnose(counts, SETTING, **kw)]


def test_reading_sums_the_counters_by_their_key():
    p = Parts()
    p.telemetry.add(SPANS_RECEIVED, 5, transport="http")
    p.telemetry.add(SPANS_RECEIVED, 2, transport="grpc")
    p.telemetry.add(TRACES_WITHOUT_TURN, reason="no_message_content")
    p.telemetry.add(TURNS_ASSEMBLED, convention="genai")
    p.sampling.decision("rate_limit", "sampled")
    p.sampling.decision("rate_limit", "not_sampled")
    p.judge.call_finished("groundedness", "timeout", 1.0)
    p.judge.circuit_state("open")
    p.evaluated("pass")
    p.evaluated("error")
    r = read_pipeline(p.registry, 1.0)
    assert r.counts["spans_received"] == {"http": 5.0, "grpc": 2.0}
    assert r.counts["traces_without_turn"] == {"no_message_content": 1.0}
    assert r.counts["sampling"] == {"sampled": 1.0, "not_sampled": 1.0}
    assert r.counts["sampled_by_policy"] == {"rate_limit": 1.0}
    assert r.counts["judge_requests"] == {"timeout": 1.0}
    assert r.counts["evaluations"] == {"pass": 1.0, "defect": 0.0, "error": 1.0, "skipped": 0.0,
                                           "unscored_refused": 0.0}
    assert r.queues == {"evaluation": (3.0, 1000.0)}
    assert r.gauges["pending_traces"] == 2.0 and r.gauges["open_conversations"] == 1.0
    assert r.gauges["judge_circuit_open"] == 1.0


def test_recent_counts_are_the_last_minutes_not_since_start():
    p, clock = Parts(), Clock()
    health = PipelineHealth(p.registry, clock=clock, recent_seconds=300, interval_seconds=10)
    p.telemetry.add(SPANS_RECEIVED, 100, transport="http")
    for _ in range(40):  # 400 s of readings, nothing new after the first 100 spans
        health.sample()
        clock.now += 10
    p.telemetry.add(SPANS_RECEIVED, 3, transport="http")
    since, recent = health.recent(health.sample())
    assert recent["spans_received"] == {"http": 3.0}
    assert clock.now - 310 <= since <= clock.now - 300
    young = PipelineHealth(p.registry, clock=clock)
    since, recent = young.recent(young.sample())
    assert since == young.started_at and recent["spans_received"] == {"http": 103.0}  # since start


def test_findings_name_the_first_hand_off_where_traffic_stops():
    p = Parts()
    assert codes(read_pipeline(p.registry, 0).counts)[:1] == ["no_spans"]
    p.telemetry.add(REQUESTS_REJECTED, transport="http", reason="unauthenticated")
    assert "requests_refused" in codes(read_pipeline(p.registry, 0).counts)
    p.telemetry.add(SPANS_RECEIVED, 4, transport="http")
    p.telemetry.add(TRACES_WITHOUT_TURN, reason="no_message_content")
    findings = diagnose(read_pipeline(p.registry, 0).counts, SETTING)
    no_turns = [f for f in findings if f.code == "no_turns"][0]
    assert no_turns.level == "warning" and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in no_turns.text
    p.telemetry.add(TURNS_ASSEMBLED, convention="genai")
    p.sampling.decision("rate_limit", "not_sampled")
    findings = diagnose(read_pipeline(p.registry, 0).counts, SETTING)
    nothing = [f for f in findings if f.code == "nothing_sampled"][0]
    assert "{type: always}" in nothing.text and "always: every conversation" in nothing.text
    assert findings[0].level == "warning"  # warnings first
    p.sampling.decision("rate_limit", "sampled")
    assert "evaluating" in codes(read_pipeline(p.registry, 0).counts)
    for outcome in ("error", "error", "pass"):
        p.evaluated(outcome)
    p.judge.call_finished("groundedness", "rate_limited", 1.0)
    errors = [f for f in diagnose(read_pipeline(p.registry, 0).counts, SETTING) if f.code == "evaluation_errors"][0]
    assert errors.text == "67% of evaluations failed (judge: rate_limited)"
    assert "judge_circuit" in codes(read_pipeline(p.registry, 0).counts, circuit="open")
    off = diagnose({}, Setting("http://x", False, "s", {}))
    assert [f.code for f in off] == ["no_spans", "judge_off"]


def test_pipeline_document_prefers_recent_counts_when_traffic_is_recent():
    p, clock = Parts(), Clock()
    health = PipelineHealth(p.registry, clock=clock, recent_seconds=60, interval_seconds=10)
    p.telemetry.add(SPANS_RECEIVED, 10, transport="http")
    p.telemetry.add(TRACES_WITHOUT_TURN, reason="no_chat_call")
    for _ in range(10):
        health.sample()
        clock.now += 10
    p.telemetry.add(SPANS_RECEIVED, 2, transport="http")
    p.telemetry.add(TURNS_ASSEMBLED, convention="genai")
    p.sampling.decision("rate_limit", "sampled")
    status = PipelineStatus(health, SETTING, lambda: {"judge": "gpt-4o-mini at https://api.openai.com/v1"})
    doc = status.document()
    assert doc["stages"]["spans_received"] == {"total": {"http": 12.0}, "recent": {"http": 2.0}}
    assert doc["judge"] == {"enabled": True, "circuit": "closed"}
    assert doc["setup"]["judge"].startswith("gpt-4o-mini")
    assert doc["queues"] == {"evaluation": {"depth": 3.0, "capacity": 1000.0}}
    # The old traces without a turn are history: the recent ones assembled.
    assert "no_turns" not in [f["code"] for f in doc["findings"]]
