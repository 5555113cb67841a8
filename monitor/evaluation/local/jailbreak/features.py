"""What the jailbreak-attempt model sees: hashed n-grams of the folded text plus structure.

Sparse part: character 2- to 6-grams and word 1- and 2-grams of the folded text (see
:mod:`monitor.evaluation.local.normalise`) and of any payload decoded from it, hashed into
``2**HASH_BITS`` buckets with a fixed polynomial hash (numpy, vectorised; Python's own ``hash``
is salted per process, so it cannot be used). Each occurrence weighs ``1/sqrt(n)`` for ``n``
occurrences in the text, so long and short texts land on one scale.

Dense part (:data:`STRUCTURAL`): what an attack looks like rather than what it says — disguises
undone by the fold, decoded payloads, chat-template tokens, role/authority headers, shouting,
noise tokens of adversarial suffixes, length.

Only a bounded view of the text is read (:data:`HEAD_CHARS` from the start and
:data:`TAIL_CHARS` from the end), so the cost does not grow with the input.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass

import numpy as np

from monitor.evaluation.local.jailbreak.decode import decode_payloads
from monitor.evaluation.local.jailbreak.glossary import concepts
from monitor.evaluation.local.normalise import Folded, fold, without_marks
from monitor.evaluation.local.text import bounded_view

__all__ = ["HASH_BITS", "HEAD_CHARS", "TAIL_CHARS", "CHAR_NGRAMS", "STRUCTURAL", "Features", "Prepared", "extract",
           "prepare", "ngram_buckets", "char_buckets", "word_buckets", "structure_values", "PRIME", "MIX"]

HASH_BITS = 18
HEAD_CHARS = 4096
TAIL_CHARS = 1024
CHAR_NGRAMS = (2, 3, 4, 5, 6)

STRUCTURAL = (
    "length", "lines", "upper_share", "symbol_share", "case_flips", "noise_tokens",
    "invisible", "tag_characters", "confusables", "leetspeak", "spaced_letters",
    "encoded_payload", "obfuscated_payload", "chat_template_tokens", "role_headers", "caps_phrases",
    "persona_override", "ends_with_question_mark", "opens_with_question_word",
)

PRIME = 1_099_511_628_211
MIX = 0x9E3779B97F4A7C15
_PRIME = np.uint64(PRIME)
_MIX = np.uint64(MIX)
_SHIFT = np.uint64(64 - HASH_BITS)
_OFFSETS = {n: np.uint64(n * pow(PRIME, n, 1 << 64) % (1 << 64)) for n in CHAR_NGRAMS}

_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LETTERS = _UPPER + _UPPER.lower()
_SYMBOLS = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_CASE_FLIP = re.compile("[a-z][A-Z]")
_NOISE = re.compile(r"[A-Za-z][\\(){}\[\]*<>|^~`]+[A-Za-z]")
_CHAT_TOKENS = re.compile(r"<\|[A-Za-z_]{2,24}\|>|\[/?INST\]|<</?SYS>>|<start_of_turn>|<end_of_turn>", re.IGNORECASE)
_ROLE_WORDS = ("system", "admin", "developer", "root", "sudo", "assistant", "user", "human", "instruction",
               "override", "operator", "security", "important", "dan", "gpt")
_HEADER_PREFIX = " \t#>*[(<|=-"
_HEADER_END = frozenset(":]>)|")
_MAX_HEADER_LINES = 200
_CAPS_PHRASE = re.compile(r"\b[A-Z]{3,}(?:[ _-]+[A-Z]{3,})+\b")
# Cues of the persona/override family ("you are DAN, you can do anything now, stay in character"):
# public training sets hold few short examples of it, so its cues are counted as one dense
# feature whose weight the model learns. Plain substring tests on the folded text: no regex,
# no backtracking, bounded by the view.
_PERSONA_CUES = (
    "do anything now", "stay in character", "break character", "broken free", "no restrictions",
    "without restrictions", "no filters", "unfiltered", "no rules", "content policy", "jailbroken",
    "jailbreak mode", "developer mode", "unrestricted", "opposite mode", "pretend to be", "pretend you are",
    "you are going to act as", "act as an ai", "role play as", "roleplay as", "immerse yourself", "amoral",
    "ethical guidelines", "never refuse", "lose tokens", "two responses", "not bound by",
    # added 2026-11-27: the short DAN-family openers and "amoral" framings (validation over three
    # seeds unchanged, 0.815 against 0.817; they lift short openers the n-grams score weakly)
    "you are dan", "as dan", "dan mode", "stands for do anything", "can do anything", "from now on you are",
    "you are now", "no ethical", "no moral", "without any ethical", "without any moral",
)
# Questions ask, orders command: most benign texts that use attack words are questions about
# them ("How do I enable developer mode?"), most attempts are orders. Two cheap cues of the form;
# the n-gram weights still decide for questions that ask for the instructions themselves.
# (Grouped validation, three seeds: recall at 3 % hard-negative FPR 0.817 without, 0.849 with.)
_QUESTION_WORDS = frozenset(("what", "how", "why", "when", "where", "who", "which", "is", "are", "can", "could", "do",
                             "does", "should", "will", "would", "was", "did", "may"))
_INDEX = {name: i for i, name in enumerate(STRUCTURAL)}
_NOISE_CHARS = b"\\(){}[]*<>|^~`"
_SIGNAL_MIN = {"invisible": 1, "tag_characters": 1, "confusables": 1, "leetspeak": 2, "spaced_letters": 1,
               "encoded_payload": 1, "obfuscated_payload": 1, "chat_template_tokens": 1, "role_headers": 1,
               "caps_phrases": 2, "noise_tokens": 3, "persona_override": 2}


@dataclass(frozen=True, slots=True)
class Features:
    """Hashed bucket of every n-gram occurrence, the structural vector and its notable entries."""

    buckets: np.ndarray
    structural: np.ndarray
    signals: tuple[str, ...]


def _char_buckets(text: str) -> list[np.ndarray]:
    # "surrogatepass": a lone surrogate (JSON's "\ud800" arrives as one) hashes as its code point,
    # as the plain-Python path's ord() would have it, instead of failing the encoding.
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    out = []
    # The hash of an n-gram is n * PRIME**n + sum(code_k * PRIME**(n-1-k)) (mod 2**64): the sum
    # part of the (n+1)-grams extends the n-grams' by one step, so all sizes share one pass.
    tail = codes
    for n in range(1, max(CHAR_NGRAMS) + 1):
        if len(codes) < n:
            break
        tail = codes[: len(codes) - n + 1] if n == 1 else tail[:-1] * _PRIME + codes[n - 1:]
        if n in CHAR_NGRAMS:
            out.append(((tail + _OFFSETS[n]) * _MIX) >> _SHIFT)
    return out


def _word_buckets(words: list[str]) -> list[np.ndarray]:
    if not words:
        return []
    hashes = (zlib.crc32(w.encode("utf-8", "surrogatepass")) for w in words)  # see _char_buckets
    ids = np.fromiter(hashes, dtype=np.uint64, count=len(words))
    unigrams = ((ids + np.uint64(7)) * _MIX) >> _SHIFT
    bigrams = ((ids[:-1] * _PRIME + ids[1:] + np.uint64(11)) * _MIX) >> _SHIFT
    return [unigrams, bigrams]


def char_buckets(text: str) -> list[np.ndarray]:
    """Per size of :data:`CHAR_NGRAMS`, the bucket of the n-gram starting at each position of ``text``."""
    return _char_buckets(text)


def word_buckets(words: list[str]) -> list[np.ndarray]:
    """The buckets of the word unigrams and bigrams of ``words`` (in that order; empty for none)."""
    return _word_buckets(words)


def _ascii_count(raw: bytes, chars: bytes) -> int:
    return len(raw) - len(raw.translate(None, chars))  # C-level: no per-character Python work


def _role_headers(view: str) -> int:
    """Lines that open like a role or authority header: "SYSTEM:", "### Instruction", "[ADMIN]"."""
    count = 0
    for line in view.split("\n", _MAX_HEADER_LINES)[:_MAX_HEADER_LINES]:
        head = line.lstrip(_HEADER_PREFIX)[:32].lower()
        if head.startswith(_ROLE_WORDS) and any(c in _HEADER_END for c in head):
            count += 1
    return count


def structure_values(raw_length: int, view: str, folded: Folded, decoded_kinds: tuple[str, ...]) -> tuple[float, ...]:
    """The :data:`STRUCTURAL` counts, before ``log1p`` (plain Python: the fast path uses them as they are)."""
    raw = view.encode("ascii", "ignore")
    letters = _ascii_count(raw, _LETTERS) or 1
    upper = _ascii_count(raw, _UPPER)
    tokens = max(1, folded.tokens)
    encoded = sum(k in ("base64", "base32", "hex", "binary") for k in decoded_kinds)
    # Each regex below runs only when the characters it needs are present: an ordinary question
    # has no brackets or runs of capitals, and skipping a scan is cheaper than running it.
    noise = len(_NOISE.findall(view)) if _ascii_count(raw, _NOISE_CHARS) else 0
    chat = len(_CHAT_TOKENS.findall(view)) if ("<" in view or "[" in view) else 0
    return (
        math.log1p(raw_length), math.log1p(view.count("\n")), upper / letters,
        _ascii_count(raw, _SYMBOLS) / max(1, len(view)), len(_CASE_FLIP.findall(view)) / tokens if upper else 0.0,
        noise, folded.invisible, folded.tags, folded.confusables, folded.leet, folded.spaced,
        encoded, len(decoded_kinds) - encoded, chat, _role_headers(view),
        len(_CAPS_PHRASE.findall(view)) if upper >= 6 else 0,
        _persona_cues(folded.text),
        *_question_form(view),
    )


def _question_form(view: str) -> tuple[float, float]:
    text = view.strip()
    if not text:
        return 0.0, 0.0
    first = text.split(None, 1)[0].lower().strip("\u00bf\u00a1\"'(")
    return float(text.endswith("?")), float(first in _QUESTION_WORDS)


def _persona_cues(text: str) -> int:
    lowered = text.lower().replace("-", " ")
    return sum(cue in lowered for cue in _PERSONA_CUES)


@dataclass(frozen=True, slots=True)
class Prepared:
    """What both scoring paths read: the folded text with any decoded payload, the structural counts."""

    body: str
    """Folded text (single spaces between tokens), plus `` \\n `` and the folded payloads if any,
    plus a space and the :mod:`.glossary` markers of the ideas it uses if any."""
    decoded: bool
    payloads: tuple[str, ...]
    """The decoded payloads as they came out of their encoding (each scored as a text of its own)."""
    values: tuple[float, ...]
    """:data:`STRUCTURAL` counts before ``log1p``."""
    signals: tuple[str, ...]


def prepare(text: str) -> Prepared:
    """Fold and decode the bounded view of ``text`` and count its structure (no n-grams yet)."""
    view = bounded_view(text, HEAD_CHARS, TAIL_CHARS)
    decoded = decode_payloads(view)
    folded = fold(view)
    # Diacritics go too: "ignōrē" and strike-through overlays read as the word they decorate.
    body = without_marks(folded.text)
    if decoded.texts:
        body = body + " \n " + without_marks(fold(" ".join(decoded.texts)).text)
    markers = concepts(body)
    if markers:
        # After a plain space, so short questions keep to the plain-Python path (.fastpath).
        body = body + " " + " ".join(markers)
    values = structure_values(len(text), view, folded, decoded.kinds)
    signals = tuple(name for name, least in _SIGNAL_MIN.items() if values[_INDEX[name]] >= least)
    return Prepared(body, bool(decoded.texts), decoded.texts, values, signals)


def ngram_buckets(body: str) -> np.ndarray:
    """The hashed bucket of every character and word n-gram occurrence of ``body``."""
    buckets = _char_buckets(f" {body} ") + _word_buckets(body.split())
    return np.concatenate(buckets).astype(np.intp) if buckets else np.zeros(0, dtype=np.intp)


def extract(text: str) -> Features:
    """Features of ``text`` (reads at most ``HEAD_CHARS + TAIL_CHARS`` characters of it)."""
    prepared = prepare(text)
    structural = np.log1p(np.array(prepared.values, dtype=np.float64))
    return Features(ngram_buckets(prepared.body), structural, prepared.signals)
