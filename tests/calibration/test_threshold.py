"""The defect rule as a function, and the search for the threshold people agree with most."""

from __future__ import annotations

import pytest

from monitor.calibration.threshold import DefectRule, best_threshold, defect_rule_of
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import default_registry


def _rule(metric: str, **entry: object) -> DefectRule:
    registry = default_registry()
    config = EvaluationConfig.model_validate({"metrics": [{"id": metric, **entry}]})
    return defect_rule_of(registry.get(metric), config.resolve_options(registry)[metric])


def test_rules_follow_the_configured_thresholds() -> None:
    groundedness = _rule("groundedness")
    assert groundedness.describe() == "defect when < 3"
    assert [groundedness.verdict(v) for v in (1, 2, 3, 5)] == ["defect", "defect", "pass", "pass"]
    assert _rule("groundedness", threshold=4).verdict(3) == "defect"
    violence = _rule("violence", severity_level=4)
    assert violence.describe() == "defect when ≥ 4"
    assert [violence.verdict(v) for v in (0, 3, 4, 7)] == ["pass", "pass", "defect", "defect"]


def test_a_rule_without_threshold_marks_the_bad_end() -> None:
    rule = DefectRule((0.0, 1.0), higher_is_worse=False, threshold=None)
    assert (rule.verdict(0.0), rule.verdict(0.5)) == ("defect", "pass")
    assert best_threshold(rule, [0.0, 1.0], ["defect", "pass"]) is None


def test_a_lenient_judge_is_best_read_one_point_higher() -> None:
    # People's values h; the judge says h + 1 (capped): under "< 3" it passes every 2,
    # under "< 4" it agrees with people everywhere.
    humans = [1, 2, 3, 4, 5] * 4
    judge = [min(5, h + 1) for h in humans]
    rule = _rule("groundedness")
    best = best_threshold(rule, [float(v) for v in judge], [rule.verdict(h) for h in humans])
    assert best is not None
    assert (best.threshold, best.agreement.value, best.current) == (4.0, 1.0, 3.0)
    assert best.current_agreement.value == pytest.approx(16 / 20)


def test_ties_keep_the_current_threshold() -> None:
    rule = _rule("groundedness")
    best = best_threshold(rule, [1.0, 5.0], ["defect", "pass"])  # 2, 3, 4 and 5 all agree fully
    assert best is not None and best.threshold == 3.0
