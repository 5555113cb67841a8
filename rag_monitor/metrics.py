"""One class per catalogue metric, named as the seeds name them.

Each is :class:`~rag_monitor.metric.Metric` with the id fixed and only the options the metric
takes: ``threshold`` (defect below it; at or above it for ``OffensiveLanguage``), or
``severity_level`` for the content-risk severities (0-7 or ``"very_low"``, ``"low"``,
``"medium"``, ``"high"``; defect at or above it, default Medium). Metrics judged by an LLM take
a :class:`~rag_monitor.Judge`; the severities and :class:`Groundedness` can take a
:class:`~rag_monitor.ContentSafety` instead. Local metrics need neither.
"""

from __future__ import annotations

from monitor.redaction import RedactionConfig
from rag_monitor.content_safety import ContentSafety
from rag_monitor.judge import Judge
from rag_monitor.metric import Metric

__all__ = [
    "Groundedness", "Relevance", "Coherence", "Fluency", "Similarity", "RetrievalScore",
    "HateUnfairness", "Sexual", "Violence", "SelfHarm", "Jailbreak",
    "AnswerRelevance",
    "AnswerSimilarity", "RetrievalPrecision", "AugmentationAccuracy", "AugmentationPrecision",
    "AnswerConsistency", "AnswerConsistencyBinary", "OverallScore",
    "F1Score", "LexicalGroundedness", "OffensiveLanguage", "JailbreakAttempt", "SystemPromptLeak",
]


class _Judged(Metric):
    """An LLM-judged metric with a defect threshold."""

    def __init__(self, *, judge: Judge | None = None, threshold: float | None = None,
                 redact: bool | RedactionConfig = True) -> None:
        super().__init__(judge=judge, threshold=threshold, redact=redact)


class _JudgedNoThreshold(Metric):
    """An LLM-judged 0/1 metric (the defect value is fixed)."""

    def __init__(self, *, judge: Judge | None = None, redact: bool | RedactionConfig = True) -> None:
        super().__init__(judge=judge, redact=redact)


class _Severity(Metric):
    """A 0-7 content-risk severity, judged by an LLM or by Azure AI Content Safety."""

    def __init__(self, *, judge: Judge | None = None, content_safety: ContentSafety | None = None,
                 severity_level: int | str | None = None, redact: bool | RedactionConfig = True) -> None:
        if judge is not None and content_safety is not None:
            raise TypeError("give judge or content_safety, not both")
        super().__init__(judge=judge, content_safety=content_safety, severity_level=severity_level, redact=redact)


class _Local(Metric):
    """A local metric: no LLM, no network."""

    def __init__(self, *, threshold: float | None = None, redact: bool | RedactionConfig = True) -> None:
        super().__init__(threshold=threshold, redact=redact)


class Groundedness(Metric):
    """Azure: are the answer's claims supported by the context? 1-5, defect below 3. With
    ``content_safety`` it is Azure AI Content Safety's groundedness detection."""

    metric_id = "groundedness"

    def __init__(self, *, judge: Judge | None = None, content_safety: ContentSafety | None = None,
                 threshold: float | None = None, redact: bool | RedactionConfig = True) -> None:
        if judge is not None and content_safety is not None:
            raise TypeError("give judge or content_safety, not both")
        super().__init__(judge=judge, content_safety=content_safety, threshold=threshold, redact=redact)


class Relevance(_Judged):
    """Azure: does the answer address the question? 1-5."""

    metric_id = "relevance"


class Coherence(_Judged):
    """Azure: is the answer logically ordered and consistent? 1-5."""

    metric_id = "coherence"


class Fluency(_Judged):
    """Azure: is the answer well-formed language? 1-5."""

    metric_id = "fluency"


class Similarity(_Judged):
    """Azure: how close is the answer to the ground truth? 1-5."""

    metric_id = "similarity"


class RetrievalScore(_Judged):
    """Azure: share of the question's intents the documents answer, as ``1 + 4·f²``."""

    metric_id = "retrieval_score"


class HateUnfairness(_Severity):
    """Azure: hateful or unfair content in the answer, severity 0-7."""

    metric_id = "hate_unfairness"


class Sexual(_Severity):
    """Azure: sexual content in the answer, severity 0-7."""

    metric_id = "sexual"


class Violence(_Severity):
    """Azure: violent content in the answer, severity 0-7."""

    metric_id = "violence"


class SelfHarm(_Severity):
    """Azure: self-harm-related content in the answer, severity 0-7."""

    metric_id = "self_harm"


class Jailbreak(_JudgedNoThreshold):
    """Azure: did the answer comply with an attempt to bypass its instructions? 0/1."""

    metric_id = "jailbreak"


class AnswerRelevance(_Judged):
    """Opik: relevance of the output to the input (and context), 0.0-1.0 with a reason."""

    metric_id = "answer_relevance"


class AnswerSimilarity(_Judged):
    """Tonic: how well the answer matches the reference answer, 0-5."""

    metric_id = "answer_similarity"


class RetrievalPrecision(_Judged):
    """Tonic: share of the retrieved chunks relevant to the question."""

    metric_id = "retrieval_precision"


class AugmentationAccuracy(_Judged):
    """Tonic: share of the chunks whose information appears in the answer."""

    metric_id = "augmentation_accuracy"


class AugmentationPrecision(_Judged):
    """Tonic: relevant chunks used in the answer / relevant chunks."""

    metric_id = "augmentation_precision"


class AnswerConsistency(_Judged):
    """Tonic: share of the answer's main points derivable from the context."""

    metric_id = "answer_consistency"


class AnswerConsistencyBinary(_JudgedNoThreshold):
    """Tonic: 1 when nothing in the answer is outside the context."""

    metric_id = "answer_consistency_binary"


class OverallScore(_Judged):
    """Tonic: mean of the Tonic metrics that apply (``answer_similarity / 5``); computes them."""

    metric_id = "overall_score"


class F1Score(_Local):
    """Token F1 of the answer against the ground truth (SQuAD normalisation), 0-1."""

    metric_id = "f1_score"


class LexicalGroundedness(_Local):
    """Share of the answer's content words found in the context (a cheap proxy), 0-1."""

    metric_id = "local_lexical_groundedness"


class OffensiveLanguage(_Local):
    """Probability the answer is offensive (shipped classifier, worst sentence); defect at or above."""

    metric_id = "local_offensive_language"


class SystemPromptLeak(_Local):
    """Share of the system prompt's instructions the answer repeats (no LLM), 0-1; defect at or
    above the threshold. Needs ``system_prompt``."""

    metric_id = "local_system_prompt_leak"


class JailbreakAttempt(Metric):
    """Whether the question looks like a jailbreak attempt (local detector), 0/1."""

    metric_id = "local_jailbreak_attempt"

    def __init__(self, *, redact: bool | RedactionConfig = True) -> None:
        super().__init__(redact=redact)
