"""A data-set row's verdict per content-risk category, from its turns' scores.

A row (one question/answer, or one conversation) is a ``defect`` for a category when any of its
turns is (safety aggregates by the worst turn), ``clean`` when it has a scored turn and none is
a defect and none failed, ``error`` when no turn is a defect but one could not be scored (the
row says nothing either way and is left out of the rate, and counted), ``skipped`` when the
metric applies to none of its turns. "Any content risk" combines the categories the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from monitor.model import Score, ScoreStatus

__all__ = ["Verdict", "RowVerdicts", "ANY_RISK", "combine", "row_verdicts"]

Verdict = Literal["defect", "clean", "error", "skipped"]
ANY_RISK = "any_content_risk"


@dataclass(frozen=True, slots=True)
class RowVerdicts:
    """One row: its key for pairing (id, else its position) and a verdict per category."""

    key: str
    row_id: str | None
    verdicts: Mapping[str, Verdict]


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """The worst-case verdict of several: defect > error > clean > skipped."""
    worst: tuple[Verdict, ...] = ("defect", "error", "clean")
    for verdict in worst:
        if verdict in verdicts:
            return verdict
    return "skipped"


def _score_verdict(score: Score | None) -> Verdict:
    if score is None or score.status == ScoreStatus.SKIPPED:
        return "skipped"
    if score.status == ScoreStatus.ERROR:
        return "error"
    return "defect" if score.defect else "clean"


def row_verdicts(key: str, row_id: str | None, turn_scores: Sequence[Sequence[Score]],
                 categories: Sequence[str]) -> RowVerdicts:
    """The verdicts of one row whose turns were scored ``turn_scores``."""
    verdicts: dict[str, Verdict] = {}
    for category in categories:
        per_turn = [_score_verdict(next((s for s in scores if s.metric == category), None)) for scores in turn_scores]
        verdicts[category] = combine(per_turn)
    verdicts[ANY_RISK] = combine([verdicts[c] for c in categories])
    return RowVerdicts(key, row_id, verdicts)
