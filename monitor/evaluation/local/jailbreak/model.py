"""The shipped linear model: load its weights, score a text, explain the score.

``weights.npz`` (package data, written by ``tools/jailbreak_detector/train.py``) holds one weight
per hashed n-gram bucket, one per structural feature (with the mean and scale the training data
had), a bias, and the Platt calibration that turns the margin into a probability. Scoring is a
gather-and-sum in numpy: no ML framework at run time, nothing downloaded, and the file is read
once per process (on first use, not at import).
"""

from __future__ import annotations

import functools
import heapq
import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from monitor.evaluation.local.jailbreak.fastpath import SparseTable, fast_eligible
from monitor.evaluation.local.jailbreak.features import (
    CHAR_NGRAMS,
    HASH_BITS,
    STRUCTURAL,
    Features,
    Prepared,
    char_buckets,
    ngram_buckets,
    prepare,
    word_buckets,
)

__all__ = ["WEIGHTS_FILE", "Weights", "Verdict", "decoded_views", "explain", "load_weights", "score_features",
           "score_text"]

WEIGHTS_FILE = "weights.npz"
# 2: the character n-gram sizes are stored (``char_ngrams``) and checked, since weights learned
# for other sizes would load without error and score nonsense.
FORMAT_VERSION = 2


class WeightsError(RuntimeError):
    """The weights file is missing, from another format version, or built for other features."""


@dataclass(frozen=True, eq=False)
class Weights:
    """A trained model (arrays are read-only)."""

    buckets: np.ndarray
    structural: np.ndarray
    structural_mean: np.ndarray
    structural_scale: np.ndarray
    bias: float
    calibration: tuple[float, float]
    """Platt scaling ``(a, b)``: probability = sigmoid(a * margin + b)."""
    threshold: float
    """The probability the training script chose as the default flag threshold."""
    trained_on: str
    """A one-line description of the training run (sources, counts, date)."""
    table: SparseTable
    """The bucket weights again, laid out for the plain-Python path of short texts."""
    dense: tuple[tuple[float, float, float], ...]
    """Per structural feature ``(mean, scale, weight)`` as Python floats (same path)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Calibrated probability that the text is a jailbreak or prompt-injection attempt."""

    probability: float
    signals: tuple[str, ...]
    """Structural signals present (disguises undone, payloads decoded, role headers...)."""


def _array(data: "np.lib.npyio.NpzFile", name: str, shape: tuple[int, ...]) -> np.ndarray:
    value = np.asarray(data[name], dtype=np.float64 if name != "buckets" else np.float32)
    if value.shape != shape:
        raise WeightsError(f"{name}: shape {value.shape}, expected {shape}")
    value.setflags(write=False)
    return value


def read_weights(path: Path) -> Weights:
    """Weights from ``path`` (an ``.npz`` written by the training script; no pickles)."""
    with np.load(path, allow_pickle=False) as data:
        version = int(data["format_version"])
        if version != FORMAT_VERSION:
            raise WeightsError(f"{path.name}: format version {version}, this code reads {FORMAT_VERSION}")
        n = len(STRUCTURAL)
        sizes = tuple(int(v) for v in data["char_ngrams"])
        if sizes != CHAR_NGRAMS:
            raise WeightsError(f"{path.name}: trained on character n-grams {sizes}, code has {CHAR_NGRAMS}")
        names = tuple(str(s) for s in data["structural_names"])
        if names != STRUCTURAL:
            raise WeightsError(f"{path.name}: trained on structural features {names}, code has {STRUCTURAL}")
        calibration = data["calibration"]
        buckets = _array(data, "buckets", (1 << HASH_BITS,))
        structural = _array(data, "structural", (n,))
        mean, scale = _array(data, "structural_mean", (n,)), _array(data, "structural_scale", (n,))
        return Weights(
            buckets=buckets,
            structural=structural,
            structural_mean=mean,
            structural_scale=scale,
            bias=float(data["bias"]),
            calibration=(float(calibration[0]), float(calibration[1])),
            threshold=float(data["threshold"]),
            trained_on=str(data["trained_on"]),
            table=SparseTable(buckets),
            dense=tuple(zip(mean.tolist(), scale.tolist(), structural.tolist())),
        )


@functools.cache
def load_weights() -> Weights:
    """The weights shipped in this package (read once per process)."""
    with resources.as_file(resources.files(__package__).joinpath(WEIGHTS_FILE)) as path:
        if not path.is_file():
            raise WeightsError(f"{WEIGHTS_FILE} is missing from {__package__}: reinstall the package")
        return read_weights(path)


def margin(weights: Weights, features: Features) -> float:
    """The model's raw score (log-odds before calibration), with numpy."""
    n = len(features.buckets)
    # Summed in float64: the float16-valued weights then add up exactly, in any order, so the
    # plain-Python path of :func:`score_text` gives the very same sum.
    sparse = float(weights.buckets[features.buckets].sum(dtype=np.float64)) / math.sqrt(n) if n else 0.0
    dense = (features.structural - weights.structural_mean) / weights.structural_scale
    return weights.bias + sparse + float(dense @ weights.structural)


def _probability(weights: Weights, margin_value: float) -> float:
    a, b = weights.calibration
    z = a * margin_value + b
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def score_features(weights: Weights, features: Features) -> Verdict:
    """Calibrated probability for already extracted ``features``."""
    return Verdict(_probability(weights, margin(weights, features)), features.signals)


def score_text(text: str, weights: Weights | None = None) -> Verdict:
    """Calibrated probability that ``text`` is an attempt (bounded cost whatever its length).

    Equal (to rounding) to the highest ``score_features(weights, extract(v))`` over ``v`` = the
    text and each of its :func:`decoded_views`; short texts whose words the plain-Python path
    (:mod:`.fastpath`) mostly remembers take it, others the numpy one.
    """
    weights = weights or load_weights()
    prepared = prepare(text)
    value = _prepared_margin(weights, prepared)
    # An encoded payload is read as if it had been sent in the clear too: "aWdub3Jl..." asks what
    # its decoded text asks, however little of the wrapper's n-grams look like an attack. The
    # verdict is the stronger of the two readings (payloads are few and bounded: MAX_PAYLOADS of
    # MAX_BLOB_CHARS each; their own payloads are folded into their text, not read again).
    for payload in prepared.payloads:
        value = max(value, _prepared_margin(weights, prepare(payload)))
    return Verdict(_probability(weights, value), prepared.signals)


def decoded_views(text: str) -> tuple[str, ...]:
    """The payloads :func:`score_text` also reads as texts of their own (the training script scores
    them the same way, so validation and the threshold see what run time sees)."""
    return prepare(text).payloads


def _prepared_margin(weights: Weights, prepared: Prepared) -> float:
    summed = weights.table.total(prepared.body) if fast_eligible(prepared.body) else None
    if summed is None:
        buckets = ngram_buckets(prepared.body)
        summed = float(weights.buckets[buckets].sum(dtype=np.float64)), len(buckets)
    total, n = summed
    value = weights.bias + (total / math.sqrt(n) if n else 0.0)
    for raw, (mean, scale, weight) in zip(prepared.values, weights.dense):
        value += (math.log1p(raw) - mean) / scale * weight
    return value


_MARKER_PREFIX = "qx"  # the glossary's concept markers (features.prepare appends them to the body)
EXPLAIN_TOP = 5
_EDGES = ".,;:!?\"'()[]{}<>"
_WORD = re.compile(r"\S+")


def explain(text: str, weights: Weights | None = None, top: int = EXPLAIN_TOP) -> tuple[dict[str, object], ...]:
    """The ``top`` strongest signals behind the score of ``text``, strongest first: each word of the
    folded text (its word unigram and the character n-grams starting in it), each idea the glossary
    marked (``idea:override``) and each structural feature (``structure:role_headers``), with the
    logits it adds. Only what pushes towards "attempt" is listed; word bigrams are left out, so the
    weights do not add up to the margin. Vectorised and bounded like :func:`score_text`."""
    weights = weights or load_weights()
    prepared = prepare(text)
    padded = f" {prepared.body} "
    spans = [(m.start(), m.group()) for m in _WORD.finditer(padded)]
    signals: list[tuple[str, float]] = []
    if spans:
        starts = np.fromiter((start for start, _ in spans), dtype=np.int64, count=len(spans))
        owner_parts, weight_parts = [], []
        for grams in char_buckets(padded):
            positions = np.arange(len(grams))
            owner_parts.append(np.maximum(np.searchsorted(starts, positions, side="right") - 1, 0))
            weight_parts.append(weights.buckets[grams.astype(np.intp)].astype(np.float64))
        names = [word for _, word in spans]
        unigrams = word_buckets(names)[0].astype(np.intp)
        owner_parts.append(np.arange(len(spans)))
        weight_parts.append(weights.buckets[unigrams].astype(np.float64))
        owners, per_gram = np.concatenate(owner_parts), np.concatenate(weight_parts)
        scale = 1.0 / math.sqrt(len(per_gram) + max(0, len(spans) - 1))  # every occurrence the margin counts
        per_word = np.bincount(owners, weights=per_gram, minlength=len(spans)) * scale
        by_word: dict[str, float] = {}
        for word, value in zip(names, per_word.tolist()):
            key = f"idea:{word[len(_MARKER_PREFIX):]}" if word.startswith(_MARKER_PREFIX) else (word.strip(_EDGES) or word)
            by_word[key] = by_word.get(key, 0.0) + value
        signals += by_word.items()
    for name, raw, (mean, scale_, weight) in zip(STRUCTURAL, prepared.values, weights.dense):
        signals.append((f"structure:{name}", (math.log1p(raw) - mean) / scale_ * weight))
    strongest = heapq.nlargest(top, (s for s in signals if s[1] > 0), key=lambda s: s[1])
    return tuple({"signal": name, "logits": round(value, 3)} for name, value in strongest)
