"""Judge identity on results: which judge model and which prompt produced each judge score.

Every score of a judge metric carries ``details["judge_model"]`` (the model the judge's replies
name, else the configured one) and ``details["prompt_version"]`` (a hash of the metric's prompt
templates, set by its evaluator). The result store keeps both and the evaluation series carry
them as labels, so a provider's silent model update or a prompt change in an upgrade shows as a
new series and a change in the numbers and in agreement with people, not as unexplained drift.
Local metrics call no judge: their scores are left as they are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Sequence

from monitor.model import Score

__all__ = ["JudgeIdentity", "JUDGE_MODEL", "PROMPT_VERSION"]

JUDGE_MODEL = "judge_model"
PROMPT_VERSION = "prompt_version"


class JudgeIdentity:
    """Stamps the judge's identity on the scores of judge metrics.

    ``judge_model`` is read at each call (the judge client's ``served_model``), so a change of the
    serving model is picked up by the next results; ``prompt_versions`` maps the judge metric ids
    to their prompt hash (``monitor.evaluation.registry.prompt_versions``)."""

    def __init__(self, judge_model: Callable[[], str], prompt_versions: Mapping[str, str]) -> None:
        self._judge_model = judge_model
        self._prompt_versions = dict(prompt_versions)

    def stamp(self, scores: Sequence[Score]) -> tuple[Score, ...]:
        """``scores`` with the judge's identity in the details of each judge metric's score; a
        value an evaluator set itself is kept."""
        if not self._prompt_versions:
            return tuple(scores)
        model = self._judge_model()
        out = []
        for score in scores:
            version = self._prompt_versions.get(score.metric)
            if version is None or (JUDGE_MODEL in score.details and PROMPT_VERSION in score.details):
                out.append(score)
                continue
            details = {JUDGE_MODEL: model, PROMPT_VERSION: version, **score.details}
            out.append(replace(score, details=details))
        return tuple(out)
