"""retrieval_score's f → f² → 1+4f², the Tonic aggregates and overall_score."""

from __future__ import annotations

import pytest

from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.metrics._tonic_set import ChunkVerdict
from monitor.evaluation.metrics.answer_consistency import Point, consistency
from monitor.evaluation.metrics.augmentation_accuracy import augmentation_accuracy
from monitor.evaluation.metrics.augmentation_precision import augmentation_precision
from monitor.evaluation.metrics.overall_score import OverallScoreEvaluator, overall_value
from monitor.evaluation.metrics.retrieval_precision import retrieval_precision
from monitor.evaluation.metrics.retrieval_score import Intent, answered_fraction, score_from_fraction
from monitor.evaluation.registry import build_evaluators
from monitor.evaluation.scoring import failed, graded, skipped
from tests.evaluation.fakes import FakeJudge, rag_turn


@pytest.mark.parametrize(
    ("answered", "fraction", "value"),
    [([True], 1.0, 5.0), ([False], 0.0, 1.0), ([True, False], 0.5, 2.0), ([True, True, False], 2 / 3, 1 + 4 * 4 / 9),
     ([True, False, False, False], 0.25, 1.25)],
)
def test_retrieval_score_arithmetic(answered: list[bool], fraction: float, value: float) -> None:
    intents = [Intent(f"i{n}", a, (1,) if a else ()) for n, a in enumerate(answered)]
    assert answered_fraction(intents) == pytest.approx(fraction)
    assert score_from_fraction(answered_fraction(intents)) == pytest.approx(value)


async def test_retrieval_score_details_keep_the_fraction() -> None:
    reply = {"reason": "half covered",
             "intents": [{"intent": "a", "answered": True, "docs": [1, 2]}, {"intent": "b", "answered": False, "docs": []}]}
    judge = FakeJudge({"retrieval_score": reply})
    (evaluator,) = build_evaluators(EvaluationConfig(metrics=["retrieval_score"]), judge)
    (score,) = await evaluator.evaluate(rag_turn())
    assert score.value == pytest.approx(2.0) and score.defect is True
    assert score.reason == "half covered"
    assert score.details["fraction"] == 0.5 and score.details["fraction_squared"] == 0.25
    assert "<doc2>" in judge.requests[0].user and "<history>" in judge.requests[0].user


V = ChunkVerdict
CHUNKS = [V(True, True), V(True, False), V(False, True), V(False, False)]


def test_tonic_chunk_aggregates() -> None:
    assert retrieval_precision(CHUNKS) == 0.5
    assert augmentation_accuracy(CHUNKS) == 0.5
    assert augmentation_precision(CHUNKS) == 0.5  # 1 used of 2 relevant
    assert augmentation_precision([V(False, True)]) is None


async def test_augmentation_precision_undefined_is_skipped() -> None:
    reply = {"documents": [{"n": 1, "relevant": False, "used": True}, {"n": 2, "relevant": False, "used": False}]}
    judge = FakeJudge({"tonic": reply})
    (evaluator,) = build_evaluators(EvaluationConfig(metrics=["retrieval_precision", "augmentation_precision"]), judge)
    scores = {s.metric: s for s in await evaluator.evaluate(rag_turn())}
    assert scores["retrieval_precision"].value == 0.0
    assert scores["augmentation_precision"].status == "skipped"
    assert len(judge.requests) == 1


def test_answer_consistency_fraction() -> None:
    assert consistency((Point("a", True), Point("b", False), Point("c", True), Point("d", True))) == 0.75
    assert consistency(()) is None  # no main point (a refusal): undefined, skipped


def test_overall_value_is_the_mean_of_computed_metrics() -> None:
    scores = [
        graded("answer_similarity", 4.0, (0, 5), False),
        graded("retrieval_precision", 0.5, (0, 1), False),
        graded("answer_consistency_binary", 1.0, (0, 1), False),
        failed("augmentation_accuracy", (0, 1), "timeout", "t"),
        skipped("augmentation_precision", (0, 1), "no relevant chunk"),
        graded("groundedness", 1.0, (1, 5), True),  # not a Tonic metric
    ]
    value, terms = overall_value(scores)  # type: ignore[misc]
    assert terms == {"answer_similarity": 0.8, "retrieval_precision": 0.5, "answer_consistency_binary": 1.0}
    assert value == pytest.approx((0.8 + 0.5 + 1.0) / 3)
    assert overall_value([failed("answer_similarity", (0, 5), "timeout", "t")]) is None


async def test_overall_score_wraps_configured_tonic_metrics() -> None:
    judge = FakeJudge({"tonic": {"similarity_reason": "same", "similarity": 5,
                                 "outside_reason": "adds a date", "outside": True}})
    config = EvaluationConfig(metrics=["f1_score", "answer_similarity", "answer_consistency_binary", "overall_score"])
    built = build_evaluators(config, judge)
    wrapper = next(e for e in built if isinstance(e, OverallScoreEvaluator))
    assert wrapper.metric_ids == ("answer_similarity", "answer_consistency_binary", "overall_score")
    scores = {s.metric: s for s in await wrapper.evaluate(rag_turn())}
    assert scores["overall_score"].value == pytest.approx(0.5)
    assert scores["overall_score"].reason == "mean of 2: answer_similarity 1.00, answer_consistency_binary 0.00"
    assert scores["overall_score"].defect is False
