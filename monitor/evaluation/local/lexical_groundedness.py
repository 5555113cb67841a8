"""``local_lexical_groundedness``: share of the answer's content terms that occur in the context.

A cheap proxy for the judge's ``groundedness``: no LLM, computed on every sampled turn. Terms are
stemmed content words ("batteries" meets "battery", "charged" meets "charging") and, for
scripts written without spaces (Chinese, Japanese, Thai...), character bigrams
(:func:`monitor.evaluation.local.text.terms`). ``details`` adds the support of term bigrams (a
stricter signal), a few unsupported terms, and ``negation_flips``.

What it cannot see, by construction: meaning. A faithful paraphrase scores lower and a
fabricated sentence made of context words scores higher. In particular an answer that flips a
negation ("the tent is not waterproof" against "the tent is waterproof") keeps its score,
because every word is in the context; ``negation_flips`` counts answer negations ("not", "no",
"never", "without"...) in front of a supported term that the context does not negate nearby,
as a hint to look, not as part of the value. Read the value as an early-warning trend, not a
verdict. Context = documents' text, else the system prompt. Defect < 0.5.

Bounded: the first 16 KiB and last 4 KiB of the answer, and the first 48 KiB and last 8 KiB of
the context are read. Text in a script written without spaces gives a term per character (about
four times English's terms per character read, each ~0.5 µs when new), so when either text has
one the views are a quarter of those (4 + 1 KiB of answer, 12 + 2 KiB of context), and
``details`` says ``"spaceless_views": true``.
"""

from __future__ import annotations

import functools
import heapq
from typing import Any, Sequence

import numpy as np

from monitor.evaluation.inputs import resolve_context
from monitor.evaluation.local.offload import run_cpu_bound, weighted_chars
from monitor.evaluation.local.text import (
    CACHED_TOKEN_CHARS,
    NEGATIONS,
    STOPWORDS,
    TERM_BITS,
    bounded_view,
    code_points,
    has_spaceless,
    stem,
    term_table,
    terms_of,
    view_words,
    words,
)
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.model import Score, Turn

__all__ = ["METRIC_ID", "lexical_support", "negation_flips", "LexicalGroundednessEvaluator", "register"]

METRIC_ID = "local_lexical_groundedness"
SCALE = (0.0, 1.0)
DEFAULT_THRESHOLD = 0.5
_MAX_LISTED = 10
ANSWER_VIEW = (16_384, 4_096)
CONTEXT_VIEW = (49_152, 8_192)
SPACELESS_ANSWER_VIEW = (4_096, 1_024)
SPACELESS_CONTEXT_VIEW = (12_288, 2_048)
_NEGATION_REACH = 3  # a negation governs the next few words


@functools.lru_cache(maxsize=65_536)
def _term(token: str) -> str | None:
    return None if token in STOPWORDS or token in NEGATIONS or len(token) < 2 else stem(token)


def negation_flips(answer: str, context: str) -> int:
    """Answer negations before a term the context has, where the context does not negate it."""
    return _negation_flips(words(answer), words(context))


def _negation_flips(answer_tokens: Sequence[str], context_tokens: Sequence[str]) -> int:
    if NEGATIONS.isdisjoint(answer_tokens):  # the usual answer: no need to read the context
        return 0
    negations = [i for i, token in enumerate(answer_tokens) if token in NEGATIONS]
    negated = [[t for w in answer_tokens[i + 1:i + 1 + _NEGATION_REACH] if (t := _term_of(w))] for i in negations]
    if not any(negated):
        return 0
    present, negated_in_context = _context_terms(context_tokens)
    return sum(any(t in present and t not in negated_in_context for t in following) for following in negated)


def _term_of(token: str) -> str | None:
    return _term(token) if len(token) <= CACHED_TOKEN_CHARS else None


def _context_terms(tokens: Sequence[str]) -> tuple[set[str | None], set[str | None]]:
    """(terms the context has, terms within reach after one of its negations)."""
    # Distinct tokens only, and the negations found by list.index in C: a Python step per
    # distinct token and per context negation, not per context token.
    present = set(map(_term_of, set(tokens).difference(NEGATIONS)))
    is_negation = list(map(NEGATIONS.__contains__, tokens))
    negated: set[str | None] = set()
    i = -1
    while True:
        try:
            i = is_negation.index(True, i + 1)
        except ValueError:
            break
        negated.update(_term_of(w) for w in tokens[i + 1:i + 1 + _NEGATION_REACH] if w not in NEGATIONS)
    return present, negated


def lexical_support(answer: str, context: str) -> dict[str, Any] | None:
    """Term and term-bigram support of ``answer`` by ``context``; None when the answer has no content terms."""
    answer_view, context_view = bounded_view(answer, *ANSWER_VIEW), bounded_view(context, *CONTEXT_VIEW)
    spaceless = has_spaceless(answer_view) or has_spaceless(context_view)
    if spaceless:
        answer_view = bounded_view(answer, *SPACELESS_ANSWER_VIEW)
        context_view = bounded_view(context, *SPACELESS_CONTEXT_VIEW)
    answer_tokens = view_words(answer_view)  # shared with the leak metric (when the views agree)
    context_tokens = words(context_view)
    support = (_support_by_terms if spaceless else _support_by_ids)(answer_tokens, context_tokens)
    if support is None:
        return None
    supported, content_terms, found_bigrams, unsupported = support
    bigrams = content_terms - 1
    result = {
        "value": supported / content_terms,
        "content_terms": content_terms,
        "unsupported_count": content_terms - supported,
        "bigram_support": found_bigrams / bigrams if bigrams else None,
        "unsupported_terms": unsupported,
        "unsupported_words": unsupported if spaceless else _surface_forms(answer_tokens, unsupported),
        "negation_flips": _negation_flips(answer_tokens, context_tokens),
    }
    if spaceless:
        result["spaceless_views"] = True
    return result


def _surface_forms(answer_tokens: Sequence[str], stems: list[str]) -> list[str]:
    """Each stem as the answer first wrote it ("twelve" for "twelv"), in the stems' order."""
    wanted = dict.fromkeys(stems, "")
    missing = len(wanted)
    for token in answer_tokens:
        stem_ = _term_of(token)
        if stem_ in wanted and not wanted[stem_]:
            wanted[stem_] = token
            missing -= 1
            if not missing:
                break
    return [surface or stem_ for stem_, surface in wanted.items()]


def reason_for(result: dict[str, Any], source: str) -> str:
    """The verdict in words: how many answer terms the context lacks, and which."""
    missing, total = result["unsupported_count"], result["content_terms"]
    where = "documents" if source == "documents" else source.replace("_", " ")
    if not missing:
        return f"all {total} content terms of the answer occur in the {where}"
    listed = ", ".join(result["unsupported_words"])
    more = "" if missing <= len(result["unsupported_words"]) else ", ..."
    return f"{missing} of {total} answer terms not in the {where}: {listed}{more}"


# (answer terms the context has, answer terms, answer term bigrams the context has, a few unsupported terms)
_Support = tuple[int, int, int, list[str]]


def _support_by_ids(answer_tokens: Sequence[str], context_tokens: Sequence[str]) -> _Support | None:
    # Terms as integer ids (one join per text, then numpy): see TermTable.
    table = term_table()
    answer_ids = code_points(table.encode(answer_tokens))
    if not answer_ids.size:
        return None
    context_ids = code_points(table.encode(context_tokens))
    in_context = np.zeros(len(table.terms), dtype=bool)  # ids are dense: a lookup table beats np.isin's sort
    in_context[context_ids] = True
    supported = in_context[answer_ids]
    unsupported = heapq.nsmallest(_MAX_LISTED, map(table.terms.__getitem__, np.unique(answer_ids[~supported]).tolist()))
    found_bigrams = _found(_bigram_keys(answer_ids), _bigram_keys(context_ids)) if len(answer_ids) > 1 else 0
    return int(supported.sum()), len(answer_ids), found_bigrams, unsupported


def _support_by_terms(answer_tokens: Sequence[str], context_tokens: Sequence[str]) -> _Support | None:
    # Text with runs of a spaceless script: a term per character, mostly new, so sets of strings
    # and tuples (cheaper here than numbering every bigram in the TermTable).
    answer_terms = terms_of(answer_tokens)
    if not answer_terms:
        return None
    context_terms = terms_of(context_tokens)
    vocabulary = set(context_terms)
    unsupported = heapq.nsmallest(_MAX_LISTED, set(answer_terms).difference(vocabulary))
    bigrams = list(zip(answer_terms, answer_terms[1:]))
    found = set(bigrams).intersection(zip(context_terms, context_terms[1:]))
    return (sum(map(vocabulary.__contains__, answer_terms)), len(answer_terms), sum(map(found.__contains__, bigrams)),
            unsupported)


def _bigram_keys(ids: np.ndarray) -> np.ndarray:
    return (ids[:-1] << TERM_BITS) | ids[1:]


def _found(keys: np.ndarray, among: np.ndarray) -> int:
    """How many of ``keys`` occur in ``among`` (a sort and a binary search: 4x np.isin here)."""
    if not among.size:
        return 0
    ordered = np.sort(among)
    at = np.minimum(np.searchsorted(ordered, keys), len(ordered) - 1)
    return int((ordered[at] == keys).sum())


class LexicalGroundednessEvaluator:
    """Lexical support of the answer by the context; skipped without context."""

    metric_ids: tuple[str, ...] = (METRIC_ID,)

    def __init__(self, threshold: float = DEFAULT_THRESHOLD) -> None:
        self._threshold = threshold

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """Compute the support (in an executor for long texts)."""
        resolved = resolve_context(turn)
        if resolved is None:
            return [skipped(METRIC_ID, SCALE, "no context: no document text and no system prompt", {"cause": "no_context"})]
        context, source = resolved
        size = weighted_chars(turn.answer, sum(ANSWER_VIEW)) + weighted_chars(context, sum(CONTEXT_VIEW))
        result = await run_cpu_bound(lexical_support, turn.answer, context, size=size)
        if result is None:
            return [skipped(METRIC_ID, SCALE, "answer has no content words", {"cause": "no_content_words"})]
        value = result.pop("value")
        return [graded(METRIC_ID, value, SCALE, value < self._threshold, reason=reason_for(result, source),
                       details={**result, "context_source": source})]


def register(registry: MetricRegistry) -> None:
    """Add ``local_lexical_groundedness`` to ``registry``."""

    def build(ctx: BuildContext) -> LexicalGroundednessEvaluator:
        return LexicalGroundednessEvaluator(ctx.threshold(METRIC_ID))

    registry.register(
        MetricSpec(
            METRIC_ID, "share of answer content terms (stemmed; bigrams for spaceless scripts) found in the context (no LLM)",
            "local", SCALE, build=build, default_threshold=DEFAULT_THRESHOLD, inputs=("answer", "context"),
            seed="rag-monitor",
        )
    )
