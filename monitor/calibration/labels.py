"""A labelled data set for ``rag-monitor calibrate``: ``eval`` rows with people's labels.

Each line is a row ``rag-monitor eval`` reads (see :mod:`monitor.offline.rows`) with a
``labels`` object: metric id -> a person's label, either a verdict ``"pass"`` / ``"defect"`` or a
value on the metric's own scale::

    {"question": "...", "context": "...", "answer": "...",
     "labels": {"groundedness": "defect", "relevance": 4}}

A row may label some metrics and not others. On a conversation row the labels are about its
last assistant turn (the turn the sidecar would judge when that message arrives).

Everything is checked before a judge call: a row without labels, an unknown metric id (with a
did-you-mean), a verdict other than pass/defect, a value outside the scale or between the points
of an integer scale are :class:`LabelError`\\ s naming the file, line and field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from monitor.evaluation.registry import MetricConfigError, MetricRegistry, default_registry
from monitor.offline.rows import Dataset, DatasetError, EvalRow, read_dataset

__all__ = ["HumanLabel", "LabelledRow", "LabelledSet", "LabelError", "read_labelled", "parse_label",
           "integer_scale", "VERDICTS"]

VERDICTS = ("pass", "defect")


class LabelError(DatasetError):
    """A label is missing or malformed; the message names the file, line and field."""


@dataclass(frozen=True, slots=True)
class HumanLabel:
    """A person's label for one metric on one row: a verdict, or a value on the metric's scale
    (its verdict then follows from the metric's defect rule, which the caller applies)."""

    verdict: str | None = None
    value: float | None = None


@dataclass(frozen=True, slots=True)
class LabelledRow:
    row: EvalRow
    labels: Mapping[str, HumanLabel]

    @property
    def key(self) -> str:
        """The row's id, else ``line N``: how reports and errors name it."""
        return self.row.row_id if self.row.row_id is not None else f"line {self.row.line}"


@dataclass(frozen=True)
class LabelledSet:
    rows: tuple[LabelledRow, ...]
    dataset: Dataset
    """The rows as ``eval`` reads them (``labels`` is among its ignored columns)."""

    def metrics(self) -> tuple[str, ...]:
        """Every metric some row labels, in order of first appearance."""
        return tuple(dict.fromkeys(m for r in self.rows for m in r.labels))


def integer_scale(scale: tuple[float, float]) -> bool:
    """A scale of ordered points (1–5, 0–7), as opposed to a 0–1 score or a binary verdict:
    such labels are compared point by point (quadratic kappa), others on the verdict."""
    low, high = scale
    return float(low).is_integer() and float(high).is_integer() and high - low >= 2


def parse_label(metric: str, raw: Any, scale: tuple[float, float]) -> HumanLabel:
    """One label; raises :class:`LabelError` (without a location prefix)."""
    if isinstance(raw, str):
        verdict = raw.strip().lower()
        if verdict not in VERDICTS:
            raise LabelError(f"labels.{metric}: {raw!r} is not a verdict (pass or defect) nor a number")
        return HumanLabel(verdict=verdict)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise LabelError(f"labels.{metric}: expected \"pass\", \"defect\" or a number on the "
                         f"{_scale_text(scale)} scale, got {json.dumps(raw)}")
    value = float(raw)
    low, high = scale
    if not math.isfinite(value) or not low <= value <= high:
        raise LabelError(f"labels.{metric}: {raw} is outside the metric's {_scale_text(scale)} scale")
    if integer_scale(scale) and not value.is_integer():
        raise LabelError(f"labels.{metric}: {raw} is between the points of the {_scale_text(scale)} "
                         "scale; give a whole number")
    return HumanLabel(value=value)


def _scale_text(scale: tuple[float, float]) -> str:
    return "–".join(f"{x:g}" for x in scale)


def _row_labels(data: Any, registry: MetricRegistry) -> dict[str, HumanLabel]:
    if not isinstance(data, Mapping) or "labels" not in data:
        raise LabelError("no labels object: add \"labels\": {METRIC: \"pass\" | \"defect\" | value}")
    raw = data["labels"]
    if not isinstance(raw, Mapping):
        raise LabelError(f"labels: expected an object of metric id -> label, got {type(raw).__name__}")
    if not raw:
        raise LabelError("labels: empty; label at least one metric")
    out = {}
    for metric, label in raw.items():
        try:
            spec = registry.get(metric)
        except MetricConfigError as exc:
            raise LabelError(f"labels.{metric}: {exc}") from None
        out[metric] = parse_label(metric, label, (float(spec.scale[0]), float(spec.scale[1])))
    return out


def read_labelled(path: str | Path, registry: MetricRegistry | None = None) -> LabelledSet:
    """The rows and labels of the JSONL file at ``path``; raises :class:`DatasetError` (a
    malformed row) or :class:`LabelError` (a malformed label), each naming the line."""
    registry = registry or default_registry()
    dataset = read_dataset(path)  # the rows' own checks first, with eval's messages
    # Read again for the labels: read_dataset keeps the rows it can evaluate, not the other columns.
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    rows = []
    for row in dataset.rows:
        try:
            labels = _row_labels(json.loads(lines[row.line - 1]), registry)
        except LabelError as exc:
            raise LabelError(f"{path}:{row.line}: {exc}") from None
        rows.append(LabelledRow(row, labels))
    return LabelledSet(tuple(rows), dataset)
