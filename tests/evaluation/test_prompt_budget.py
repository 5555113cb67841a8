"""Prompt size per metric stays within the budget recorded in monitor/evaluation/README.md.

Tokens are estimated as characters / 4 over system + user + reply schema, on the seed's tent
example row. Budgets: Azure metrics at most half of azure-ai-evaluation's per-row prompt
(≈2,100 tokens; retrieval ≈4,300), Opik's answer_relevance at most half of its ≈1,500, and the
Tonic set's one call at most half of what tonic-validate sends for the six metrics on this row
(1,127 tokens in 8 calls, measured; benchmarks/README-judge.md). Until issue 28 the Tonic budget
was six times half of tonic-validate's cheapest metric (396): the per-document objects with their
numbers, the two judge reasons and the definitions of "used" and "supported" cost 135 more.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from monitor.evaluation.combined import COMBINED_CALL_ID
from monitor.evaluation.safety import SAFETY_CALL_ID
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from monitor.judge.types import JudgeError, JudgeReply, JudgeRequest
from tests.evaluation.fakes import rag_turn

AZURE = ["groundedness", "relevance", "coherence", "fluency", "similarity",
         "hate_unfairness", "sexual", "violence", "self_harm", "jailbreak"]
BUDGET = {
    **{m: 1050 for m in AZURE},
    "retrieval_score": 2150,
    "answer_relevance": 750,
    # All six Tonic metrics in one call: <= 0.5 x tonic-validate's 1,127 tokens for the six.
    "tonic": 563,
    # Four quality rubrics in one call, four severities in another: compare with 4 × 1,050 each.
    COMBINED_CALL_ID: 1050,
    SAFETY_CALL_ID: 1050,
}


class RecordingJudge:
    def __init__(self) -> None:
        self.requests: list[JudgeRequest[Any]] = []

    async def complete_json(self, request: JudgeRequest[Any]) -> JudgeReply[Any]:
        self.requests.append(request)
        raise JudgeError("timeout", "recording only")


def estimate_tokens(request: JudgeRequest[Any]) -> int:
    """chars / 4 of everything the judge is billed for on input."""
    return (len(request.system) + len(request.user) + len(json.dumps(request.json_schema))) // 4


async def _requests(metrics: list[str], combine: bool) -> list[JudgeRequest[Any]]:
    judge = RecordingJudge()
    config = EvaluationConfig(metrics=metrics, combine_metrics=combine)
    for evaluator in build_evaluators(config, judge):
        await evaluator.evaluate(rag_turn())
    return judge.requests


async def test_prompt_sizes_within_budget() -> None:
    metrics = [*AZURE, "retrieval_score", "answer_relevance", "answer_similarity", "retrieval_precision",
               "augmentation_accuracy", "augmentation_precision", "answer_consistency", "answer_consistency_binary"]
    requests = await _requests(metrics, combine=False)
    requests += [r for r in await _requests(AZURE[:4] + AZURE[5:9], combine=True)
                 if r.metric in (COMBINED_CALL_ID, SAFETY_CALL_ID)]
    sizes = {r.metric: estimate_tokens(r) for r in requests}
    assert set(sizes) == set(BUDGET)
    over = {m: (s, BUDGET[m]) for m, s in sizes.items() if s > BUDGET[m]}
    assert not over, over


@pytest.mark.parametrize("n_docs", [1, 20])
async def test_context_is_capped(n_docs: int) -> None:
    from monitor.model import Document

    docs = tuple(Document(id=str(i), content="word " * 5000) for i in range(n_docs))
    judge = RecordingJudge()
    config = EvaluationConfig(metrics=["groundedness", "retrieval_score"], combine_metrics=False, max_context_chars=4000)
    for evaluator in build_evaluators(config, judge):
        await evaluator.evaluate(rag_turn(documents=docs))
    for request in judge.requests:
        assert len(request.user) < 4000 + n_docs * 400 + 1000
