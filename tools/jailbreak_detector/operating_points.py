"""Operating points of the shipped detector, chosen from benign data only, validated by held-out kind.

    python -m tools.jailbreak_detector.operating_points --fetch   # download the held-out wheels once
    python -m tools.jailbreak_detector.operating_points --report tools/jailbreak_detector/operating_points.json
    python -m tools.jailbreak_detector.operating_points --markdown tools/jailbreak_detector/operating_points.json

Scores, with the shipped weights (no retraining): the benign calibration set
(``calibration.py``), the held-out sources of ``sources.py`` (attacks, their benign texts and
hard negatives; never trained on). Hard negatives are the benign texts of both that use attack
vocabulary (``evaluate.is_hard_negative``).

A point is chosen from **benign texts only** (``choose`` and ``select`` refuse an attack): the
held-out attacks are scored afterwards, and their recall is reported beside each point, never
used to pick it. The rule of a point (``POINTS``: bounds on the calibration set's false-positive
rate and on the hard negatives') is:

1. ``choose(benign, bounds, kind_cap)``: the lowest grid threshold at which the calibration set,
   the hard negatives and every calibration kind stay under their bounds (``kind_cap`` for each
   kind);
2. validated by held-out kind (``held_out_kind``): for each calibration kind, the threshold is
   chosen again without that kind's turns and that kind's false-positive rate (all its turns, and
   its hard negatives) is measured at it; pooled over the ten kinds, it says how a kind of benign
   traffic the choice never saw fares;
3. ``select``: the most permissive ``kind_cap`` of ``KIND_CAPS`` whose held-out-kind validation
   keeps the pooled rates under the point's bounds, so the bounds hold for kinds the choice did
   not see, not only for those it did; the point is then ``choose`` on all benign texts with it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from monitor.evaluation.local.jailbreak.model import Weights, load_weights, read_weights, score_text
from tools.jailbreak_detector.calibration import generate
from tools.jailbreak_detector.evaluate import is_hard_negative
from tools.jailbreak_detector.example import Example
from tools.jailbreak_detector.sources import HELD_OUT, SOURCES
from tools.jailbreak_detector.wheels import FORBIDDEN, PACKAGES, Wheels

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "jailbreak-detector-wheels"
HELD_OUT_WHEELS = ("prompt-security-fuzzer", "bastioncorpus", "hermes-jailbench", "jailbreak-corpus-mini-py", "langkit", "spikee", "inspect-evals")
GRID = tuple(round(0.80 + i * 0.005, 3) for i in range(40))  # 0.800 ... 0.995
# name -> (max FPR on the calibration set, max FPR on hard negatives); each must hold under the
# held-out-kind validation as well as on the whole set.
POINTS = {
    "high_recall": (0.03, 0.10),
    "balanced": (0.01, 0.03),
    "high_precision": (0.0025, 0.01),
}
# The per-kind caps ``select`` tries, most permissive first.
KIND_CAPS = (1.0, 0.20, 0.15, 0.10, 0.08, 0.06, 0.05, 0.045, 0.04, 0.035, 0.03, 0.025, 0.02, 0.015, 0.01, 0.005, 0.0)


@dataclass(frozen=True, slots=True)
class Scored:
    score: float
    label: int
    group: str
    """Calibration kind, or ``heldout:<source>``."""
    hard: bool
    language: str = ""
    """Calibration turns only."""


def fetch() -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    for dist in HELD_OUT_WHEELS:
        assert not dist.startswith(FORBIDDEN)
        if list(CACHE.glob(f"{dist.replace('-', '_')}-{PACKAGES[dist]}-*.whl")):
            continue
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "--dest", str(CACHE), f"{dist}=={PACKAGES[dist]}"], check=True)


def score_all(weights: Weights | None = None) -> list[Scored]:
    weights = weights or load_weights()
    out = []
    for turn in generate():
        example = Example(turn.text, 0, "rag-monitor/calibration")
        out.append(Scored(score_text(turn.text, weights).probability, 0, turn.kind, is_hard_negative(example),
                          turn.language))
    wheels = Wheels(CACHE)
    seen: set[str] = set()
    for name in sorted(HELD_OUT):
        for example in SOURCES[name](wheels):
            key = " ".join(example.text.lower().split())
            if not example.text.strip() or key in seen:
                continue
            seen.add(key)
            out.append(Scored(score_text(example.text, weights).probability, example.label, f"heldout:{name}",
                              is_hard_negative(example)))
    return out


def _rate(rows: Sequence[Scored], threshold: float) -> float:
    return sum(r.score >= threshold for r in rows) / len(rows) if rows else 0.0


def rates(rows: Sequence[Scored], threshold: float) -> dict[str, float]:
    attacks = [r for r in rows if r.label]
    benign = [r for r in rows if not r.label]
    return {"threshold": threshold, "recall": _rate(attacks, threshold), "fpr_benign": _rate(benign, threshold),
            "fpr_hard": _rate([r for r in benign if r.hard], threshold),
            "fpr_calibration": _rate([r for r in benign if not r.group.startswith("heldout:")], threshold)}


def _by_kind(rows: Sequence[Scored], threshold: float) -> dict[str, float]:
    groups: dict[str, list[Scored]] = defaultdict(list)
    for r in rows:
        if not r.label:
            groups[r.group].append(r)
    return {g: _rate(members, threshold) for g, members in sorted(groups.items())}


def _benign_only(rows: Sequence[Scored]) -> Sequence[Scored]:
    if any(r.label for r in rows):
        raise ValueError("operating points are chosen from benign texts only; attacks are for reporting recall")
    return rows


def choose(benign: Sequence[Scored], bounds: tuple[float, float], kind_cap: float) -> float:
    """The lowest grid threshold at which the calibration set, the hard negatives and every
    calibration kind (``kind_cap``) stay within ``bounds``; benign texts only."""
    benign = _benign_only(benign)
    benign_bound, hard_bound = bounds
    for threshold in GRID:
        r = rates(benign, threshold)
        kinds = [v for g, v in _by_kind(benign, threshold).items() if not g.startswith("heldout:")]
        if r["fpr_calibration"] <= benign_bound and r["fpr_hard"] <= hard_bound and max(kinds, default=0) <= kind_cap:
            return threshold
    return GRID[-1]


def held_out_kind(benign: Sequence[Scored], bounds: tuple[float, float], kind_cap: float) -> dict[str, dict[str, float]]:
    """Per calibration kind: the threshold chosen without it, its false-positive rate there and on
    its hard negatives; ``pooled`` over the kinds (turns and hard negatives)."""
    benign = _benign_only(benign)
    kinds = sorted({r.group for r in benign if not r.group.startswith("heldout:")})
    out: dict[str, dict[str, float]] = {}
    for kind in kinds:
        threshold = choose([r for r in benign if r.group != kind], bounds, kind_cap)
        own = [r for r in benign if r.group == kind]
        hard = [r for r in own if r.hard]
        out[kind] = {"threshold": threshold, "fpr": _rate(own, threshold), "turns": len(own),
                     "fpr_hard": _rate(hard, threshold), "hard_negatives": len(hard)}
    per_kind = list(out.values())
    turns, hard_total = sum(v["turns"] for v in per_kind), sum(v["hard_negatives"] for v in per_kind)
    out["pooled"] = {"fpr": sum(v["fpr"] * v["turns"] for v in per_kind) / turns if turns else 0.0,
                     "fpr_hard": sum(v["fpr_hard"] * v["hard_negatives"] for v in per_kind) / hard_total if hard_total else 0.0,
                     "turns": turns, "hard_negatives": hard_total}
    return out


def select(benign: Sequence[Scored], bounds: tuple[float, float]) -> tuple[float, float, dict[str, dict[str, float]]]:
    """(threshold, kind cap, held-out-kind validation) of a point: the most permissive kind cap
    whose validation keeps the pooled rates within ``bounds``; benign texts only."""
    benign = _benign_only(benign)
    validation: dict[str, dict[str, float]] = {}
    for cap in KIND_CAPS:
        validation = held_out_kind(benign, bounds, cap)
        if validation["pooled"]["fpr"] <= bounds[0] and validation["pooled"]["fpr_hard"] <= bounds[1]:
            return choose(benign, bounds, cap), cap, validation
    return GRID[-1], KIND_CAPS[-1], validation


def report(rows: Sequence[Scored]) -> dict[str, object]:
    benign = [r for r in rows if not r.label]  # the choice never sees an attack
    selected = {name: select(benign, bounds) for name, bounds in POINTS.items()}
    points = {name: threshold for name, (threshold, _, _) in selected.items()}
    table = [{**rates(rows, t), "by_kind": _by_kind(rows, t)} for t in sorted({*GRID, *points.values(), *TABLE_ROWS, 0.861})]
    counts = {"attacks": sum(r.label for r in rows), "benign": sum(not r.label for r in rows),
              "hard_negatives": sum(r.hard and not r.label for r in rows),
              "calibration": sum(not r.group.startswith("heldout:") for r in rows)}
    languages: dict[str, list[Scored]] = defaultdict(list)
    for r in rows:
        if r.language:
            languages[r.language].append(r)
    by_language = {lang: {"turns": len(v), **{name: _rate(v, t) for name, t in points.items()}}
                   for lang, v in sorted(languages.items())}
    return {"points": points, "by_language": by_language, "bounds": POINTS, "counts": counts, "table": table,
            "kind_caps": {name: cap for name, (_, cap, _) in selected.items()},
            "held_out_kind": {name: validation for name, (_, _, validation) in selected.items()}}


TABLE_ROWS = (0.80, 0.83, 0.86, 0.88, 0.90, 0.92, 0.94, 0.95, 0.955, 0.96, 0.97, 0.975, 0.98, 0.99)


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def markdown(result: dict) -> str:
    """The operating-point tables of ``docs/local-jailbreak.md``, from a report."""
    names = {t: n for n, t in result["points"].items()}
    rows = [r for r in result["table"] if r["threshold"] in TABLE_ROWS or r["threshold"] in names]
    kinds = [k for k in rows[0]["by_kind"] if not k.startswith("heldout:")]
    lines = ["| threshold | point | recall, held-out attacks | FPR, calibration set | FPR, hard negatives | "
             "FPR, all benign |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['threshold']:.3f} | {names.get(r['threshold'], '')} | {r['recall']:.3f} | "
                     f"{_pct(r['fpr_calibration'])} | {_pct(r['fpr_hard'])} | {_pct(r['fpr_benign'])} |")
    lines += ["", "| benign kind | " + " | ".join(f"{r['threshold']:.3f}" for r in rows) + " |",
              "| --- |" + " --- |" * len(rows)]
    for kind in kinds + [k for k in rows[0]["by_kind"] if k.startswith("heldout:")]:
        lines.append(f"| {kind} | " + " | ".join(_pct(r["by_kind"][kind]) for r in rows) + " |")
    lines += ["", "| held-out kind | " + " | ".join(f"{n} (kind cap {_pct(result['kind_caps'][n])}): threshold chosen "
                                                  "without it, its FPR, its hard negatives' FPR" for n in result["points"])
              + " |", "| --- |" + " --- |" * len(result["points"])]
    for kind in kinds + ["pooled"]:
        cells = []
        for name in result["points"]:
            v = result["held_out_kind"][name][kind]
            rates_ = f"{_pct(v['fpr'])}, {_pct(v['fpr_hard'])} of {v['hard_negatives']:.0f}"
            cells.append(f"**{rates_}**" if kind == "pooled" else f"{v['threshold']:.3f}, {rates_}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fetch", action="store_true", help="download the held-out wheels first")
    parser.add_argument("--report", type=Path, help="write the figures as JSON here")
    parser.add_argument("--markdown", type=Path, help="print the tables of an existing report and stop")
    parser.add_argument("--weights", type=Path, help="score with these weights instead of the shipped ones")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown(json.loads(args.markdown.read_text())))
        return 0
    if args.fetch:
        fetch()
    result = report(score_all(read_weights(args.weights) if args.weights else None))
    print(json.dumps({"points": result["points"], "kind_caps": result["kind_caps"], "counts": result["counts"]}, indent=1))
    for name, validation in result["held_out_kind"].items():
        pooled = validation["pooled"]
        print(f"{name}: held out by kind, benign {pooled['fpr']:.4f} hard {pooled['fpr_hard']:.4f}")
    for row in result["table"]:
        t = row["threshold"]
        if t in result["points"].values() or t in (0.861, 0.9, 0.95, 0.97, 0.98, 0.99):
            print(f"{t:.3f} recall {row['recall']:.3f} benign {row['fpr_benign']:.4f} hard {row['fpr_hard']:.4f} "
                  f"calib {row['fpr_calibration']:.4f}")
    if args.report:
        args.report.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
