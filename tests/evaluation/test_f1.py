"""f1_score on hand-checked cases."""

from __future__ import annotations

import pytest

from monitor.evaluation.metrics.f1_score import F1Evaluator, f1_score, normalize_answer
from tests.evaluation.fakes import rag_turn


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Cat, the HAT!", "cat hat"),
        ("An apple a day", "apple day"),
        ("don't stop-believing", "dont stopbelieving"),  # punctuation is deleted, not spaced
        ("  many\t spaces\n", "many spaces"),
        ("Café «déjà vu» ¿qué?", "café «déjà vu» ¿qué"),  # only ASCII punctuation is stripped
        ("theater another", "theater another"),  # articles only as whole words
        ("", ""),
    ],
)
def test_normalize_answer(text: str, normalised: str) -> None:
    assert normalize_answer(text) == normalised


@pytest.mark.parametrize(
    ("prediction", "truth", "expected"),
    [
        ("The Alpine Explorer Tent", "alpine explorer tent.", 1.0),
        ("the cat sat", "the dog sat", 0.5),  # cat sat / dog sat: 1 shared, p=r=1/2
        ("w x y z", "y z q", 2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3)),
        ("a b c d", "c d e", 2 / 3),  # "a" is an article: b c d vs c d e
        ("red red blue", "red blue blue", 2 / 3),  # multiset overlap: red, blue
        ("nothing shared", "completely different", 0.0),
        ("", "something", 0.0),
        ("the", "a", 0.0),  # both normalise to nothing: nothing is shared
        ("Zürich café", "zürich CAFÉ", 1.0),
    ],
)
def test_f1(prediction: str, truth: str, expected: float) -> None:
    assert f1_score(prediction, truth) == pytest.approx(expected)


async def test_f1_evaluator() -> None:
    (score,) = await F1Evaluator().evaluate(rag_turn(answer="The Alpine Explorer Tent", ground_truth="Alpine Explorer Tent"))
    assert score.value == 1.0 and score.defect is False
    (score,) = await F1Evaluator().evaluate(rag_turn(ground_truth=None))
    assert score.status == "skipped" and score.reason == "no ground truth"
    long = "word " * 2000
    (score,) = await F1Evaluator().evaluate(rag_turn(answer=long, ground_truth=long))  # executor path
    assert score.value == 1.0


async def test_f1_reads_a_bounded_view_of_each_side() -> None:
    # A megabyte on each side costs what 32 Ki characters cost: the ends are compared, the
    # middle (which here alone differs) is not read.
    head, tail = "alpha beta gamma " * 1000, " delta epsilon" * 1200
    answer = head + "middle " * 150_000 + tail
    truth = head + "other " * 150_000 + tail
    (score,) = await F1Evaluator().evaluate(rag_turn(answer=answer, ground_truth=truth))
    assert score.value == 1.0
    (short,) = await F1Evaluator().evaluate(rag_turn(answer="alpha beta", ground_truth="alpha gamma"))
    assert short.value == 0.5  # short texts are read whole
