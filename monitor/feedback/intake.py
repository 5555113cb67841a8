"""What ``POST /api/feedback`` and ``GET /api/agreement`` ask of the feedback stage.

The admin server (``monitor.admin.feedback_api``) owns HTTP: access, body size, JSON. This module
owns the rest: the body's fields, the verdict, its join, and the documents. Errors are classified
here and mapped to status codes at the edge: :class:`monitor.feedback.verdicts.VerdictError` (a
``ValueError`` naming its ``field``) is the client's, :class:`monitor.feedback.join.StoreUnavailable`
(a ``ConnectionError``) is retryable.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping

from monitor.feedback.join import VerdictJoin
from monitor.feedback.metrics import AgreementBoard, snapshot_document
from monitor.feedback.verdicts import DefectRule, HumanVerdict, VerdictError, make_verdict

__all__ = ["ApiIntake", "FIELDS", "verdict_document"]

FIELDS = ("trace_id", "metric", "verdict", "value", "reviewer")
_REQUIRED = ("trace_id", "metric", "reviewer")


def verdict_document(v: HumanVerdict) -> dict[str, Any]:
    return {"trace_id": v.trace_id, "metric": v.metric, "verdict": v.verdict, "value": v.value,
            "reviewer": v.reviewer, "source": v.source, "at": v.at}


class ApiIntake:
    """``monitor.admin.feedback_api.VerdictIntake`` over the verdict join and the agreement board."""

    def __init__(self, rules: Mapping[str, DefectRule], join: VerdictJoin, board: AgreementBoard,
                 clock: Callable[[], float] = time.time) -> None:
        self._rules = rules
        self._join = join
        self._board = board
        self._clock = clock

    async def take(self, fields: Mapping[str, object]) -> dict[str, Any]:
        """``{"verdict": {...}, "join": {...}}`` for one verdict; runs on the admin thread's loop."""
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise VerdictError(unknown[0], f"unknown field (fields: {', '.join(FIELDS)})")
        for name in _REQUIRED:
            if name not in fields:
                raise VerdictError(name, "required")
        verdict = make_verdict(self._rules, trace_id=fields["trace_id"], metric=fields["metric"],
                               verdict=fields.get("verdict"), value=fields.get("value"),
                               reviewer=fields["reviewer"], source="api", at=self._clock())
        state = await self._join.submit_threadsafe(verdict)
        return {"verdict": verdict_document(verdict), "join": state.document()}

    def agreement(self) -> dict[str, Any]:
        return snapshot_document(self._board.snapshot())
