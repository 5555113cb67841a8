"""Word-level text handling for the lexical local signals."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["words", "content_words", "bounded_view", "STOPWORDS"]

_WORD = re.compile(r"\w+", re.UNICODE)

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
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


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
