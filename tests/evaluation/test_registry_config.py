"""Config validation and building evaluators from it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from monitor.evaluation.combined import CombinedRubricEvaluator
from monitor.evaluation.config import DEFAULT_JUDGE_METRICS, LOCAL_TIER_METRICS, EvaluationConfig
from monitor.evaluation.registry import (
    BuildContext,
    MetricConfigError,
    MetricRegistry,
    MetricSpec,
    build_evaluators,
    default_registry,
)
from monitor.evaluation.rubric import RubricEvaluator
from tests.evaluation.fakes import FakeJudge, rag_turn


def test_default_config_builds_local_tier_and_one_combined_call() -> None:
    built = build_evaluators(EvaluationConfig(), FakeJudge())
    ids = [m for e in built for m in e.metric_ids]
    assert ids == list(LOCAL_TIER_METRICS) + list(DEFAULT_JUDGE_METRICS)
    assert sum(isinstance(e, CombinedRubricEvaluator) for e in built) == 1


def test_without_a_judge_only_the_local_tier_is_built() -> None:
    built = build_evaluators(EvaluationConfig(metrics=["f1_score", "groundedness", "retrieval_precision", "overall_score"]), None)
    assert [e.metric_ids for e in built] == [("f1_score",)]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"metrics": ["groundednes"]}, "metrics[0]: unknown metric id 'groundednes'"),
        ({"metrics": ["fluency", {"id": "typo_metric"}]}, "metrics[1]: unknown metric id 'typo_metric'"),
        ({"metrics": ["fluency", "fluency"]}, "listed twice"),
        ({"metrics": [{"id": "violence", "threshold": 2}]}, "violence takes no threshold"),
        ({"metrics": [{"id": "fluency", "severity_level": 2}]}, "fluency takes no severity_level"),
        ({"metrics": [{"id": "fluency", "threshold": 7}]}, "outside [1.0, 5.0]"),
        ({"metrics": ["fluency"], "thresholds": {"coherence": 2}}, "thresholds.coherence"),
        ({"metrics": [{"id": "fluency", "threshold": 2}], "thresholds": {"fluency": 3}}, "both"),
        ({"metrics": ["overall_score"]}, "overall_score needs at least one of"),
        ({"safety_defect_level": "severe"}, "unknown severity level"),
        ({"safety_defect_level": 8}, "outside 0-7"),
        ({"metrics": [{"id": "fluency", "treshold": 2}]}, "treshold"),
        ({"combine": True}, "combine"),
    ],
)
def test_invalid_config_names_the_key(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        EvaluationConfig.model_validate(config)
    assert message in str(info.value)


def test_options_are_resolved() -> None:
    config = EvaluationConfig(
        metrics=["fluency", {"id": "relevance", "threshold": 4}, {"id": "violence", "severity_level": "high"}, "sexual"],
        thresholds={"fluency": 2},
        safety_defect_level="low",
    )
    options = config.resolve_options(default_registry())
    assert options["fluency"].threshold == 2 and options["relevance"].threshold == 4
    assert options["violence"].severity_level == 6 and options["sexual"].severity_level == 2


async def test_thresholds_reach_standalone_evaluators() -> None:
    config = EvaluationConfig(metrics=[{"id": "fluency", "threshold": 4.5}], combine_metrics=False)
    (evaluator,) = build_evaluators(config, FakeJudge({"fluency": {"reason": "fine", "score": 4}}))
    assert isinstance(evaluator, RubricEvaluator)
    (score,) = await evaluator.evaluate(rag_turn())
    assert score.value == 4.0 and score.defect is True  # 4 < 4.5; at the default threshold 4 passes


def test_registry_is_additive() -> None:
    class Dummy:
        metric_ids = ("dummy",)

        async def evaluate(self, turn: object) -> list[object]:
            return []

    registry = MetricRegistry.discover()
    registry.register(MetricSpec("dummy", "a test metric", "local", (0.0, 1.0), build=lambda ctx: Dummy()))
    built = registry.build(BuildContext(judge=None), ["dummy", "f1_score"])
    assert [e.metric_ids for e in built] == [("dummy",), ("f1_score",)]
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(MetricSpec("dummy", "again", "local", (0.0, 1.0), build=lambda ctx: Dummy()))
    with pytest.raises(MetricConfigError, match="unknown metric id 'nope'"):
        registry.get("nope")
    assert "dummy" not in default_registry()  # the shared registry is never mutated


def test_aggregation_declared_per_metric() -> None:
    registry = default_registry()
    assert registry.aggregation("violence") == "max" and registry.aggregation("jailbreak") == "max"
    assert registry.aggregation("groundedness") == "mean" and registry.aggregation("unknown") == "mean"
