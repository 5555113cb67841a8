"""Score a text with the exported offensive-language model: a dictionary lookup and a dot product.

The model is alt-profanity-check 1.9.1's: a TF-IDF bag of words (scikit-learn's default
tokeniser: lower-cased runs of two or more word characters; English stop words are not in the
vocabulary, so looking tokens up drops them) and a ``CalibratedClassifierCV`` of five linear SVMs,
each with a sigmoid calibration; the probability is the mean of the five calibrated ones.
``weights.npz`` holds exactly those numbers (written by ``tools/export_offensive_model.py``, which
checks the export against scikit-learn before it writes). Scoring here repeats the arithmetic in
plain Python: per text, count the vocabulary tokens, weight them by idf, L2-normalise, one dot
product per fold. No per-call numpy set operations (the ``np.unique`` inside scikit-learn's
vectoriser was most of the old cost), no scikit-learn at run time, nothing downloaded. The file
is read once per process, on first use, never at import.

:meth:`OffensiveModel.probabilities` scores the sentences of one answer together, with a few
numpy calls for all of them rather than a Python step per term and fold: the same numbers to
within rounding (about 1e-15), at about a third of the cost for a 4 KiB answer.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

__all__ = ["WEIGHTS_FILE", "FORMAT_VERSION", "TOKEN", "ModelError", "OffensiveModel", "read_model", "load_model",
           "model_loaded"]

WEIGHTS_FILE = "weights.npz"
# Up to this many tokens in all, plain Python per text is cheaper than the numpy pass (about
# 40 µs of fixed cost): a short answer of a few sentences.
SMALL_BATCH_TOKENS = 200
_CODE_BASE = 0x10000  # row codes start past the surrogates, which UTF-32 cannot encode
_NOTHING = itertools.repeat("")  # the default of codes.get for every token (endless, shared)
FORMAT_VERSION = 1
# scikit-learn's default token_pattern, which the shipped vectoriser was fitted with (the export
# script refuses a vectoriser with any other).
TOKEN = re.compile(r"(?u)\b\w\w+\b")


class ModelError(RuntimeError):
    """The weights file is missing, from another format version, or inconsistent."""


def _calibrated(margin: float, a: float, b: float) -> float:
    # scikit-learn's _SigmoidCalibration: expit(-(a * margin + b)), written so exp never overflows.
    z = a * margin + b
    if z >= 0:
        e = math.exp(-z)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(z))


@dataclass(frozen=True, eq=False)
class OffensiveModel:
    """The exported classifier; :meth:`probability` is ``profanity_check.predict_prob`` for one text."""

    terms: Mapping[str, tuple[float, ...]]
    """Vocabulary term -> (idf, coefficient of each fold)."""
    intercepts: tuple[float, ...]
    calibration: tuple[tuple[float, float], ...]
    """Per fold, the sigmoid ``(a, b)``: probability = 1 / (1 + exp(a * margin + b))."""
    source: str
    codes: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Vocabulary term -> its row in ``idf`` and ``weighted`` as one code point (chr(0x10000 + row))."""
    idf: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    weighted: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    """idf x coefficient, one row per term, one column per fold."""
    intercept_row: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    sigmoid: np.ndarray = field(default_factory=lambda: np.zeros((2, 0)), repr=False)
    """The calibrations' ``a`` (row 0) and ``b`` (row 1), one column per fold."""

    def probability(self, text: str) -> float:
        """Probability that ``text`` is offensive (the mean of the folds' calibrated probabilities)."""
        return self._probability_of(TOKEN.findall(text.lower()))

    def _probability_of(self, tokens: Sequence[str]) -> float:
        terms = self.terms
        counts: dict[str, int] = {}
        for token in tokens:
            if token in terms:
                counts[token] = counts.get(token, 0) + 1
        folds = len(self.intercepts)
        dots = [0.0] * folds
        norm2 = 0.0
        for token, n in counts.items():
            row = terms[token]
            x = n * row[0]
            norm2 += x * x
            for k in range(folds):
                dots[k] += x * row[k + 1]
        scale = 1.0 / math.sqrt(norm2) if norm2 else 0.0
        total = 0.0
        for k, (a, b) in enumerate(self.calibration):
            total += _calibrated(dots[k] * scale + self.intercepts[k], a, b)
        return total / folds

    def probabilities(self, token_lists: Sequence[Sequence[str]]) -> list[float]:
        """:meth:`probability` of several texts, given as their tokens (``TOKEN.findall(text.lower())``)."""
        n = len(token_lists)
        if sum(map(len, token_lists)) <= SMALL_BATCH_TOKENS:  # numpy's fixed cost would dominate
            return list(map(self._probability_of, token_lists))
        # Each text's vocabulary tokens as a string of code points (one per token; unknown
        # tokens and English stop words give none and weigh nothing): one join per text in C,
        # read by numpy as row numbers.
        known = ["".join(map(self.codes.get, tokens, _NOTHING)) for tokens in token_lists]
        lengths = np.array(list(map(len, known)), dtype=np.intp)
        rows = np.frombuffer("".join(known).encode("utf-32-le"), dtype=np.uint32).astype(np.intp) - _CODE_BASE
        # The dot products are linear in the occurrences (one sum per text over its contiguous
        # rows); the norm needs each term's count per text.
        dots = np.zeros((n, len(self.intercepts)))
        has = lengths > 0
        if rows.size:
            starts = np.cumsum(lengths) - lengths
            dots[has] = np.add.reduceat(self.weighted[rows], starts[has], axis=0)
        vocabulary = len(self.idf)
        keys, counts = np.unique(np.repeat(np.arange(n), lengths) * vocabulary + rows, return_counts=True)
        x = counts * self.idf[keys % vocabulary]
        norms = np.sqrt(np.bincount(keys // vocabulary, weights=x * x, minlength=n))
        scale = np.divide(1.0, norms, out=np.zeros(n), where=norms > 0)
        a, b = self.sigmoid
        z = a * (dots * scale[:, None] + self.intercept_row) + b
        e = np.exp(-np.abs(z))  # expit(-z) without overflow, as _calibrated does
        calibrated = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
        return calibrated.mean(axis=1).tolist()


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ModelError(message)


def read_model(path: Path) -> OffensiveModel:
    """The model stored at ``path`` (arrays only: loaded without pickle)."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read the offensive-language weights {path}: {exc}") from exc
    with data:
        _check(int(data["format_version"]) == FORMAT_VERSION,
               f"{path}: format version {int(data['format_version'])}, expected {FORMAT_VERSION}")
        vocabulary = bytes(np.asarray(data["vocabulary"], dtype=np.uint8)).decode("utf-8").split("\n")
        idf = np.asarray(data["idf"], dtype=np.float64)
        coef = np.asarray(data["coef"], dtype=np.float64)
        intercepts = tuple(float(v) for v in data["intercepts"])
        calibration = tuple((float(a), float(b)) for a, b in np.asarray(data["calibration"], dtype=np.float64))
        source = str(data["source"])
    folds = len(intercepts)
    _check(idf.shape == (len(vocabulary),), f"{path}: {idf.shape[0]} idf values for {len(vocabulary)} terms")
    _check(coef.shape == (folds, len(vocabulary)), f"{path}: coefficients of shape {coef.shape}")
    _check(len(calibration) == folds and folds > 0, f"{path}: {len(calibration)} calibrations for {folds} folds")
    rows = np.column_stack([idf, coef.T]).tolist()
    terms = {term: tuple(row) for term, row in zip(vocabulary, rows)}
    _check(len(terms) == len(vocabulary), f"{path}: duplicate vocabulary terms")
    # probabilities() is also given 1-character tokens (word_runs) and relies on them weighing nothing.
    _check(min(map(len, vocabulary), default=2) >= 2, f"{path}: a vocabulary term shorter than two characters")
    codes = {term: chr(_CODE_BASE + i) for i, term in enumerate(vocabulary)}
    return OffensiveModel(terms, intercepts, calibration, source, codes, idf, idf[:, None] * coef.T,
                          np.asarray(intercepts), np.asarray(calibration, dtype=np.float64).T.copy())


@functools.cache
def load_model() -> OffensiveModel:
    """The model shipped in this package (read on the first call, then shared)."""
    with resources.as_file(resources.files(__package__) / WEIGHTS_FILE) as path:
        return read_model(path)


def model_loaded() -> bool:
    """Whether :func:`load_model` has already read the file in this process."""
    return load_model.cache_info().currsize > 0
