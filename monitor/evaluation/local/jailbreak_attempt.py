"""``local_jailbreak_attempt``: how likely is the user turn an attempt to jailbreak the assistant?

A learned detector (no LLM): the question is folded (NFKC, look-alike letters, leetspeak,
spaced letters, invisible and tag characters; :mod:`monitor.evaluation.local.normalise`), any
payload hidden in base64/base32/hex/binary/ROT13/reversed text is decoded, and a linear model
over hashed character and word n-grams plus structural features (role headers, chat-template
tokens, shouted authority phrases, noise suffixes, disguises undone) gives a calibrated
probability. The weights ship in the package (``jailbreak/weights.npz``, trained by
``tools/jailbreak_detector/train.py`` from public data listed in its ``DATA.md``).

The value is that probability (0-1); the turn is flagged, and the score is a defect, at or above
the metric's ``threshold``, or the threshold of its named ``operating_point`` (:data:`OPERATING_POINTS`,
the table in ``docs/local-jailbreak.md``). The default is ``balanced``: at most 1 % of the project's
benign calibration set of customer traffic and at most 3 % of its hard negatives flagged, also for
a kind of traffic the choice never saw (validated by held-out kind;
``tools/jailbreak_detector/operating_points.py``). The value is an attempt indicator about the
user, not a defect of the app, but it is reported like one so its rate shows up like every other.
``details`` names the strongest signals behind the value (n-grams and structural features that
pushed it up most), so a flagged turn can be read without rerunning the model.

Cost: only the first 4 KiB and the last 1 KiB of the question are read, with linear scans only,
so every turn costs a few milliseconds at most, whatever its length; it runs inline. The
evaluation stage flags every turn as it arrives (:meth:`JailbreakDetector.mark`); the
evaluator then reuses that verdict (a small bounded memo by trace id) instead of scoring the
question a second time.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from monitor.evaluation.local.jailbreak.model import Weights, explain, load_weights, score_text
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.model import Score, Turn

__all__ = [
    "METRIC_ID",
    "DEFAULT_THRESHOLD",
    "OPERATING_POINTS",
    "DEFAULT_OPERATING_POINT",
    "JailbreakDetection",
    "JailbreakDetector",
    "default_detector",
    "detect_jailbreak_attempt",
    "mark_jailbreak_attempt",
    "jailbreak_marker",
    "JailbreakAttemptEvaluator",
    "register",
]

METRIC_ID = "local_jailbreak_attempt"
SCALE = (0.0, 1.0)
# Named thresholds, from tools/jailbreak_detector/operating_points.json (a test keeps them equal),
# chosen from benign texts only (attacks only report recall): each point's bounds on the benign
# calibration set and on hard negatives (high_recall 3 % / 10 %, balanced 1 % / 3 %,
# high_precision 0.25 % / 1 %) hold when validated by held-out kind (the threshold chosen without a
# kind, measured on it), not only on the kinds the choice saw.
# (train.py's validation threshold, stored in weights.npz, is 0.8607: below high_recall.)
OPERATING_POINTS: dict[str, float] = {"high_precision": 0.995, "balanced": 0.97, "high_recall": 0.90}
DEFAULT_OPERATING_POINT = "balanced"
DEFAULT_THRESHOLD = OPERATING_POINTS[DEFAULT_OPERATING_POINT]
MEMO_SIZE = 4096


@dataclass(frozen=True, slots=True)
class JailbreakDetection:
    score: float
    """Calibrated probability that the text is an attempt."""
    flagged: bool
    signals: tuple[str, ...]
    """Structural signals present (e.g. ``leetspeak``, ``encoded_payload``, ``role_headers``)."""


def _has_text(text: str) -> bool:
    # Not ``text.strip()``: that copies a megabyte-long question to answer a yes/no question.
    return bool(text) and not text.isspace()


def _memo_key(turn: Turn) -> tuple[str, int, str, str]:
    # O(1) whatever the question's length: hashing a megabyte-long question would cost more
    # than the detector itself.
    q = turn.question
    return turn.trace_id, len(q), q[:32], q[-32:]


class JailbreakDetector:
    """Scores questions and remembers the latest verdicts so a turn is scored once."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, weights: Weights | None = None,
                 memo_size: int = MEMO_SIZE) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"{METRIC_ID}: threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self._weights = weights
        self._memo: OrderedDict[tuple[str, int, str, str], tuple[float, tuple[str, ...]]] = OrderedDict()
        self._memo_size = memo_size

    @property
    def weights(self) -> Weights:
        """The model this detector scores with."""
        return self._weights or load_weights()

    def _score(self, text: str) -> tuple[float, tuple[str, ...]]:
        verdict = score_text(text, self._weights or load_weights())
        return verdict.probability, verdict.signals

    def detect(self, text: str) -> JailbreakDetection:
        """The verdict on ``text`` (bounded cost whatever its length)."""
        score, signals = self._score(text)
        return JailbreakDetection(score, score >= self.threshold, signals)

    def detection_for(self, turn: Turn) -> JailbreakDetection:
        """The verdict on the turn's question, from the memo when :meth:`mark` already scored it."""
        remembered = self._memo.get(_memo_key(turn))
        if remembered is None:
            return self._remember(turn, self.detect(turn.question))
        score, signals = remembered
        return JailbreakDetection(score, score >= self.threshold, signals)

    def mark(self, turn: Turn) -> Turn:
        """``turn`` with ``jailbreak_attempt`` set (the same object when unchanged)."""
        flagged = _has_text(turn.question) and self._remember(turn, self.detect(turn.question)).flagged
        return turn if flagged == turn.jailbreak_attempt else dataclasses.replace(turn, jailbreak_attempt=flagged)

    def _remember(self, turn: Turn, detection: JailbreakDetection) -> JailbreakDetection:
        key = _memo_key(turn)
        self._memo[key] = (detection.score, detection.signals)
        self._memo.move_to_end(key)
        while len(self._memo) > self._memo_size:
            self._memo.popitem(last=False)
        return detection


@functools.cache
def default_detector() -> JailbreakDetector:
    """The detector at the default threshold, shared by the callers that have no config."""
    return JailbreakDetector()


def detect_jailbreak_attempt(text: str) -> JailbreakDetection:
    """Score ``text`` with the default detector."""
    return default_detector().detect(text)


def mark_jailbreak_attempt(turn: Turn) -> Turn:
    """``turn`` with ``jailbreak_attempt`` set by the default detector."""
    return default_detector().mark(turn)


class JailbreakAttemptEvaluator:
    """Reports the detector's probability for the question; defect at the threshold."""

    metric_ids: tuple[str, ...] = (METRIC_ID,)

    def __init__(self, detector: JailbreakDetector | None = None) -> None:
        self.detector = detector or default_detector()

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """Reuse the stage's verdict for this turn (score it when there is none): inline, bounded."""
        if not _has_text(turn.question):
            return [skipped(METRIC_ID, SCALE, "no question", {"cause": "no_question"})]
        found = self.detector.detection_for(turn)
        label = "attempt" if found.flagged else "none"
        details: dict[str, object] = {"threshold": self.detector.threshold, "signals": list(found.signals)}
        if found.flagged:
            # Only for flagged turns (a second bounded read of the question, ~1 ms): the evidence
            # someone will read. A pass says how far under the threshold it stayed.
            strongest = explain(turn.question, self.detector.weights)
            details["strongest_signals"] = list(strongest)
            listed = ", ".join(f"{s['signal']} (+{s['logits']:.1f})" for s in strongest)
            reason = f"probability {found.score:.3f} >= {self.detector.threshold:g}; strongest signals: {listed}"
        else:
            reason = f"probability {found.score:.3f} < {self.detector.threshold:g}"
        return [graded(METRIC_ID, found.score, SCALE, found.flagged, label=label, reason=reason, details=details)]


def jailbreak_marker(evaluators: Iterable[object]) -> Callable[[Turn], Turn]:
    """The flagging function for a set of evaluators: the configured detector's when
    ``local_jailbreak_attempt`` is among them (same threshold, shared memo), else the default."""
    for evaluator in evaluators:
        if isinstance(evaluator, JailbreakAttemptEvaluator):
            return evaluator.detector.mark
    return mark_jailbreak_attempt


def register(registry: MetricRegistry) -> None:
    """Add ``local_jailbreak_attempt`` to ``registry``."""

    def build(ctx: BuildContext) -> JailbreakAttemptEvaluator:
        threshold = ctx.threshold(METRIC_ID)
        detector = default_detector() if threshold == DEFAULT_THRESHOLD else JailbreakDetector(threshold)
        return JailbreakAttemptEvaluator(detector)

    registry.register(
        MetricSpec(
            METRIC_ID, "probability that the user turn is a jailbreak / prompt-injection attempt (learned, no LLM)",
            "local", SCALE, "max", build=build, default_threshold=DEFAULT_THRESHOLD,
            operating_points=OPERATING_POINTS, inputs=("question",), seed="rag-monitor",
        )
    )
