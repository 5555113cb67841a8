"""The feedback stage's parts, built from the configuration for the composition root.

``monitor.app`` wires them: the tap in front of the assembler (verdicts over OTLP), the join as a
result consumer and a component (after the store it reads), the collector on the registry, and the
intake behind the admin server's ``/api/feedback`` and ``/api/agreement``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from prometheus_client import CollectorRegistry

from exporters.config import StoreConfig
from monitor.evaluation.config import EvaluationConfig
from monitor.feedback.intake import ApiIntake
from monitor.feedback.join import VerdictJoin
from monitor.feedback.metrics import AgreementBoard, AgreementCollector
from monitor.feedback.review import ReviewDesign
from monitor.feedback.review_config import ReviewConfig
from monitor.feedback.store import PostgresVerdicts, SqliteVerdicts, VerdictStore
from monitor.feedback.verdicts import DefectRule, defect_rules
from monitor.evaluation.registry import default_registry
from monitor.judge.config import JudgeConfig
from monitor.telemetry import Telemetry

__all__ = ["FeedbackStage", "build_feedback", "judge_models"]


@dataclass(frozen=True, slots=True)
class FeedbackStage:
    rules: Mapping[str, DefectRule]
    board: AgreementBoard
    join: VerdictJoin
    intake: ApiIntake
    collector: AgreementCollector


def judge_models(evaluation: EvaluationConfig, judge: JudgeConfig) -> dict[str, str]:
    """The ``judge_model`` label of each metric: the configured judge model for judge metrics,
    ``local`` for local ones, the service's name for a metric a scoring service answers."""
    registry = default_registry()
    model = judge.effective_model or "unknown"
    out: dict[str, str] = {}
    for metric, options in evaluation.resolve_options(registry).items():
        if registry.get(metric).tier == "local":
            out[metric] = "local"
        elif options.backend != "judge":
            out[metric] = options.backend
        else:
            out[metric] = model
    return out


def _verdict_store(store: StoreConfig) -> VerdictStore | None:
    if not store.enabled:
        return None
    if store.dialect == "postgresql" and store.url is not None:
        return PostgresVerdicts(store.url.get_secret_value(), store.timeout_seconds)
    return SqliteVerdicts(store.sqlite_path)


def build_feedback(evaluation: EvaluationConfig, judge: JudgeConfig, store: StoreConfig, review: ReviewConfig,
                   telemetry: Telemetry, registry: CollectorRegistry) -> FeedbackStage:
    """Builds the parts and registers the agreement gauges on ``registry``."""
    rules = defect_rules(evaluation)
    board = AgreementBoard()
    join = VerdictJoin(rules, judge_models(evaluation, judge), board, telemetry, store=_verdict_store(store),
                       design=ReviewDesign(review), retention_seconds=store.max_age_hours * 3600.0)
    collector = AgreementCollector(board)
    registry.register(collector)
    return FeedbackStage(rules, board, join, ApiIntake(rules, join, board), collector)
