"""Local text handling: the fast paths give exactly what the plain implementations give.

``words`` has an ASCII fast path (translate + split), ``terms_of`` a memo read in C, and
``lexical_support`` / ``negation_flips`` were restructured for speed; each is compared here with
the straightforward implementation it replaced, on varied generated inputs.
"""

from __future__ import annotations

import random
import re
import sys
import unicodedata
from typing import Any

import pytest

from monitor.evaluation.local import text
from monitor.evaluation.local.lexical_groundedness import lexical_support
from monitor.evaluation.local.text import (
    NEGATIONS,
    STOPWORDS,
    bounded_view,
    stem,
    terms_of,
    token_terms,
    view_words,
    word_runs,
    words,
)

PIECES = [
    "The", "batteries", "were", "charged", "not", "never", "without", "no", "tent", "is", "waterproof", "3000",
    "mm", "2", "kg", "_id", "snake_case", "a", "I", "x", "don't", "can't", "e.g.", "U.S.A.", "self-hosted",
    "ｆｕｌｌｗｉｄｔｈ", "ѕhіt", "café", "naïve", "é", "帐篷防水", "这款", "防", "ภาษาไทย", "カタカナ", "Straße",
    "ﬁle", "½", "x²", "İstanbul", "rag_monitor_judge_request_duration_seconds_total_and_more",
    "\u200b", "—", "’", "“quoted”", "…", "\t", "\n", "  ", ".", ",", "!", "?", "(", ")", "#", "@", "$",
    "snake" * 9, "a1b2c3", "12345", "3.14", "nothing", "neither", "cannot", "\u00a0", "•", "\u2028", "\U0001f600",
    "\ud800", "it’s", "—so", "«non»", "k\u0301", "a\u0338", "Ⓐ", "ⓑ", "Σ",
]


TYPOGRAPHIC = [p for p in PIECES if all(c.isascii() or not c.isalnum() for c in p)]  # ASCII words, ’ “ — …


def generated(seed: int, count: int = 300, ascii_only: bool = False, pool: list[str] = PIECES) -> list[str]:
    rng = random.Random(seed)
    pool = [p for p in pool if p.isascii()] if ascii_only else pool
    out = []
    for _ in range(count):
        n = rng.randint(0, 80)
        out.append("".join(rng.choice(pool) + rng.choice(["", " ", " ", " ", "\n", ". "]) for _ in range(n)))
    return out


def reference_words(value: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", value).lower())


def reference_token_terms(token: str) -> tuple[str, ...]:
    # _token_terms_uncached as it was before the term table (bigrams by slicing).
    if text._SPACELESS.search(token):  # noqa: SLF001
        return tuple(token[i:i + 2] for i in range(max(1, len(token) - 1)))
    if token not in STOPWORDS and (len(token) > 1 or token.isdigit()):
        return (stem(token),)
    return ()


def reference_terms(tokens: list[str]) -> list[str]:
    return [term for token in tokens for term in reference_token_terms(token)]


@pytest.mark.parametrize(("ascii_only", "pool"), [(True, PIECES), (False, PIECES), (False, TYPOGRAPHIC)])
def test_words_and_terms_match_the_plain_implementation(ascii_only: bool, pool: list[str]) -> None:
    for sample in generated(1 + ascii_only, ascii_only=ascii_only, pool=pool) + [bytes(range(128)).decode() * 3]:
        assert word_runs(sample) == re.findall(r"\w+", sample), sample
        assert words(sample) == reference_words(sample), sample
        assert list(view_words(sample)) == reference_words(sample), sample
        tokens = words(sample)
        assert terms_of(tokens) == reference_terms(tokens), sample
        assert terms_of(tokens) == reference_terms(tokens), sample  # again, from the warm memo
        for token in tokens:
            assert token_terms(token) == reference_token_terms(token)


def table_terms(tokens: list[str]) -> list[str]:
    table = text.term_table()
    return table.decode(table.encode(tokens))


def test_the_term_table_numbers_terms_as_terms_of_finds_them() -> None:
    for sample in generated(3, ascii_only=True) + generated(4, pool=TYPOGRAPHIC):
        tokens = words(sample)
        assert table_terms(tokens) == reference_terms(tokens), sample


def test_word_runs_of_many_texts_at_once_match_one_by_one() -> None:
    for pool in (PIECES, TYPOGRAPHIC):
        samples = [s.replace("\n", " ") for s in generated(5, 40, pool=pool)]
        for group in (samples, samples[:1], [], [s for s in samples if s.isascii()], ["a\nb", "c"]):
            assert text.word_runs_each(group) == [word_runs(s) for s in group]


def test_the_term_table_is_bounded_and_replaced_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text.TermTable, "MAX_TOKENS", 50)
    monkeypatch.setattr(text, "_table", text.TermTable())
    tokens = [f"word{i}" for i in range(200)]
    for start in range(0, 200, 20):  # a table in use is never swapped mid-call, only between calls
        assert table_terms(tokens[start:start + 20]) == reference_terms(tokens[start:start + 20])
    assert len(text.term_table().tokens) <= 70
    long_token = "x" * 100_000
    monkeypatch.setattr(text, "_table", text.TermTable())
    monkeypatch.setattr(text.TermTable, "MAX_CHARS", 150_000)
    assert table_terms([long_token, "tent", long_token]) == [long_token, "tent", long_token]
    full = text._table  # noqa: SLF001
    assert full.full and text.term_table() is not full  # 200,000 characters held: the next call gets a new one


def test_spaceless_scripts_are_detected_from_their_characters() -> None:
    assert not text.has_spaceless("plain ascii") and not text.has_spaceless("it’s “quoted” — naïve")
    assert text.has_spaceless("这款帐篷") and text.has_spaceless("tent カタカナ") and text.has_spaceless("ภาษาไทย")


# The implementation ``lexical_support`` had before it was restructured, kept as the reference.
def _old_term(token: str) -> str | None:
    return None if token in STOPWORDS or token in NEGATIONS or len(token) < 2 else stem(token)


def _old_negation_flips(answer_tokens: list[str], context_tokens: list[str]) -> int:
    if NEGATIONS.isdisjoint(answer_tokens):
        return 0
    negated_in_context, present = set(), set()
    last_negation = -4
    for i, token in enumerate(context_tokens):
        if token in NEGATIONS:
            last_negation = i
            continue
        term = _old_term(token) if len(token) <= 40 else None
        if term:
            present.add(term)
            if i - last_negation <= 3:
                negated_in_context.add(term)
    flips = 0
    for i, token in enumerate(answer_tokens):
        if token in NEGATIONS:
            following = (_old_term(w) for w in answer_tokens[i + 1:i + 4] if len(w) <= 40)
            flips += any(t in present and t not in negated_in_context for t in following if t)
    return flips


def old_lexical_support(answer: str, context: str) -> dict[str, Any] | None:
    answer_tokens = reference_words(bounded_view(answer, 16_384, 4_096))
    context_tokens = reference_words(bounded_view(context, 49_152, 8_192))
    answer_terms, context_terms = reference_terms(answer_tokens), reference_terms(context_tokens)
    if not answer_terms:
        return None
    vocabulary = set(context_terms)
    supported = sum(t in vocabulary for t in answer_terms)
    unsupported = sorted({t for t in answer_terms if t not in vocabulary})
    bigrams = list(zip(answer_terms, answer_terms[1:]))
    context_bigrams = set(zip(context_terms, context_terms[1:]))
    bigram_support = sum(b in context_bigrams for b in bigrams) / len(bigrams) if bigrams else None
    return {"value": supported / len(answer_terms), "content_terms": len(answer_terms),
            "bigram_support": bigram_support, "unsupported_terms": unsupported[:10],
            "negation_flips": _old_negation_flips(answer_tokens, context_tokens)}


def test_lexical_support_matches_the_implementation_it_replaced() -> None:
    answers, contexts = generated(11, 200), generated(12, 200)
    rng = random.Random(13)
    for answer, context in zip(answers, contexts):
        # Half the answers borrow the context's words, so supported terms and flips occur.
        if rng.random() < 0.5:
            answer = " ".join(rng.sample(context.split(), k=min(20, len(context.split())))) + " not " + answer
        assert same_support(lexical_support(answer, context), old_lexical_support(answer, context)), (answer, context)
    long_answer, long_context = " ".join(answers) * 3, " ".join(contexts) * 3  # past the bounded views
    ascii_answer, ascii_context = (" ".join(a for a in answers if a.isascii()) * 3,
                                   " ".join(c for c in contexts if c.isascii()) * 3)
    assert same_support(lexical_support(ascii_answer, ascii_context), old_lexical_support(ascii_answer, ascii_context))
    reduced = lexical_support(long_answer, long_context)  # Chinese in it: the smaller views
    assert reduced is not None and reduced["spaceless_views"] is True
    assert {k: v for k, v in reduced.items() if k not in EVIDENCE_KEYS} == old_lexical_support(long_answer[:4_096] + "\n" + long_answer[-1_024:],
                                          long_context[:12_288] + "\n" + long_context[-2_048:]) | {"spaceless_views": True}


def same_support(new: dict[str, Any] | None, old: dict[str, Any] | None) -> bool:
    """Equal, the marker of the spaceless views aside (short texts are read whole either way)."""
    if new is None or old is None:
        return new is old
    return {key: value for key, value in new.items() if key not in ("spaceless_views", *EVIDENCE_KEYS)} == old


# Added for the reason (issue 30): not part of the replaced implementation's output.
EVIDENCE_KEYS = ("unsupported_count", "unsupported_words")


def test_concurrent_callers_get_the_results_of_a_lone_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # The executor runs metrics of several turns at once; a small table is swapped mid-stream.
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(text.TermTable, "MAX_TOKENS", 300)
    pairs = list(zip(generated(21, 60), generated(22, 60)))
    expected = [old_lexical_support(answer, context) for answer, context in pairs]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch every few bytecodes: misses race for the table
    try:
        with ThreadPoolExecutor(4) as pool:
            for _ in range(3):
                got = list(pool.map(lambda pair: lexical_support(*pair), pairs))
                assert all(same_support(g, e) for g, e in zip(got, expected))
    finally:
        sys.setswitchinterval(interval)
