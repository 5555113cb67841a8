"""A shared judge call (combine_metrics, the Tonic chunk call) reports its tokens under the real
metric ids it answered for, split so they add up to the call's usage — never under the call's own
id, which is not a metric. Real evaluators, real client, scripted judge on 127.0.0.1."""

from __future__ import annotations

from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from tests.evaluation.fakes import rag_turn
from tests.judge.conftest import ClientFactory
from tests.support.judge_server import JudgeServer, schema_reply

QUALITY = ["groundedness", "relevance", "coherence", "fluency"]
SAFETY = ["hate_unfairness", "sexual", "violence", "self_harm"]
CHUNKS = ["retrieval_precision", "augmentation_accuracy"]


async def test_combined_and_chunk_calls_attribute_tokens_to_their_metrics(
        server: JudgeServer, make_client: ClientFactory) -> None:
    server.default = schema_reply()
    config = EvaluationConfig(metrics=QUALITY + SAFETY + CHUNKS, combine_metrics=True)
    async with make_client() as (client, telemetry):
        scores = []
        for evaluator in build_evaluators(config, client):
            scores += await evaluator.evaluate(rag_turn())
    assert len(server.requests) == 3  # the quality call, the safety call, one chunk call
    assert {s.metric for s in scores if s.status == "ok"} == set(QUALITY + SAFETY + CHUNKS)
    owners = {metric for metric, _ in telemetry.token_counts}
    assert owners == set(QUALITY + SAFETY + CHUNKS)
    used = sum(s.usage.prompt_tokens + s.usage.completion_tokens for s in scores)
    assert sum(telemetry.token_counts.values()) == used
    for members in (QUALITY, SAFETY):
        prompt = [telemetry.token_counts[(m, "prompt")] for m in members]
        assert max(prompt) - min(prompt) <= 1  # an even split of each shared call
    calls = {call for call, _, _ in telemetry.call_tokens}
    assert calls == {"combined_rubrics", "safety", "tonic"}
