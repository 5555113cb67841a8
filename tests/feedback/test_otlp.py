"""People's verdicts over OTLP: GenAI evaluation events sent with the real OpenTelemetry SDK on the
judged trace, before and after the judge's own result; the sidecar's own events never count."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.feedback.metrics import HUMAN_VERDICTS
from monitor.feedback.otlp import HumanVerdictTap
from monitor.feedback.verdicts import defect_rules, reviewer_hash
from monitor.evaluation.config import EvaluationConfig
from monitor.model import LogRecord
from monitor.telemetry import LOGS_DROPPED, CountingTelemetry
from tests.feedback.harness import (COHERENCE_DEFECT, App, Results, ReviewTool, feedback_config, free_port, sample,
                                    scrape, until, until_async)
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.pipeline import RecordingSink

LABELS = {"metric": "coherence", "judge_model": "judge-model"}
HUMAN = {"rag_monitor.evaluation.source": "human", "gen_ai.evaluation.name": "coherence"}


def _value(sidecar: Sidecar, name: str, **labels: str) -> float:
    return sidecar.registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize("transport", ["http", "grpc"])
async def test_verdict_events_before_and_after_the_judge_give_the_agreement_metric(transport) -> None:
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        results = Results()
        sidecar = Sidecar(feedback_config(judge.base_url), sink=RecordingSink(), registry=CollectorRegistry(),
                          result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        tool = (ReviewTool(sidecar.grpc.port, grpc=True) if transport == "grpc" else ReviewTool(sidecar.http.port))
        try:
            after = app.turn()
            await app.flush()
            await results.wait_for(after)
            await tool.verdict(after, {**HUMAN, "gen_ai.evaluation.score.label": "fail",
                                 "rag_monitor.reviewer.id": "alice"})  # fail reads as defect: agrees
            before = app.turn()  # held in the app's batch: the verdict arrives first
            await tool.verdict(before, {**HUMAN, "gen_ai.evaluation.score.value": 5.0,
                                        "rag_monitor.reviewer.id": "bob"})
            await until(lambda: _value(sidecar, "rag_monitor_human_verdicts_total", source="otlp",
                                       state="pending") == 1)
            await app.flush()
            await results.wait_for(before)
            await until(lambda: _value(sidecar, "rag_monitor_judge_agreement_total", agreement="disagree",
                                       **LABELS) == 1)
            assert _value(sidecar, "rag_monitor_judge_agreement_total", agreement="agree", **LABELS) == 1
            text = await until_async(lambda: _scraped_reviews(sidecar, 2))
            assert sample(text, "rag_monitor_judge_agreement_rate", **LABELS) == pytest.approx(0.5)
            assert _value(sidecar, "rag_monitor_human_verdicts_total", source="otlp", state="joined") == 1
        finally:
            await tool.close()
            await app.close()
            await sidecar.shutdown()


async def _scraped_reviews(sidecar: Sidecar, n: int) -> str | None:
    text = await scrape(sidecar)
    return text if sample(text, "rag_monitor_judge_agreement_reviews", **LABELS) == n else None


async def test_the_sidecars_own_evaluation_events_are_never_counted_back() -> None:
    # The sidecar's own gen_ai.evaluation.result events are exported to its own receiver: the loop a
    # misrouted collector would make. They carry the judge's verdict, not a person's.
    port = free_port()
    async with JudgeServer(default=reply_json(COHERENCE_DEFECT)) as judge:
        config = feedback_config(
            judge.base_url, receivers={"http": {"port": port}, "grpc": {"enabled": False}},
            exporters={"store": {"enabled": False},
                       "evaluation_events": {"enabled": True, "endpoint": f"http://127.0.0.1:{port}",
                                             "protocol": "http/protobuf", "schedule_delay_seconds": 0.05}})
        results = Results()
        sidecar = Sidecar(config, sink=RecordingSink(), registry=CollectorRegistry(), result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        try:
            trace_ids = [app.turn() for _ in range(3)]
            await app.flush()
            for t in trace_ids:
                await results.wait_for(t)
            # The three events came back to the receiver ...
            await until(lambda: _value(sidecar, "rag_monitor_logs_received_total", transport="http") >= 3)
        finally:
            await app.close()
            await sidecar.shutdown()
    # ... and none was taken for a person's verdict.
    for state in ("joined", "pending", "duplicate", "invalid"):
        assert _value(sidecar, "rag_monitor_human_verdicts_total", source="otlp", state=state) == 0
    assert _value(sidecar, "rag_monitor_judge_agreement_total", agreement="agree", **LABELS) == 0


class _Sink:
    def __init__(self) -> None:
        self.verdicts: list = []

    def offer(self, verdict) -> None:
        self.verdicts.append(verdict)


class _Inner:
    def __init__(self) -> None:
        self.logs: list = []

    def consume_spans(self, spans):
        return {}

    def consume_logs(self, logs):
        self.logs.extend(logs)
        return {}


def _record(scope: str = "review-tool", **attributes) -> LogRecord:
    return LogRecord("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 1, "gen_ai.evaluation.result", None,
                     attributes, {}, scope)


def test_the_tap_takes_marked_events_refuses_the_sidecars_scope_and_passes_the_rest_on() -> None:
    rules = defect_rules(EvaluationConfig.model_validate({"metrics": ["coherence"]}))
    sink, inner, telemetry = _Sink(), _Inner(), CountingTelemetry()
    tap = HumanVerdictTap(inner, sink, rules, telemetry, clock=lambda: 100.0)
    judge_event = _record(**{"gen_ai.evaluation.name": "coherence", "gen_ai.evaluation.score.value": 2.0,
                             "gen_ai.evaluation.score.label": "fail"})
    own_marked = _record("rag-monitor", **HUMAN, **{"gen_ai.evaluation.score.label": "pass"})
    unknown_metric = _record(**{**HUMAN, "gen_ai.evaluation.name": "vibes", "gen_ai.evaluation.score.label": "pass"})
    good = _record(**HUMAN, **{"gen_ai.evaluation.score.label": "pass", "rag_monitor.reviewer.id": "carol"})
    reasons = tap.consume_logs([judge_event, own_marked, unknown_metric, good])
    assert inner.logs == [judge_event]  # unmarked records go to the assembler unchanged
    assert [(v.trace_id, v.metric, v.verdict, v.reviewer, v.source, v.at) for v in sink.verdicts] == [
        ("0af7651916cd43dd8448eb211c80319c", "coherence", "pass", reviewer_hash("carol"), "otlp", 100.0)]
    assert reasons == {"invalid_human_verdict": 2}
    assert telemetry.value(HUMAN_VERDICTS, source="otlp", state="invalid") == 2
    assert telemetry.value(LOGS_DROPPED, reason="invalid_human_verdict") == 2
