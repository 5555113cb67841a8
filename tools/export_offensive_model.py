"""Export alt-profanity-check's scikit-learn model into ``weights.npz`` for the local tier.

    .venv/bin/python -m pip install -e '.[test]'        # brings alt-profanity-check (scikit-learn)
    .venv/bin/python -m tools.export_offensive_model    # writes monitor/evaluation/local/offensive/weights.npz

The shipped model is a ``TfidfVectorizer`` and a ``CalibratedClassifierCV`` of linear SVMs with
sigmoid calibration. This script reads out the numbers that define it (vocabulary, idf, each
fold's coefficients, intercept and calibration), refuses any setting the plain-Python scorer does
not reproduce (n-grams, a custom tokeniser, sublinear tf...), and checks the export against
``profanity_check.predict_prob`` on a corpus (fixed sentences plus random mixes of vocabulary
words) before writing: the largest difference must stay under ``--tolerance``.

The model is MIT-licensed (``LICENSE-alt-profanity-check`` beside the weights).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from monitor.evaluation.local.offensive.model import FORMAT_VERSION, OffensiveModel, read_model

__all__ = ["export", "sample_corpus", "max_difference", "main"]

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "monitor/evaluation/local/offensive/weights.npz"
_EXPECTED_VECTORIZER = {"analyzer": "word", "binary": False, "lowercase": True, "ngram_range": (1, 1),
                        "norm": "l2", "preprocessor": None, "smooth_idf": True, "strip_accents": None,
                        "sublinear_tf": False, "token_pattern": r"(?u)\b\w\w+\b", "tokenizer": None,
                        "use_idf": True}
FIXED_SENTENCES = (
    "", "   ", "The refund arrives within five business days.", "what the fuck is this", "You stupid idiot.",
    "Kill the process with stop -9", "SHIT SHIT shit", "I love my dog and my cat", "a", "ok ok ok ok",
    "This is bullshit, total crap.", "Les données sont chiffrées.", "数据已加密", "ass ass ass ass ass ass",
    "Go to hell, you bastard", "Please reset my password", "damn it", "fuck " * 200,
)


def _check_settings(vectorizer: Any, model: Any) -> None:
    params = vectorizer.get_params()
    wrong = {k: params.get(k) for k, v in _EXPECTED_VECTORIZER.items() if params.get(k) != v}
    if wrong:
        raise SystemExit(f"the vectorizer has settings the plain scorer does not reproduce: {wrong}")
    if getattr(model, "method", None) != "sigmoid" or list(model.classes_) != [0, 1]:
        raise SystemExit("expected a binary CalibratedClassifierCV with sigmoid calibration")
    for fold in model.calibrated_classifiers_:
        if fold.estimator.coef_.shape[0] != 1 or len(fold.calibrators) != 1:
            raise SystemExit("expected one linear decision function per fold")


def export(out: Path) -> None:
    """Write the shipped model's numbers to ``out``."""
    from profanity_check import profanity_check as shipped  # loads the joblib files
    import sklearn

    vectorizer, model = shipped.vectorizer, shipped.model
    _check_settings(vectorizer, model)
    vocabulary = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.__getitem__)
    if any("\n" in term for term in vocabulary):
        raise SystemExit("a vocabulary term holds a newline; the file format joins terms with newlines")
    folds = model.calibrated_classifiers_
    np.savez_compressed(
        out,
        format_version=np.array(FORMAT_VERSION),
        vocabulary=np.frombuffer("\n".join(vocabulary).encode("utf-8"), dtype=np.uint8),
        idf=np.asarray(vectorizer.idf_, dtype=np.float64),
        coef=np.vstack([f.estimator.coef_[0] for f in folds]).astype(np.float64),
        intercepts=np.array([f.estimator.intercept_[0] for f in folds], dtype=np.float64),
        calibration=np.array([[f.calibrators[0].a_, f.calibrators[0].b_] for f in folds], dtype=np.float64),
        source=np.array(f"alt-profanity-check 1.9.1 (scikit-learn {sklearn.__version__}), "
                        f"{len(vocabulary)} terms, {len(folds)} folds"),
    )


def sample_corpus(vocabulary: Sequence[str], count: int = 2000, seed: int = 13) -> list[str]:
    """Fixed sentences plus ``count`` random mixes of vocabulary and ordinary words, in mixed case."""
    rng = random.Random(seed)
    filler = ["the", "and", "you", "is", "refund", "xyzzy", "Über", "naïve", "...", "!!", "42"]
    texts = list(FIXED_SENTENCES)
    for _ in range(count):
        words = [rng.choice(vocabulary) if rng.random() < 0.6 else rng.choice(filler)
                 for _ in range(rng.randint(1, 40))]
        words = [w.upper() if rng.random() < 0.1 else w for w in words]
        texts.append(" ".join(words) + rng.choice(["", ".", "?", "!"]))
    return texts


def max_difference(model: OffensiveModel, texts: Sequence[str]) -> float:
    """The largest |exported - scikit-learn| probability over ``texts``."""
    from profanity_check import predict_prob

    reference = predict_prob(list(texts))
    return max(abs(model.probability(t) - float(p)) for t, p in zip(texts, reference))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        candidate = Path(tmp) / "weights.npz"
        export(candidate)
        model = read_model(candidate)
        texts = sample_corpus(sorted(model.terms))
        worst = max_difference(model, texts)
        print(f"{model.source}: largest difference from scikit-learn over {len(texts)} texts: {worst:.2e}")
        if worst > args.tolerance:
            print(f"above the tolerance {args.tolerance}: not written", file=sys.stderr)
            return 1
        args.out.write_bytes(candidate.read_bytes())
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
