"""rag-monitor's evaluators as a Python API: one object per metric, sync and async.

The objects run the very evaluators the sidecar runs (same prompts, parsers, thresholds, judge
client with its budgets and retries), so a score here means what it means on the dashboard::

    from rag_monitor import Groundedness, Judge

    with Judge(base_url="http://localhost:8000/v1", model="gpt-4o-mini") as judge:
        result = Groundedness(judge=judge).score(
            question="Which tent is the most waterproof?",
            context=["The Alpine Explorer tent has the highest rainfly rating, 3000 mm."],
            answer="The Alpine Explorer tent.").raise_for_error()
        print(result.value, result.passed, result.reason)

``await metric.ascore(...)`` is the async form; :class:`Scorer` scores many metrics over many
rows with bounded concurrency and progress; :func:`compare_jailbreak` is the Azure seed's
jailbreak comparison of a baseline set and its jailbreak-injected copy. A failure is never a number: ``result.status`` is
``"error"`` (with ``error_type``) or ``"skipped"`` and ``result.value`` is None;
``result.raise_for_error()`` turns an error into a :class:`MetricError`.
"""

from rag_monitor.content_safety import ContentSafety
from rag_monitor.jailbreak import ComparisonReport, acompare_jailbreak, compare_jailbreak, format_comparison
from rag_monitor.judge import Judge, JudgeStats
from rag_monitor.metric import Metric
from rag_monitor.metrics import (
    AnswerConsistency,
    AnswerConsistencyBinary,
    AnswerRelevance,
    AnswerSimilarity,
    AugmentationAccuracy,
    AugmentationPrecision,
    Coherence,
    F1Score,
    Fluency,
    Groundedness,
    HateUnfairness,
    Jailbreak,
    JailbreakAttempt,
    LexicalGroundedness,
    OffensiveLanguage,
    OverallScore,
    Relevance,
    RetrievalPrecision,
    RetrievalScore,
    SelfHarm,
    Sexual,
    Similarity,
    SystemPromptLeak,
    Violence,
)
from rag_monitor.results import MetricError, MetricResult, Status, Usage
from rag_monitor.scorer import Progress, RowResult, Scorer

__all__ = [
    "Judge", "JudgeStats", "ContentSafety",
    "Metric", "MetricResult", "MetricError", "Status", "Usage",
    "Scorer", "RowResult", "Progress",
    "compare_jailbreak", "acompare_jailbreak", "ComparisonReport", "format_comparison",
    "Groundedness", "Relevance", "Coherence", "Fluency", "Similarity", "RetrievalScore",
    "HateUnfairness", "Sexual", "Violence", "SelfHarm", "Jailbreak",
    "AnswerRelevance",
    "AnswerSimilarity", "RetrievalPrecision", "AugmentationAccuracy", "AugmentationPrecision",
    "AnswerConsistency", "AnswerConsistencyBinary", "OverallScore",
    "F1Score", "LexicalGroundedness", "OffensiveLanguage", "JailbreakAttempt", "SystemPromptLeak",
]
