"""Word-level text handling for the lexical local signals.

:func:`terms` is what the lexical signals compare: content words reduced to a light stem
("batteries" and "battery" meet at "battery", "tested"/"testing" at "test"), and, for scripts
written without spaces (Chinese, Japanese kana, Thai, Lao, Khmer, Myanmar), overlapping
character bigrams, which is how their words are usually matched without a dictionary.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from typing import Sequence

__all__ = ["words", "word_runs", "view_words", "content_words", "terms", "terms_of", "token_terms", "stem", "bounded_view",
           "NEGATIONS", "STOPWORDS"]

_WORD = re.compile(r"\w+", re.UNICODE)
# ASCII characters that are not word characters (``\w``), mapped to a space: on ASCII text,
# ``translate`` then ``split`` finds exactly the regex's tokens, about four times faster (two C
# passes with a fast path for ASCII, against a regex match attempt at every position).
_ASCII_NON_WORD = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_")})
_SPACELESS = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "without", "cannot", "nothing", "neither", "nobody",
                       "don't", "doesn't", "isn't", "aren't", "wasn't", "weren't", "won't", "can't", "didn't"})

# English function words: they are "supported" by any context and would inflate lexical support.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves let lets please
    hi hello thanks thank sure yes ok okay""".split()
)


def words(text: str) -> list[str]:
    """Lowercased NFKC word tokens (letters, digits, underscore; any script)."""
    return word_runs(unicodedata.normalize("NFKC", text).lower())  # NFKC returns ASCII text at once


def word_runs(text: str) -> list[str]:
    """The maximal runs of word characters (``\\w+``) in ``text`` as it is (no folding)."""
    if text.isascii():
        return text.translate(_ASCII_NON_WORD).split()
    return _WORD.findall(text)


@functools.lru_cache(maxsize=8)
def view_words(view: str) -> tuple[str, ...]:
    """:func:`words` of a bounded view, remembered for the few most recent views.

    Several metrics of one turn read the same view of the same field (the answer's first 16 KiB
    and last 4 KiB): the first tokenises it, the others find it here. The key is the view, so a
    long text is hashed once per view, never in full; eight entries of at most ~20 KiB each.
    """
    return tuple(words(view))


def content_words(tokens: list[str]) -> list[str]:
    """``tokens`` without stopwords and single letters (single digits are kept: they carry facts)."""
    return [t for t in tokens if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]


def bounded_view(text: str, head: int, tail: int) -> str:
    """``text`` when short; else its first ``head`` and last ``tail`` characters joined by a newline.

    Every local signal reads through this so its cost has a ceiling whatever arrives: the start
    of a message carries its framing, the end carries the actual request.
    """
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n" + text[len(text) - tail:]


@functools.lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English suffix stripper: plural, -ed and -ing forms meet their base."""
    base = _strip_suffix(word)
    # "charge", "charged", "charging" all end as "charg"
    return base[:-1] if len(base) > 4 and base.endswith("e") and base.isalpha() else base


def _strip_suffix(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run, stopped -> stop
            return base
    return word


# Tokens up to this length are remembered by the term caches; a longer one (a run of Chinese
# text can be one 16 KiB "word") is worked out each time rather than pinned in memory.
CACHED_TOKEN_CHARS = 40


MEMO_TOKENS = 65_536


def _token_terms_uncached(token: str) -> tuple[str, ...]:
    if _SPACELESS.search(token):
        return tuple(token[i:i + 2] for i in range(max(1, len(token) - 1)))
    if token not in STOPWORDS and (len(token) > 1 or token.isdigit()):
        return (stem(token),)
    return ()


# token -> its one term, or "" when it gives none (a stopword, a lone letter); only tokens of at
# most CACHED_TOKEN_CHARS that give at most one term (not runs of spaceless scripts). A plain
# dict of strings, so ``terms_of`` is ``map(dict.get)`` then ``filter`` — no Python step per
# token. When full it is replaced, not cleared: a thread still reading the old one (the
# executor runs metrics concurrently) keeps a complete table.
_memo: dict[str, str] = {}


def token_terms(token: str) -> tuple[str, ...]:
    """The terms one token contributes: its stem, its character bigrams, or none (a stopword)."""
    found = _memo.get(token)
    if found is not None:
        return (found,) if found else ()
    return _remember(token)


def _remember(token: str) -> tuple[str, ...]:
    global _memo
    found = _token_terms_uncached(token)
    if len(token) <= CACHED_TOKEN_CHARS and len(found) <= 1:
        memo = _memo
        if len(memo) >= MEMO_TOKENS:
            _memo = memo = {}
        memo[token] = found[0] if found else ""
    return found


def terms_of(tokens: Sequence[str]) -> list[str]:
    """:func:`terms` of text already split by :func:`words` (so callers tokenise once)."""
    looked_up: list[str | tuple[str, ...] | None] = list(map(_memo.get, tokens))
    if None in looked_up and _fill_misses(looked_up, tokens):
        return _flatten(looked_up)
    return list(filter(None, looked_up))  # type: ignore[arg-type]  # only strings are left


def _flatten(looked_up: list[str | tuple[str, ...] | None]) -> list[str]:
    """The slow path, for text with runs of spaceless scripts (a tuple of bigrams per run)."""
    out: list[str] = []
    for found in looked_up:
        if isinstance(found, str):
            if found:
                out.append(found)
        elif found:
            out.extend(found)
    return out


def _fill_misses(looked_up: list[str | tuple[str, ...] | None], tokens: Sequence[str]) -> bool:
    """Put each missing token's terms in place; whether any gave several (then a tuple is there)."""
    # list.index finds each miss in C, so a warm memo with one long token (an identifier) costs
    # one scan, not a Python step per token. ``seen`` keeps a repeated long token from being
    # worked out again within the call.
    seen: dict[str, tuple[str, ...]] = {}
    several = False
    i = 0
    while True:
        try:
            i = looked_up.index(None, i)
        except ValueError:
            return several
        token = tokens[i]
        found = seen.get(token)
        if found is None:
            found = seen[token] = _remember(token)
        looked_up[i] = found[0] if len(found) == 1 else found
        several = several or len(found) > 1
        i += 1


def terms(text: str) -> list[str]:
    """Stemmed content words, plus character bigrams for runs of spaceless scripts."""
    return terms_of(words(text))
