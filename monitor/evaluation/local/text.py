"""Word-level text handling for the lexical local signals.

:func:`terms` is what the lexical signals compare: content words reduced to a light stem
("batteries" and "battery" meet at "battery", "tested"/"testing" at "test"), and, for scripts
written without spaces (Chinese, Japanese kana, Thai, Lao, Khmer, Myanmar), overlapping
character bigrams, which is how their words are usually matched without a dictionary.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
import threading
import unicodedata
from typing import Iterable, Sequence

import numpy as np

__all__ = ["words", "word_runs", "word_runs_each", "view_words", "has_spaceless", "distinct_non_ascii", "content_words", "terms", "terms_of", "token_terms", "TermTable",
           "term_table", "code_points", "TERM_BITS", "stem", "bounded_view", "NEGATIONS", "STOPWORDS"]

_WORD = re.compile(r"\w+", re.UNICODE)
# ASCII characters that are not word characters (``\w``), mapped to a space: on ASCII text,
# ``translate`` then ``split`` finds exactly the regex's tokens, about four times faster (two C
# passes with a fast path for ASCII, against a regex match attempt at every position).
_ASCII_NON_WORD = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_")})
_ASCII_BYTES = bytes(range(128))
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
    text = unicodedata.normalize("NFKC", text)  # ASCII text is returned at once
    if not text.isascii():
        # Typographic punctuation only: replace it first, so lower() runs on ASCII (about 8x
        # faster than on a wider string). Exact when lower() leaves those characters alone.
        others = distinct_non_ascii(text)
        if others is None or any(map(_WORD.match, others)) or any(other.lower() != other for other in others):
            return word_runs(text.lower())
        for other in others:
            text = text.replace(other, " ")
    return text.lower().translate(_ASCII_NON_WORD).split()


def word_runs(text: str) -> list[str]:
    """The maximal runs of word characters (``\\w+``) in ``text`` as it is (no folding)."""
    if not text.isascii():
        # Mostly-English text with typographic punctuation (’ “ ” — …, as LLMs write): those
        # characters separate words exactly as a space does, so replace them and take the
        # ASCII path; text with non-ASCII letters (é, 中) takes the regex.
        others = distinct_non_ascii(text)
        if others is None or any(map(_WORD.match, others)):
            return _WORD.findall(text)
        for other in others:
            text = text.replace(other, " ")
    return text.translate(_ASCII_NON_WORD).split()


def word_runs_each(texts: Sequence[str]) -> list[list[str]]:
    """``[word_runs(t) for t in texts]``, with one pass over the non-ASCII characters of them all."""
    joined = "\n".join(texts)  # a non-word character: no run crosses it
    if joined.count("\n") != len(texts) - 1 or not texts:  # a text has line breaks of its own
        return [word_runs(text) for text in texts]
    if not joined.isascii():
        others = distinct_non_ascii(joined)
        if others is None or any(map(_WORD.match, others)):
            return [word_runs(text) for text in texts]
        for other in others:
            joined = joined.replace(other, " ")
    return [text.translate(_ASCII_NON_WORD).split() for text in joined.split("\n")]


def distinct_non_ascii(text: str) -> set[str] | None:
    """The distinct non-ASCII characters of ``text``; None when they are many (a non-Latin script:
    collecting them would cost more than the regex the callers then use)."""
    data = text.encode("utf-8", "surrogatepass")
    # A non-ASCII character adds 1-3 bytes; a short text may hold a few (a quote, a dash).
    if len(data) - len(text) > len(text) // 8 + 16:
        return None
    # Bytes translate drops the ASCII in C; what is left is short for mostly-English text.
    return set(data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass"))


def has_spaceless(text: str) -> bool:
    """Whether ``text`` has characters of a script written without spaces (ASCII: a flag check)."""
    if text.isascii():
        return False
    others = distinct_non_ascii(text)
    if others is None:  # mostly non-Latin: the regex finds such a character early if there is one
        return _SPACELESS.search(text) is not None
    return any(map(_SPACELESS.match, others))


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


def _token_terms_uncached(token: str) -> tuple[str, ...]:
    if _SPACELESS.search(token):  # overlapping bigrams (the token itself when it is one character)
        return tuple(map(operator.add, token, token[1:])) if len(token) > 1 else (token,)
    if token not in STOPWORDS and (len(token) > 1 or token.isdigit()):
        return (stem(token),)
    return ()


_token_terms_cached = functools.lru_cache(maxsize=65_536)(_token_terms_uncached)


def token_terms(token: str) -> tuple[str, ...]:
    """The terms one token contributes: its stem, its character bigrams, or none (a stopword)."""
    return _token_terms_cached(token) if len(token) <= CACHED_TOKEN_CHARS else _token_terms_uncached(token)


_CODE_BASE = 0x10000  # term codes start past the surrogates, which UTF-32 cannot encode
TERM_BITS = 20  # every term id is below 2**20: code points stop at 0x10FFFF


class _TokenCodes(dict[str, str]):
    """token -> the codes of its terms; a token not seen yet is worked out on lookup."""

    def __init__(self, table: "TermTable") -> None:
        super().__init__()
        self._table = table

    def __missing__(self, token: str) -> str:
        return self._table.codes_of(token)


class TermTable:
    """Terms numbered as they are first met, and each token's terms as a string of code points.

    :meth:`encode` turns a token list into one string, one code point per term (stopwords give
    none, a run of a spaceless script one per bigram): a single ``join`` over a dict lookup per
    token, in C; only a token not seen before runs Python (``__missing__``). Numpy reads the
    string as integers (:func:`code_points`), so comparing terms and term bigrams of two texts
    is integer work in C rather than a Python step or a hashed tuple per term. For text without
    runs of spaceless scripts (those bring a new term per character: :func:`terms_of`). Bounded: the
    table in use is replaced (:func:`term_table`) once it holds MAX_TOKENS tokens, MAX_TERMS
    terms or MAX_CHARS characters; a caller keeps the table it started with, so ids stay
    consistent within a call.
    """

    MAX_TOKENS, MAX_TERMS, MAX_CHARS = 65_536, 262_144, 4_000_000

    def __init__(self) -> None:
        self.tokens = _TokenCodes(self)
        self.terms: list[str] = []
        self._codes: dict[str, str] = {}
        self.chars = 0
        self._lock = threading.Lock()  # the executor may run two metrics' misses at once

    @property
    def full(self) -> bool:
        return (len(self.tokens) >= self.MAX_TOKENS or len(self.terms) >= self.MAX_TERMS
                or self.chars >= self.MAX_CHARS)

    def encode(self, tokens: Iterable[str]) -> str:
        """The codes of ``tokens``' terms, in order."""
        return "".join(map(self.tokens.__getitem__, tokens))

    def decode(self, codes: str) -> list[str]:
        """The terms of ``codes``."""
        return list(map(self.terms.__getitem__, code_points(codes).tolist()))

    def codes_of(self, token: str) -> str:
        """The codes of one token's terms (remembered)."""
        found = self.tokens.get(token)
        if found is not None:
            return found
        terms = _token_terms_uncached(token)
        with self._lock:
            # New terms are numbered in bulk (set, zip, map in C): a run of a spaceless script
            # brings one new term per character.
            new = set(terms).difference(self._codes)
            if new:
                first = _CODE_BASE + len(self.terms)
                self._codes.update(zip(new, map(chr, range(first, first + len(new)))))
                self.terms.extend(new)
                self.chars += sum(map(len, new))
            codes = "".join(map(self._codes.__getitem__, terms))
            # Long tokens are remembered too (a repeated one would otherwise be worked out at
            # each occurrence): MAX_CHARS bounds what they hold.
            dict.__setitem__(self.tokens, token, codes)
            self.chars += len(token)
        return codes


_table = TermTable()


def term_table() -> TermTable:
    """The table in use (a new one once the current one is full)."""
    global _table
    if _table.full:
        _table = TermTable()
    return _table


def code_points(codes: str) -> np.ndarray:
    """Term ids of a :meth:`TermTable.encode` string, as int64."""
    return np.frombuffer(codes.encode("utf-32-le"), dtype=np.uint32).astype(np.int64) - _CODE_BASE


def terms_of(tokens: Sequence[str]) -> list[str]:
    """:func:`terms` of text already split by :func:`words` (so callers tokenise once)."""
    # Each distinct token is looked up once; the per-token walk is then map/chain in C. Not
    # through the TermTable: a run of a spaceless script brings a new term per character, which
    # that table would have to number and keep.
    table = {token: token_terms(token) for token in set(tokens)}
    return list(itertools.chain.from_iterable(map(table.__getitem__, tokens)))


def terms(text: str) -> list[str]:
    """Stemmed content words, plus character bigrams for runs of spaceless scripts."""
    return terms_of(words(text))
