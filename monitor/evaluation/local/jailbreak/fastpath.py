"""The n-gram part of the margin for a short text, in plain Python, equal to the numpy path's.

Why: the flag runs on every turn's question, usually 50-200 characters. For arrays that small
numpy's fixed cost per call (a few dozen calls to hash five n-gram sizes and two word n-gram
kinds and to sum their weights) was most of the detector's time, and the same words come back
turn after turn.

How: the sparse part of the margin is the sum of one weight per n-gram occurrence of
``" " + body + " "`` (character n-grams) and of ``body.split()`` (words and word pairs),
divided by the square root of their count. The body's tokens are separated by single spaces, so
every character window either lies inside one padded token ``" word "`` or has a space strictly
inside it; the second kind is attributed to its first inner space and is fully determined by the
``max(CHAR_NGRAMS) - 2`` characters either side of that space. (A 1-gram of a space would sit in
two padded words, hence sizes of at least 2.) The sum therefore splits into three memoised parts:

- per word: its windows inside ``" word "`` plus its unigram weight;
- per inner space: the windows that first cross it (key: the characters around it);
- per adjacent word pair: the bigram weight.

Each part is computed with the same integer hash as :mod:`.features` (Python integers, reduced
modulo 2**64 where numpy's uint64 wraps). The shipped weights are float16 values, so their
float64 sums are exact in any order: this path and the numpy path give bit-identical sums.
The memos are bounded (cleared when full, long keys never stored), so memory stays flat whatever
the traffic, and a call hashes at most :data:`MISS_BUDGET` new windows before it hands the text
to the numpy path.
"""

from __future__ import annotations

import zlib
from array import array

import numpy as np

from monitor.evaluation.local.jailbreak.features import CHAR_NGRAMS, HASH_BITS, MIX, PRIME

__all__ = ["MAX_FAST_CHARS", "MEMO_ENTRIES", "MEMO_KEY_CHARS", "SparseTable", "fast_eligible"]

MAX_FAST_CHARS = 1024
"""Longer bodies go the numpy path: there the per-call cost is paid once for many n-grams."""
MEMO_ENTRIES = 1 << 15
"""Entries per memo before it is cleared (three memos of ~100 bytes an entry: a few MiB)."""
MISS_BUDGET = 400
"""Character windows a call may hash in plain Python for words and spaces not yet remembered
(about 0.1-0.2 ms); past it the call gives up and the caller takes the numpy path. The entries
computed so far stay, so the memos still fill up, a little per call, while a cold start or a
text of new words costs at most this plus the numpy path."""
MEMO_KEY_CHARS = 48
"""Longer word pairs are computed each time, not remembered, and a text with a longer word goes
the numpy path: such tokens rarely come back (Chinese or Japanese sentences, pasted blobs), and
unique long tokens would otherwise fill the memos with kilobytes per entry."""

_M64 = (1 << 64) - 1
_SHIFT = 64 - HASH_BITS
_SIZES = frozenset(CHAR_NGRAMS)
_LONGEST = max(CHAR_NGRAMS)
# A window with a space strictly inside reaches at most this far to either side of that space.
_REACH = _LONGEST - 2
# features._char_buckets starts each n-gram's hash at n, then h = h * PRIME + code per
# character: h = n * PRIME**n + sum(code_k * PRIME**(n-1-k)). The first term is a constant.
_OFFSET = {n: n * pow(PRIME, n, 1 << 64) & _M64 for n in CHAR_NGRAMS}
# A 1-gram " " would belong to the padded words on both sides of its space: the split above
# needs every n-gram size to be at least 2.
assert min(CHAR_NGRAMS) >= 2


def fast_eligible(body: str) -> bool:
    """Whether ``body`` has the shape the decomposition needs: short, printable (so no
    whitespace but the ASCII space), tokens separated by exactly one space."""
    return (len(body) <= MAX_FAST_CHARS and body.isprintable() and "  " not in body
            and body[:1] != " " and body[-1:] != " ")


def _count(length: int, words: int) -> int:
    """How many n-gram occurrences the numpy path sums for a padded text of ``length`` characters."""
    chars = sum(max(0, length - n + 1) for n in CHAR_NGRAMS)
    return chars + 2 * words - 1 if words else chars


class SparseTable:
    """The n-gram weights as a flat float64 array, and the memos of the decomposition."""

    def __init__(self, buckets: np.ndarray) -> None:
        if len(buckets) != 1 << HASH_BITS:
            raise ValueError(f"expected {1 << HASH_BITS} bucket weights, got {len(buckets)}")
        self._w = array("d", np.ascontiguousarray(buckets, dtype=np.float64).tobytes())
        self._words: dict[str, float] = {}
        self._joints: dict[str, float] = {}
        self._pairs: dict[str, float] = {}

    def total(self, body: str) -> tuple[float, int] | None:
        """Sum of the n-gram weights of ``body`` (which must be :func:`fast_eligible`) and their
        count; None when that needs more than :data:`MISS_BUDGET` windows hashed here."""
        if not body:  # padded to two spaces: only a 2-gram size would see anything
            return self._windows([32, 32], range(2), range(3)), _count(2, 0)
        words = body.split(" ")
        padded = f" {body} "
        words_memo, joints_memo, pairs_memo = self._words, self._joints, self._pairs
        total = 0.0
        budget = MISS_BUDGET
        pos = 1  # index in ``padded`` where the current word starts
        last = len(words) - 1
        for i, word in enumerate(words):
            part = words_memo.get(word)
            if part is None:
                budget -= len(_SIZES) * (len(word) + 2)
                if budget < 0 or len(word) > MEMO_KEY_CHARS:
                    return None  # too much new text, or a token too long to remember (scripts
                    # written without spaces, pasted blobs): numpy hashes it faster
                part = self._remember(words_memo, word, self._word(word))
            total += part
            end = pos + len(word)  # the space after the word
            if i < last:
                # Near the start the key is cut short; the space's offset in it then differs,
                # so it is part of the key (a character no folded text holds: not printable).
                start = end - _REACH if end >= _REACH else 0
                key = padded[start:end + _REACH + 1] if start else f"{end}\x00{padded[:end + _REACH + 1]}"
                part = joints_memo.get(key)
                if part is None:
                    budget -= _REACH * _REACH
                    if budget < 0:
                        return None
                    part = self._remember(joints_memo, key, self._joint(padded[start:end + _REACH + 1], end - start))
                total += part
                pair = padded[pos:end + 1 + len(words[i + 1])]
                part = pairs_memo.get(pair)
                if part is None:
                    part = self._remember(pairs_memo, pair, self._pair(word, words[i + 1]))
                total += part
            pos = end + 1
        return total, _count(len(padded), len(words))

    @staticmethod
    def _remember(memo: dict[str, float], key: str, value: float) -> float:
        if len(key) > MEMO_KEY_CHARS:
            return value
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()  # bounded: a burst of new words costs recomputation, never memory
        memo[key] = value
        return value

    def _windows(self, codes: list[int], starts: range, ends: range) -> float:
        """Sum over the windows ``codes[a:b]`` (``a`` in ``starts``, ``b`` in ``ends``, length one
        of the n-gram sizes): the hash of each is built one character longer than the last."""
        w = self._w
        total = 0.0
        for a in starts:
            h = 0
            for b in range(a + 1, min(len(codes), a + _LONGEST) + 1):
                h = (h * PRIME + codes[b - 1]) & _M64
                if b in ends and b - a in _SIZES:
                    total += w[((h + _OFFSET[b - a]) * MIX & _M64) >> _SHIFT]
        return total

    def _word(self, word: str) -> float:
        """Windows inside ``" word "`` plus the word's unigram weight."""
        codes = [32, *map(ord, word), 32]
        unigram = self._w[((zlib.crc32(word.encode()) + 7) * MIX & _M64) >> _SHIFT]
        return unigram + self._windows(codes, range(len(codes)), range(len(codes) + 1))

    def _joint(self, key: str, space: int) -> float:
        """Windows of ``key`` whose first inner space is ``key[space]``."""
        codes = list(map(ord, key))
        # Starts after the last space before ``space`` (a space further left would be the
        # window's first inner one, unless it is the window's own first character).
        first = max(0, space - _REACH, key.rfind(" ", 0, space))
        return self._windows(codes, range(first, space), range(space + 2, len(codes) + 1))

    def _pair(self, first: str, second: str) -> float:
        """The word-bigram weight (features._word_buckets: crc32 ids, one polynomial step)."""
        a, b = zlib.crc32(first.encode()), zlib.crc32(second.encode())
        return self._w[((a * PRIME + b + 11) * MIX & _M64) >> _SHIFT]
