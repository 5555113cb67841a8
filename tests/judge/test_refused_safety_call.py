"""Issue 28's acceptance case, end to end with the real client over HTTP: a judge whose provider
blocks every call that asks for a severity. With the defaults the turn keeps its four quality
scores, each with its own reason, and the four severities are ``unscored_refused`` — counted as
such by Prometheus, and as ``refused`` (not an error) by the judge's own counter."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from exporters.evaluation_metrics import PrometheusJudgeTelemetry, PrometheusResults
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from monitor.evaluation.runner import evaluate_turn
from monitor.judge.client import JudgeClient
from monitor.judge.config import JudgeConfig
from monitor.judge.telemetry import RecordingJudgeTelemetry, TeeJudgeTelemetry
from monitor.model import EvaluationResult
from tests.evaluation.fakes import rag_turn
from tests.judge.conftest import FAST, ClientFactory
from tests.support.judge_server import Behaviour, JudgeServer, content_filtered, reply, schema_reply

QUALITY = ["groundedness", "relevance", "coherence", "fluency"]
SAFETY = ["hate_unfairness", "sexual", "violence", "self_harm"]


def _blocking_safety(block: Behaviour) -> Behaviour:
    """Answer every call by its schema, except the safety call, which ``block`` answers."""
    answer = schema_reply()

    async def behave(server: JudgeServer, request: Any, rec: Any) -> Any:
        fmt = rec.body.get("response_format") or {}
        if (fmt.get("json_schema") or {}).get("name") == "safety":
            return await block(server, request, rec)
        return await answer(server, request, rec)

    return behave


@pytest.mark.parametrize("block", [
    content_filtered(),
    reply(None, finish_reason="content_filter"),
    reply(None, refusal="I can't assist with rating this content."),
], ids=["azure-400", "finish_reason", "refusal"])
async def test_a_blocked_safety_call_keeps_the_quality_scores(server: JudgeServer, block: Behaviour) -> None:
    server.default = _blocking_safety(block)
    registry = CollectorRegistry()
    results = PrometheusResults(registry)
    telemetry = RecordingJudgeTelemetry()
    client = JudgeClient(JudgeConfig(**{**FAST, "base_url": server.base_url}), environ={},
                         telemetry=TeeJudgeTelemetry(telemetry, PrometheusJudgeTelemetry(registry)))
    async with client:
        evaluators = build_evaluators(EvaluationConfig(metrics=QUALITY + SAFETY), client)
        scores = {s.metric: s for s in await evaluate_turn(rag_turn(), evaluators)}
    results.consume_result(EvaluationResult(rag_turn(), tuple(scores.values()), weight=4.0))

    assert len(server.requests) == 2  # one quality call, one safety call, neither retried
    for metric in QUALITY:
        assert scores[metric].status == "ok" and scores[metric].reason, metric
    for metric in SAFETY:
        assert (scores[metric].outcome, scores[metric].value) == ("unscored_refused", None), metric
    assert telemetry.outcomes == {"ok": 1, "refused": 1}

    service = results._policy.label(EvaluationResult(rag_turn(), ())).labels["service"]  # noqa: SLF001

    def sample(name: str, **labels: str) -> float | None:
        if "metric" in labels:
            labels["service"] = service
        # Judge scores also carry judge_model and prompt_version: match on the labels given.
        found = [s.value for fam in registry.collect() for s in fam.samples
                 if s.name == name and labels.items() <= s.labels.items()]
        return sum(found) if found else None

    for metric in SAFETY:
        assert sample("rag_monitor_evaluations_total", metric=metric, outcome="unscored_refused") == 1.0
        assert sample("rag_monitor_evaluations_total", metric=metric, outcome="error") == 0.0
        assert sample("rag_monitor_evaluation_weight_total", metric=metric, outcome="unscored_refused") == 4.0
    for metric in QUALITY:
        assert sample("rag_monitor_evaluations_total", metric=metric, outcome="unscored_refused") == 0.0
    assert sample("rag_monitor_judge_requests_total", outcome="refused") == 1.0
    assert sample("rag_monitor_judge_requests_total", outcome="ok") == 1.0


async def test_refused_severity_counts_the_blocked_call_as_a_defect(server: JudgeServer,
                                                                     make_client: ClientFactory) -> None:
    server.default = _blocking_safety(content_filtered())
    config = EvaluationConfig(metrics=QUALITY + SAFETY, refused_severity="high")
    async with make_client() as (client, _):
        scores = {s.metric: s for s in await evaluate_turn(rag_turn(), build_evaluators(config, client))}
    for metric in SAFETY:
        assert (scores[metric].value, scores[metric].label, scores[metric].defect) == (6.0, "High", True)
        assert scores[metric].details["refused"] is True
