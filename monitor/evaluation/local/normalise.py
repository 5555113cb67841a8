"""Undo the cheap disguises people put on words before a local signal reads them.

Attackers write "1gn0re", "I.g.n.o.r.e", "i g n o r e", full-width or mathematical letters,
Cyrillic look-alikes inside Latin words, zero-width joiners between letters and Unicode "tag"
characters that render as nothing but spell ASCII. The same tricks hide profanity ("sh1t").
:func:`fold` maps all of them back to plain lower-case text, and :class:`Folded` counts what
it undid: the counts are signals in their own right (an ordinary question rarely needs any).

Cost is linear and bounded by the caller's cap: every regular expression here is a single
character class or a fixed literal (no nested quantifiers, nothing to backtrack into), and the
only Python-level loop walks whitespace tokens that contain a digit, a symbol or a look-alike.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from monitor.evaluation.local.text import distinct_non_ascii

__all__ = ["Folded", "fold", "without_marks", "CONFUSABLES", "LEET"]

# Format characters that render as nothing (zero-width space/joiners, word joiner, BOM, soft
# hyphen, bidi controls, variation selectors): removed so "ig\u200bnore" reads "ignore".
_INVISIBLE = dict.fromkeys(
    [0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E,
     0x200F, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, *range(0x202A, 0x202F),
     *range(0x2066, 0x206A), *range(0xFE00, 0xFE10)]
)
# Unicode tag characters (U+E0020-E007E) mirror printable ASCII and are invisible: decode them.
_TAGS = {0xE0000 + c: chr(c) for c in range(0x20, 0x7F)}
_TAG_OR_INVISIBLE = re.compile("[\U000e0000-\U000e007f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e"
                               "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufe00-\ufe0f\ufeff]")

# Letters from other scripts that look like Latin ones (after NFKC and lower-casing). Folded
# only where the text is mostly Latin or inside a word that mixes scripts, so Russian or Greek
# prose keeps its letters.
CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k",
        "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s",
        "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ո": "n", "ս": "u", "ց": "g", "ⅼ": "l",
        # Greek
        "α": "a", "β": "b", "γ": "y", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ς": "c",
        # Latin extensions and IPA letters that pass for plain ones
        "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i", "ʏ": "y", "ʀ": "r", "ɴ": "n", "ʜ": "h", "ᴀ": "a",
        "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ᴊ": "j", "ᴋ": "k", "ᴍ": "m", "ᴏ": "o", "ᴘ": "p", "ᴛ": "t",
        "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z", "ꜱ": "s", "ɢ": "g", "ʟ": "l",
    }
)
_CONFUSABLE_CHARS = "".join(chr(c) for c in CONFUSABLES)
_NON_LATIN_CONFUSABLE = re.compile(f"[{re.escape(_CONFUSABLE_CHARS)}]")
_LATIN = re.compile("[a-z]")

# Digits and symbols standing in for letters. Applied only to tokens that also hold letters, so
# "12345" and "3.14" stay numbers.
LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
                      "@": "a", "$": "s", "!": "i", "|": "l", "+": "t", "€": "e"})
_LEETABLE = frozenset("0134578 9@$!|+€".replace(" ", ""))
_SEPARATORS = frozenset(".-_*/|~+,'`\u00b7")
_WHITESPACE = re.compile(r"\s+")
_TRAILING_PUNCT = ".,;:!?)]}\"'"


@dataclass(frozen=True, slots=True)
class Folded:
    """Folded text and what it took to get there."""

    text: str
    invisible: int = 0
    """Invisible format characters removed."""
    tags: int = 0
    """Unicode tag characters decoded to ASCII."""
    confusables: int = 0
    """Words whose look-alike letters were folded to Latin ones."""
    leet: int = 0
    """Tokens rewritten from digit/symbol spelling."""
    spaced: int = 0
    """Letter-by-letter spellings ("i.g.n.o.r.e", "i g n o r e") joined into words."""
    tokens: int = 0


# Typographic characters of ordinary model output and prose (curly quotes, dashes, ellipsis,
# no-break and thin spaces), with what NFKC makes of each. None is a look-alike letter, an
# invisible or a tag character, and none composes with a neighbour under NFKC, so a text whose
# only non-ASCII characters are these folds as the general path would fold it, without its three
# scans of the whole text (tags/invisibles, NFKC, look-alikes): a third of fold's time on an LLM
# answer. ``test_local_normalise`` holds the two paths equal.
_TYPOGRAPHIC_NFKC = {
    "\u2018": "\u2018", "\u2019": "\u2019", "\u201a": "\u201a", "\u201c": "\u201c", "\u201d": "\u201d",
    "\u201e": "\u201e", "\u2010": "\u2010", "\u2013": "\u2013", "\u2014": "\u2014", "\u2022": "\u2022",
    "\u00ab": "\u00ab", "\u00bb": "\u00bb", "\u00b7": "\u00b7", "\u00b0": "\u00b0", "\u00a9": "\u00a9",
    "\u2026": "...", "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2002": " ", "\u2003": " ",
}


def fold(text: str) -> Folded:
    """NFKC, lower-case, invisible/tag characters, look-alikes, leetspeak and spaced letters undone."""
    invisible = tags = confusables = 0
    if text.isascii():
        text = text.lower()
    else:
        typographic = _typographic_nfkc(text)
        if typographic is not None:
            text = typographic.lower()
        else:
            text, invisible, tags, confusables = _fold_characters(text)
    tokens = text.split()
    count = len(tokens)
    if "  " in text:
        # "i g n o r e  p r e v i o u s": a wider gap between spelled-out words ends a word.
        tokens = text.replace("  ", " \x00 ").split()
    leet, spaced = 0, 0
    out: list[str] = []
    run: list[str] = []  # consecutive single-letter tokens: "i g n o r e"
    for token in tokens:
        if len(token) == 1 and token.isalpha():
            run.append(token)
            continue
        if token == "\x00":
            if run:
                spaced += _flush(run, out)
            continue
        if run:
            spaced += _flush(run, out)
        if token.isalpha() or token.isdigit():
            out.append(token)
            continue
        folded, how = _fold_token(token)
        leet += how == "leet"
        spaced += how == "spaced"
        out.append(folded)
    if run:
        spaced += _flush(run, out)
    return Folded(" ".join(out), invisible, tags, confusables, leet, spaced, count)


def _fold_characters(text: str) -> tuple[str, int, int, int]:
    """The general path for non-ASCII text: tags and invisibles, NFKC, lower case, look-alikes.
    Returns the text and the invisible, tag and look-alike counts."""
    invisible = tags = 0
    hidden = _TAG_OR_INVISIBLE.findall(text)
    if hidden:
        tags = sum(1 for ch in hidden if ord(ch) >= 0xE0000)
        invisible = len(hidden) - tags
        text = text.translate(_TAGS).translate(_INVISIBLE)
    text = unicodedata.normalize("NFKC", text).lower()
    confusables = 0
    if not text.isascii():
        text, confusables = _fold_confusables(text)
    return text, invisible, tags, confusables


def _typographic_nfkc(text: str) -> str | None:
    """NFKC of ``text`` when its only non-ASCII characters are typographic ones, else None."""
    others = distinct_non_ascii(text)
    if others is None or not others.issubset(_TYPOGRAPHIC_NFKC):
        return None
    for ch in others:
        nfkc = _TYPOGRAPHIC_NFKC[ch]
        if nfkc != ch:
            text = text.replace(ch, nfkc)
    return text


def _fold_confusables(text: str) -> tuple[str, int]:
    hits = _NON_LATIN_CONFUSABLE.findall(text)
    if not hits:
        return text, 0
    latin = len(_LATIN.findall(text))
    if latin >= 2 * len(hits):  # mostly Latin text: the look-alikes are disguise
        words = sum(1 for w in text.split() if _NON_LATIN_CONFUSABLE.search(w))
        return text.translate(CONFUSABLES), words
    folded_words, count = [], 0
    for word in text.split(" "):  # keeps other whitespace inside the pieces; good enough here
        if _LATIN.search(word) and _NON_LATIN_CONFUSABLE.search(word):
            word = word.translate(CONFUSABLES)
            count += 1
        folded_words.append(word)
    return " ".join(folded_words), count


def _flush(run: list[str], out: list[str]) -> int:
    """Join a run of three or more single letters into one word; shorter runs stay as they are."""
    joined = len(run) >= 3
    out.append("".join(run)) if joined else out.extend(run)
    run.clear()
    return int(joined)


def _fold_token(token: str) -> tuple[str, str]:
    core = token.rstrip(_TRAILING_PUNCT) or token
    if core.isalpha():
        return token, ""
    tail = token[len(core):]
    if len(core) >= 5 and core[1] in _SEPARATORS and _alternates(core):
        return core[::2] + tail, "spaced"
    if not _LEETABLE.isdisjoint(core):
        letters = sum(map(str.isalpha, core))
        if letters >= 2 or (letters and len(core) >= 3):
            return core.translate(LEET) + tail, "leet"
    return token, ""


def _alternates(core: str) -> bool:
    """"i.g.n.o.r.e": letters at even positions, one repeated separator at odd ones."""
    sep = core[1]
    return len(core) % 2 == 1 and all(c == sep for c in core[1::2]) and all(c.isalnum() for c in core[::2])


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace as one space (a single C-level pass)."""
    return _WHITESPACE.sub(" ", text).strip()


# Combining diacritics (accents, macrons, strike-through and other overlays, "Zalgo" stacks);
# the marks of scripts whose vowels are written as marks (Devanagari, Arabic, Hebrew) are kept.
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


def without_marks(text: str) -> str:
    """``text`` with its combining diacritics removed ("ignōrē" -> "ignore", "i̸g̸n̸o̸r̸e̸" ->
    "ignore"): decomposed first, so precomposed letters lose their marks too, and recomposed
    after (Hangul syllables stay syllables). Every letter built with these marks loses them,
    whatever its script: "ñ" reads "n", Cyrillic "й" reads "и". Vowel signs of scripts that write
    vowels as marks (Devanagari, Arabic, Hebrew, Thai) are other characters and stay. ASCII text
    comes back as it is."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFD", text)))

