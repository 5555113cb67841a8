"""Reading a labelled set: good rows, and every malformed label named by line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.calibration.labels import HumanLabel, LabelError, read_labelled
from monitor.offline.rows import DatasetError

QA: dict[str, Any] = {"question": "Is the tent waterproof?", "context": "The tent is waterproof.",
                      "answer": "Yes."}


def _write(path: Path, *rows: Any) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_verdicts_and_values_per_metric(tmp_path: Path) -> None:
    conversation = {"id": "c1", "messages": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Is it waterproof?"}, {"role": "assistant", "content": "Yes."}],
        "labels": {"relevance": 2}}
    labelled = read_labelled(_write(tmp_path / "l.jsonl", {**QA, "labels": {"groundedness": "Defect ",
                                                                              "relevance": 4}}, conversation))
    first, second = labelled.rows
    assert first.labels == {"groundedness": HumanLabel(verdict="defect"), "relevance": HumanLabel(value=4.0)}
    assert (first.key, second.key, len(second.row.turns)) == ("line 1", "c1", 2)
    assert labelled.metrics() == ("groundedness", "relevance")


@pytest.mark.parametrize(("labels", "message"), [
    (None, r"l\.jsonl:2: no labels object"),
    ("defect", r"l\.jsonl:2: labels: expected an object of metric id -> label, got str"),
    ({}, r"l\.jsonl:2: labels: empty"),
    ({"groundednes": "defect"}, r"l\.jsonl:2: labels\.groundednes: .*groundedness"),
    ({"groundedness": "bad"}, r"l\.jsonl:2: labels\.groundedness: 'bad' is not a verdict \(pass or defect\)"),
    ({"groundedness": True}, r"l\.jsonl:2: labels\.groundedness: expected \"pass\", \"defect\" or a number on the 1–5"),
    ({"groundedness": 6}, r"l\.jsonl:2: labels\.groundedness: 6 is outside the metric's 1–5 scale"),
    ({"groundedness": 3.5}, r"l\.jsonl:2: labels\.groundedness: 3\.5 is between the points of the 1–5 scale"),
    ({"violence": -1}, r"l\.jsonl:2: labels\.violence: -1 is outside the metric's 0–7 scale"),
])
def test_bad_labels_are_named(tmp_path: Path, labels: Any, message: str) -> None:
    second = dict(QA) if labels is None else {**QA, "labels": labels}
    path = _write(tmp_path / "l.jsonl", {**QA, "labels": {"groundedness": 4}}, second)
    with pytest.raises(LabelError, match=message):
        read_labelled(path)


def test_a_fraction_on_a_zero_to_one_scale_is_a_value(tmp_path: Path) -> None:
    labelled = read_labelled(_write(tmp_path / "l.jsonl", {**QA, "labels": {"retrieval_precision": 0.25}}))
    assert labelled.rows[0].labels["retrieval_precision"] == HumanLabel(value=0.25)


def test_a_malformed_row_fails_as_eval_says(tmp_path: Path) -> None:
    path = _write(tmp_path / "l.jsonl", {"answr": "Yes.", "labels": {"groundedness": 4}})
    with pytest.raises(DatasetError, match=r"l\.jsonl:1: unknown column 'answr'; did you mean 'answer'"):
        read_labelled(path)
