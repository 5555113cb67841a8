"""``rag-monitor calibrate`` end to end: the real command in a process, the real ``openai``
client, and a scripted judge on 127.0.0.1 whose error rate is known.

Row i carries a person's groundedness value ``h(i)`` (1–5, uniform). A judge model named
``err-E`` answers ``h(i)`` except on rows it gets wrong, which it picks deterministically with
probability E from a hash of (model, row): there it answers a value on the other side of the
defect rule (``< 3``). So the true agreement is exactly ``1 − E`` and the true quadratic kappa
follows from the error model (:func:`true_quadratic_kappa`, computed here independently of the
code under test). A model named ``lenient`` answers ``h + 1``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from tests.support.judge_server import JudgeServer, RecordedRequest, schema_reply

ROWS = 300
WRONG = {1: 4, 2: 5, 3: 1, 4: 2, 5: 1}
"""The value a wrong answer gives for each true value: always across the ``< 3`` rule."""
JUDGE = {"max_retries": 0, "timeout_seconds": 5, "deadline_seconds": 10, "circuit_breaker": {"failure_threshold": 1000}}


def human_value(i: int) -> int:
    return i % 5 + 1


def is_wrong(model: str, i: int, rate: float) -> bool:
    digest = hashlib.sha256(f"{model}:{i}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def judge_value(model: str, i: int) -> int:
    h = human_value(i)
    if model == "lenient":
        return min(5, h + 1)
    rate = float(model.removeprefix("err-"))
    return WRONG[h] if is_wrong(model, i, rate) else h


def true_quadratic_kappa(error: float) -> float:
    """Kappa of the population: people uniform on 1–5, the judge right with probability 1 − error."""
    points = range(1, 6)
    p_h = {h: 1 / 5 for h in points}
    joint = {(j, h): 0.0 for j in points for h in points}
    for h in points:
        joint[(h, h)] += p_h[h] * (1 - error)
        joint[(WRONG[h], h)] += p_h[h] * error
    p_j = {j: sum(joint[(j, h)] for h in points) for j in points}
    w = {(j, h): (j - h) ** 2 / 16 for j in points for h in points}
    observed = sum(w[c] * joint[c] for c in joint)
    expected = sum(w[(j, h)] * p_j[j] * p_h[h] for j in points for h in points)
    return 1 - observed / expected


def true_verdict_kappa(error: float, defect_share: float) -> float:
    judge_defect = defect_share * (1 - error) + (1 - defect_share) * error
    chance = judge_defect * defect_share + (1 - judge_defect) * (1 - defect_share)
    return ((1 - error) - chance) / (1 - chance)


async def scripted(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
    match = re.search(r"Question number (\d+):", json.dumps(rec.body))
    assert match
    value = judge_value(str(rec.body["model"]), int(match.group(1)))
    return await schema_reply({"groundedness": value})(server, request, rec)


def write_labels(path: Path, *, verdicts: bool = False) -> Path:
    lines = []
    for i in range(ROWS):
        h = human_value(i)
        label: Any = ("defect" if h < 3 else "pass") if verdicts else h
        lines.append(json.dumps({"id": f"r{i}", "question": f"Question number {i}: is the tent waterproof?",
                                 "context": "The tent is waterproof.", "answer": "It is waterproof.",
                                 "labels": {"groundedness": label}}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_config(path: Path, base_url: str, model: str) -> Path:
    path.write_text(yaml.safe_dump({"judge": {**JUDGE, "base_url": base_url, "model": model}}), encoding="utf-8")
    return path


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith("RAG_MONITOR_") and k not in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")}


async def calibrate(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor.cli", "calibrate", *args, env=_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def contains(interval: dict[str, float], truth: float) -> bool:
    return interval["lower"] <= truth <= interval["upper"]


async def test_agreement_and_kappa_intervals_contain_the_true_values(tmp_path: Path) -> None:
    labels, out = write_labels(tmp_path / "labels.jsonl"), tmp_path / "report.json"
    async with JudgeServer(default=scripted) as server:
        config = write_config(tmp_path / "a.yaml", server.base_url, "err-0.15")
        code, stdout, stderr = await calibrate(str(labels), "-c", str(config), "--out", str(out))
    assert code == 0, stderr
    assert len(server.requests) == ROWS
    report = json.loads(out.read_text())
    g = report["metrics"]["groundedness"]
    assert (g["n"], g["unscored"], g["kappa"]["on"], g["defect_rule"]) == (ROWS, 0, "value", "defect when < 3")
    # The point estimate is the sample's own share of rows the scripted judge got right…
    wrong = sum(is_wrong("err-0.15", i, 0.15) for i in range(ROWS))
    assert g["agreement"]["value"] == (ROWS - wrong) / ROWS
    # …and the intervals contain the population's values.
    assert contains(g["agreement"], 0.85), g["agreement"]
    assert contains(g["kappa"], true_quadratic_kappa(0.15)), (g["kappa"], true_quadratic_kappa(0.15))
    counts = g["confusion"]["counts"]
    assert sum(c for row in counts.values() for c in row.values()) == ROWS
    assert counts["defect"]["pass"] + counts["pass"]["defect"] == wrong
    # The rates of the confusion matrix are its counts' shares (their intervals are Wilson's, as tested
    # in test_agreement.py).
    people_defect = counts["defect"]["defect"] + counts["pass"]["defect"]
    recall = g["confusion"]["defect_recall"]
    assert recall["value"] == counts["defect"]["defect"] / people_defect == (120 - sum(
        is_wrong("err-0.15", i, 0.15) for i in range(ROWS) if human_value(i) < 3)) / 120
    assert recall["lower"] < recall["value"] < recall["upper"]
    assert g["best_threshold"]["current"] == 3 and g["best_threshold"]["threshold"] == 3
    judge = report["judge"]
    assert judge["model"] == judge["served_model"] == "err-0.15" and re.fullmatch(r"[0-9a-f]{12}", judge["prompt_version"]["groundedness"])
    # The table says the same.
    row = next(ln for ln in stdout.splitlines() if ln.startswith("groundedness"))
    assert f"{g['agreement']['value']:.3f} [{g['agreement']['lower']:.3f}, {g['agreement']['upper']:.3f}]" in row
    assert "err-0.15" in stdout and judge["prompt_version"]["groundedness"] in stdout


async def test_verdict_labels_give_kappa_on_the_verdict(tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", verdicts=True)
    async with JudgeServer(default=scripted) as server:
        code, stdout, stderr = await calibrate(str(labels), "--judge-base-url", server.base_url,
                                               "--judge-model", "err-0.2", "--json")
    assert code == 0, stderr
    g = json.loads(stdout)["metrics"]["groundedness"]
    assert g["kappa"]["on"] == "verdict"
    assert contains(g["agreement"], 0.8) and contains(g["kappa"], true_verdict_kappa(0.2, 2 / 5)), g


async def test_compare_config_ranks_the_better_judge_first(tmp_path: Path) -> None:
    labels, out = write_labels(tmp_path / "labels.jsonl"), tmp_path / "report.json"
    async with JudgeServer(default=scripted) as server:
        worse = write_config(tmp_path / "worse.yaml", server.base_url, "err-0.35")
        better = write_config(tmp_path / "better.yaml", server.base_url, "err-0.05")
        code, stdout, stderr = await calibrate(str(labels), "-c", str(worse), "--compare-config", str(better),
                                               "--out", str(out))
        assert code == 0, stderr
        # And the other way round: the sign follows which one is compared.
        code_r, stdout_r, stderr_r = await calibrate(str(labels), "-c", str(better), "--compare-config", str(worse),
                                                     "--json")
    assert code_r == 0, stderr_r
    report = json.loads(out.read_text())
    assert (report["judge"]["model"], report["compare"]["judge"]["model"]) == ("err-0.35", "err-0.05")
    diff = report["compare"]["difference"]["groundedness"]
    assert diff["n"] == ROWS
    assert diff["agreement"]["lower"] > 0 and contains(diff["agreement"], 0.30), diff
    assert diff["kappa"]["lower"] > 0
    assert contains(diff["kappa"], true_quadratic_kappa(0.05) - true_quadratic_kappa(0.35)), diff
    assert report["compare"]["metrics"]["groundedness"]["agreement"]["value"] > \
        report["metrics"]["groundedness"]["agreement"]["value"]
    reverse = json.loads(stdout_r)["compare"]["difference"]["groundedness"]
    assert reverse["agreement"]["upper"] < 0 and reverse["kappa"]["upper"] < 0
    assert reverse["agreement"]["value"] == -diff["agreement"]["value"]
    assert "difference (compared − base, same rows)" in stdout


async def test_best_threshold_of_a_lenient_judge(tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl")
    async with JudgeServer(default=scripted) as server:
        code, stdout, stderr = await calibrate(str(labels), "--judge-base-url", server.base_url,
                                               "--judge-model", "lenient", "--json")
    assert code == 0, stderr
    best = json.loads(stdout)["metrics"]["groundedness"]["best_threshold"]
    assert (best["threshold"], best["agreement"]["value"], best["current"]) == (4, 1.0, 3)
    assert best["current_agreement"]["value"] == 0.8  # every person's 2 passed by the judge's 3


async def test_fail_under_gates_on_kappa(tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl")
    async with JudgeServer(default=scripted) as server:
        args = (str(labels), "--judge-base-url", server.base_url, "--judge-model", "err-0.15")
        code_low, _, err_low = await calibrate(*args, "--fail-under", "groundedness=0.99")
        code_ok, _, err_ok = await calibrate(*args, "--fail-under", "groundedness=0.2")
        before = len(server.requests)
        code_bad, _, err_bad = await calibrate(*args, "--fail-under", "relevance=0.5")
        code_range, _, err_range = await calibrate(*args, "--fail-under", "groundedness=3.5")
        assert len(server.requests) == before  # usage errors cost no judge call
    assert code_low == 3 and re.search(r"fail-under: groundedness: kappa 0\.\d{3} < 0\.99", err_low), err_low
    assert code_ok == 0, err_ok
    assert code_bad == 2 and "--fail-under relevance: not among the calibrated metrics (groundedness)" in err_bad
    assert code_range == 2 and "a kappa lies between -1 and 1" in err_range


async def test_bad_label_file_exits_2_before_any_judge_call(tmp_path: Path) -> None:
    good, labels = write_labels(tmp_path / "good.jsonl"), write_labels(tmp_path / "labels.jsonl")
    lines = labels.read_text().splitlines()
    row = json.loads(lines[41])
    row["labels"] = {"groundedness": "wrong"}
    lines[41] = json.dumps(row)
    labels.write_text("\n".join(lines) + "\n")
    async with JudgeServer(default=scripted) as server:
        code, _, stderr = await calibrate(str(labels), "--judge-base-url", server.base_url, "--judge-model", "err-0.1")
        code_metric, _, stderr_metric = await calibrate(str(good), "--judge-base-url",
                                                        server.base_url, "--judge-model", "err-0.1",
                                                        "--metrics", "relevance")
        code_off, _, stderr_off = await calibrate(str(good))
        code_out, _, stderr_out = await calibrate(str(good), "--judge-base-url", server.base_url, "--judge-model",
                                                  "err-0.1", "--out", str(tmp_path / "missing" / "report.json"))
    assert server.requests == []
    assert code == 2 and "labels.jsonl:42: labels.groundedness: 'wrong' is not a verdict" in stderr, stderr
    assert code_metric == 2 and "--metrics: no row labels relevance" in stderr_metric, stderr_metric
    assert code_out == 2 and "--out: cannot write" in stderr_out, stderr_out
    assert code_off == 2 and "groundedness need the judge, which is off" in stderr_off, stderr_off


async def test_a_prompt_change_shows_in_the_judge_identity(tmp_path: Path) -> None:
    # The same model asked with another prompt: combine_metrics off sends each rubric on its own.
    rows = [json.loads(ln) for ln in write_labels(tmp_path / "all.jsonl").read_text().splitlines()[:40]]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    async with JudgeServer(default=scripted) as server:
        combined = write_config(tmp_path / "combined.yaml", server.base_url, "err-0.1")
        separate = write_config(tmp_path / "separate.yaml", server.base_url, "err-0.1")
        config = yaml.safe_load(separate.read_text())
        separate.write_text(yaml.safe_dump({**config, "evaluation": {"combine_metrics": False}}))
        code, stdout, stderr = await calibrate(str(labels), "-c", str(combined), "--compare-config", str(separate),
                                               "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    base, other = report["judge"]["prompt_version"], report["compare"]["judge"]["prompt_version"]
    assert set(base) == set(other) == {"groundedness"}
    assert base["groundedness"] != other["groundedness"]
    assert report["judge"]["model"] == report["compare"]["judge"]["model"] == "err-0.1"
    # The same answers under either prompt: no difference.
    assert report["compare"]["difference"]["groundedness"]["agreement"]["value"] == 0


async def test_the_model_the_replies_name_is_reported(tmp_path: Path) -> None:
    async def dated(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        response = await scripted(server, request, rec)
        assert isinstance(response, web.Response) and isinstance(response.body, bytes)
        body = json.loads(response.body)
        return web.json_response({**body, "model": "err-0.1-2026-11-01"})

    rows = write_labels(tmp_path / "all.jsonl").read_text().splitlines()[:20]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(rows) + "\n")
    async with JudgeServer(default=dated) as server:
        code, stdout, stderr = await calibrate(str(labels), "--judge-base-url", server.base_url,
                                               "--judge-model", "err-0.1")
    assert code == 0, stderr
    assert "judge: err-0.1 (replies from err-0.1-2026-11-01) at" in stdout
