"""The per-metric comparison on hand-made judge scores: which rows count, which kappa."""

from __future__ import annotations

import math

from monitor.calibration.labels import HumanLabel, LabelledRow
from monitor.calibration.run import JudgeIdentity, Judging, calibrate_metric, compare_metric
from monitor.calibration.threshold import DefectRule
from monitor.evaluation.scoring import failed, graded, skipped
from monitor.model import Score, Turn
from monitor.offline.rows import EvalRow

SCALE = (1.0, 5.0)
RULE = DefectRule(SCALE, higher_is_worse=False, threshold=3.0)


def _row(i: int, label: HumanLabel | None) -> LabelledRow:
    turn = Turn(trace_id=f"t{i}", conversation_id=f"t{i}", question="q", answer="a")
    return LabelledRow(EvalRow(i + 1, "qa", (turn,)), {} if label is None else {"groundedness": label})


def _score(value: float | None) -> dict[str, Score]:
    if value is None:
        return {"groundedness": failed("groundedness", SCALE, "timeout", "judge timed out")}
    return {"groundedness": graded("groundedness", value, SCALE, RULE.is_defect(value))}


def _judging(values: list[float | None], model: str = "m") -> Judging:
    return Judging(JudgeIdentity(model, None, {}), {"groundedness": RULE}, tuple(_score(v) for v in values))


def test_unlabelled_and_unscored_rows_are_left_out() -> None:
    rows = [_row(0, HumanLabel(value=4)), _row(1, None), _row(2, HumanLabel(value=1)), _row(3, HumanLabel(value=2))]
    scores = list(_judging([4, 1, 4, None]).scores)
    scores[1] = {"groundedness": skipped("groundedness", SCALE, "no context")}
    judging = Judging(JudgeIdentity("m", None, {}), {"groundedness": RULE}, tuple(scores))
    result = calibrate_metric("groundedness", rows, judging)
    # Row 1 has no label (its skip is not "unscored"); row 3 has no judge value.
    assert (result.n, result.unscored) == (2, 1)
    assert result.agreement.value == 0.5  # 4 and 4 agree; the judge's 4 passes the person's 1
    assert result.confusion == {"pass": {"pass": 1, "defect": 1}}
    assert (result.defect_recall.value, result.pass_recall.value) == (0.0, 1.0)
    assert math.isnan(result.defect_precision.value)  # the judge called nothing a defect


def test_value_labels_on_an_integer_scale_give_quadratic_kappa() -> None:
    humans = [1, 2, 3, 4, 5] * 6
    judge: list[float | None] = [float(min(5, h + (i % 3 == 0))) for i, h in enumerate(humans)]
    rows = [_row(i, HumanLabel(value=h)) for i, h in enumerate(humans)]
    result = calibrate_metric("groundedness", rows, _judging(judge))
    assert result.kappa_on == "value" and result.kappa.value > 0.8


def test_a_single_verdict_label_puts_kappa_on_the_verdict() -> None:
    humans: list[HumanLabel] = [HumanLabel(value=h) for h in [1, 2, 3, 4, 5] * 6]
    humans[7] = HumanLabel(verdict="pass")
    rows = [_row(i, h) for i, h in enumerate(humans)]
    judge: list[float | None] = [h.value if h.value is not None else 4.0 for h in humans]
    result = calibrate_metric("groundedness", rows, _judging(judge))
    assert result.kappa_on == "verdict" and result.kappa.value == 1.0 and result.agreement.value == 1.0


def test_a_judge_value_between_points_puts_kappa_on_the_verdict() -> None:
    rows = [_row(i, HumanLabel(value=h)) for i, h in enumerate([1, 2, 3, 4, 5] * 4)]
    judge: list[float | None] = [float(h) for h in [1, 2, 3, 4, 5] * 4]
    judge[0] = 1.5
    assert calibrate_metric("groundedness", rows, _judging(judge)).kappa_on == "verdict"


def test_comparison_uses_only_rows_both_judges_scored() -> None:
    rows = [_row(i, HumanLabel(value=h)) for i, h in enumerate([1, 2, 3, 4, 5] * 4)]
    right: list[float | None] = [float(h) for h in [1, 2, 3, 4, 5] * 4]
    wrong: list[float | None] = [5.0 if v is not None and v < 3 else 1.0 for v in right]
    wrong[3] = None
    result = compare_metric("groundedness", rows, _judging(wrong, "bad"), _judging(right, "good"))
    assert result.n == 19
    assert result.agreement_difference.value == 1.0  # good agrees everywhere, bad nowhere
    assert not math.isnan(result.kappa_difference.value) and result.kappa_difference.value > 1
