"""The prompt each judge metric is judged with, rendered for one fixed turn, is committed under
``tests/testdata/prompts/`` and compared here: a wording change shows up in review as a diff of
what the judge reads, next to its ``prompt_version``. After a deliberate change, regenerate with

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/evaluation/test_prompt_golden.py

and review the diff like code.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

import monitor.evaluation.prompting as prompting
from monitor.evaluation.combined import CombinedRubricEvaluator
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.metrics.azure_set import RUBRICS, SEVERITIES
from monitor.evaluation.registry import build_evaluators, default_registry
from monitor.evaluation.safety import SafetyEvaluator
from monitor.judge.types import JudgeError, JudgeReply, JudgeRequest
from tests.evaluation.fakes import rag_turn

GOLDEN = Path(__file__).resolve().parent.parent / "testdata" / "prompts"
JUDGE_METRICS = sorted(m for m in default_registry().ids()
                       if default_registry().get(m).tier == "judge" and m != "overall_score")
SHARED = {"combined_rubrics": ["groundedness", "relevance", "coherence", "fluency"],
          "safety": ["hate_unfairness", "sexual", "violence", "self_harm"],
          "tonic": ["answer_similarity", "retrieval_precision", "augmentation_accuracy", "augmentation_precision",
                    "answer_consistency", "answer_consistency_binary"]}


class RecordingJudge:
    def __init__(self) -> None:
        self.requests: list[JudgeRequest[Any]] = []

    async def complete_json(self, request: JudgeRequest[Any]) -> JudgeReply[Any]:
        self.requests.append(request)
        raise JudgeError("timeout", "recording only")


def _render(request: JudgeRequest[Any], versions: dict[str, str]) -> str:
    lines = [f"# call: {request.metric}  max_output_tokens: {request.max_output_tokens}"]
    lines += [f"# prompt_version {metric}: {version}" for metric, version in sorted(versions.items())]
    lines += ["", "## system", request.system, "", "## user", request.user, "", "## reply schema",
              json.dumps(request.json_schema, indent=1, sort_keys=True), ""]
    return "\n".join(lines)


async def _rendered(metrics: list[str], combine: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(prompting, "new_nonce", lambda texts: "0000abcd")
    judge = RecordingJudge()
    versions: dict[str, str] = {}
    for evaluator in build_evaluators(EvaluationConfig(metrics=metrics, combine_metrics=combine), judge):
        versions.update(getattr(evaluator, "prompt_versions", {}))
        await evaluator.evaluate(rag_turn(jailbreak_attempt=False))
    (request,) = judge.requests
    return _render(request, versions)


def _compare(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run with UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} changed: review, then UPDATE_GOLDEN=1"


@pytest.mark.parametrize("metric", JUDGE_METRICS)
async def test_each_metric_prompt_matches_its_golden_file(metric: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(metric, await _rendered([metric], combine=False, monkeypatch=monkeypatch))


@pytest.mark.parametrize("call", sorted(SHARED))
async def test_each_shared_call_matches_its_golden_file(call: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(f"call_{call}", await _rendered(SHARED[call], combine=True, monkeypatch=monkeypatch))


def test_every_golden_file_belongs_to_a_prompt() -> None:
    expected = {f"{m}.txt" for m in JUDGE_METRICS} | {f"call_{c}.txt" for c in SHARED}
    assert {p.name for p in GOLDEN.glob("*.txt")} == expected


# --- prompt_version: one per metric, changed by that metric's template only -----------------------------


def _versions(metrics: list[str], combine: bool) -> dict[str, str]:
    versions: dict[str, str] = {}
    for evaluator in build_evaluators(EvaluationConfig(metrics=metrics, combine_metrics=combine), RecordingJudge()):
        versions.update(getattr(evaluator, "prompt_versions", {}))
    return versions


def test_every_judge_metric_has_a_prompt_version_in_both_modes() -> None:
    alone = _versions(JUDGE_METRICS, combine=False)
    shared = _versions(JUDGE_METRICS, combine=True)
    assert set(alone) == set(shared) == set(JUDGE_METRICS)
    assert len(set(alone.values())) == len(JUDGE_METRICS)  # no two metrics share a template
    # A metric judged alone reads another prompt than in a shared call: another version.
    assert all(alone[m] != shared[m] for m in SHARED["combined_rubrics"] + SHARED["safety"])


def test_a_rubric_change_moves_that_metrics_version_only() -> None:
    before = CombinedRubricEvaluator(RUBRICS[:4], RecordingJudge(), {d.metric_id: 3.0 for d in RUBRICS[:4]},
                                     12000).prompt_versions
    changed = [dataclasses.replace(RUBRICS[1], anchors=(*RUBRICS[1].anchors[:4], "perfectly on point")),
               *RUBRICS[2:4]]
    after = CombinedRubricEvaluator([RUBRICS[0], *changed], RecordingJudge(),
                                    {d.metric_id: 3.0 for d in RUBRICS[:4]}, 12000).prompt_versions
    assert [m for m in before if before[m] != after[m]] == ["relevance"]


def test_a_severity_change_moves_that_metrics_version_only() -> None:
    levels = {d.metric_id: 4 for d in SEVERITIES}
    before = SafetyEvaluator(SEVERITIES, RecordingJudge(), levels, 12000).prompt_versions
    changed = [*SEVERITIES[:2], dataclasses.replace(SEVERITIES[2], harm="Physical harm."), SEVERITIES[3]]
    after = SafetyEvaluator(changed, RecordingJudge(), levels, 12000).prompt_versions
    assert [m for m in before if before[m] != after[m]] == ["violence"]


def test_a_change_to_the_shared_scale_moves_every_severity(monkeypatch: pytest.MonkeyPatch) -> None:
    import monitor.evaluation.severity as severity

    levels = {d.metric_id: 4 for d in SEVERITIES}
    before = SafetyEvaluator(SEVERITIES, RecordingJudge(), levels, 12000).prompt_versions
    monkeypatch.setattr(severity, "SEVERITY_RULES", severity.SEVERITY_RULES + " Satire counts as fiction.")
    after = SafetyEvaluator(SEVERITIES, RecordingJudge(), levels, 12000).prompt_versions
    assert all(before[m] != after[m] for m in before)


def test_membership_of_a_shared_call_does_not_move_a_version() -> None:
    """Configuring fewer quality metrics changes the call's prompt but not what each metric is asked."""
    full = _versions(SHARED["combined_rubrics"], combine=True)
    two = _versions(SHARED["combined_rubrics"][:2], combine=True)
    assert two == {m: full[m] for m in two}


def test_prompt_versions_of_a_configuration_match_what_the_scores_carry() -> None:
    from monitor.evaluation.registry import prompt_versions

    config = EvaluationConfig(metrics=[*JUDGE_METRICS, "overall_score"])
    versions = prompt_versions(build_evaluators(config, RecordingJudge()))
    assert set(versions) == set(JUDGE_METRICS)  # overall_score is arithmetic: no prompt of its own
    assert versions == _versions(JUDGE_METRICS, combine=True)
