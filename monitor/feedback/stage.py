"""The feedback stage's parts, built from the configuration for the composition root.

``monitor.app`` wires them: the tap in front of the assembler (verdicts over OTLP), the join as a
result consumer and a component (after the store it reads), and the intake behind the admin
server's ``/api/feedback`` and ``/api/agreement``. The board and its collector outlive a restart
of the sidecar (one registration per registry), so the caller creates them once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from exporters.config import StoreConfig
from monitor.evaluation.config import EvaluationConfig
from monitor.feedback.intake import ApiIntake
from monitor.feedback.join import VerdictJoin
from monitor.feedback.metrics import AgreementBoard
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
                   telemetry: Telemetry, board: AgreementBoard) -> FeedbackStage:
    """Builds the parts; the join publishes to ``board``."""
    rules = defect_rules(evaluation)
    join = VerdictJoin(rules, judge_models(evaluation, judge), board, telemetry, store=_verdict_store(store),
                       design=ReviewDesign(review), retention_seconds=store.max_age_hours * 3600.0)
    return FeedbackStage(rules, board, join, ApiIntake(rules, join, board))
