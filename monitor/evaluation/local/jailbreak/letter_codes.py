"""Text spelled in a letter code (Morse, NATO alphabet, Braille, %-escapes) or a letter cipher
(any Caesar shift, Atbash), read back as plain text.

Red-team tools hide a request this way so that no word of it appears in the clear; each decoder
here turns such a run back into letters so the detector can read what it asks. All scans are
linear: single character-class patterns whose element and separator classes are disjoint (no
backtracking), set look-ups per token, and a bounded output (:data:`MAX_OUTPUT`).
"""

from __future__ import annotations

import itertools
import re
from typing import Callable, Iterable
from urllib.parse import unquote_to_bytes

__all__ = ["MAX_OUTPUT", "MORSE_CODE", "NATO_ALPHABET", "BRAILLE_CELLS", "CIPHERS", "morse", "nato", "braille",
           "percent", "caesar_name", "cipher_index", "cipher_candidates"]

MAX_OUTPUT = 2048
# Coded text read per run: 1 KiB of Morse or %-escapes holds a request of 250-340 letters, more
# than an instruction needs; the rest of a longer run is not decoded.
_MAX_CODED = 1024

MORSE_CODE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g", "....": "h", "..": "i",
    ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".--.": "p", "--.-": "q", ".-.": "r",
    "...": "s", "-": "t", "..-": "u", "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z",
    "-----": "0", ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
    "--...": "7", "---..": "8", "----.": "9", ".-.-.-": ".", "--..--": ",", "..--..": "?", "-.-.--": "!",
}
# Dots and dashes as typed or typeset (middle dot, bullet, minus, en/em dash, underscore).
_MORSE_UNIFY = str.maketrans({"·": ".", "•": ".", "−": "-", "–": "-", "—": "-", "_": "-"})
# At least eight codes in a row: shorter runs are ellipses, rules and list dashes, not messages.
_MORSE_SIGNS = ".-·•−–—_"
_SIGN = f"[{re.escape(_MORSE_SIGNS)}]{{1,7}}"
_MORSE_RUN = re.compile(f"(?:{_SIGN}[ /|\n]+){{7,}}{_SIGN}")

NATO_ALPHABET = {
    "alfa": "a", "alpha": "a", "bravo": "b", "charlie": "c", "delta": "d", "echo": "e", "foxtrot": "f",
    "golf": "g", "hotel": "h", "india": "i", "juliet": "j", "juliett": "j", "kilo": "k", "lima": "l", "mike": "m",
    "november": "n", "oscar": "o", "papa": "p", "quebec": "q", "romeo": "r", "sierra": "s", "tango": "t",
    "uniform": "u", "victor": "v", "whiskey": "w", "whisky": "w", "x-ray": "x", "xray": "x", "yankee": "y", "zulu": "z",
}
_NATO_B = {word.encode(): letter for word, letter in NATO_ALPHABET.items()}
_NATO_WORDS = frozenset(_NATO_B) | frozenset(w + p for w in _NATO_B for p in (b",", b".", b";"))
_NATO_BREAKS = frozenset({b"/", b"|", b"(space)", b"space", b"stop", b"break"})
_NATO_STRIP = b".,;:()[]\"'"
_NATO_MIN_RUN = 6
_NATO_MIN_DISTINCT = 4  # a spelled message of six letters or more uses at least four of them

# Six-dot Braille letters (Unicode block U+2800, bit k = dot k+1); the blank cell is a space.
BRAILLE_CELLS = {chr(0x2800 + sum(1 << (int(d) - 1) for d in dots)): letter for letter, dots in {
    "a": "1", "b": "12", "c": "14", "d": "145", "e": "15", "f": "124", "g": "1245", "h": "125", "i": "24", "j": "245",
    "k": "13", "l": "123", "m": "134", "n": "1345", "o": "135", "p": "1234", "q": "12345", "r": "1235", "s": "234",
    "t": "2345", "u": "136", "v": "1236", "w": "2456", "x": "1346", "y": "13456", "z": "1356"}.items()}
_BRAILLE_RUN = re.compile("[\u2800-\u28ff][\u2800-\u28ff \n]{10,}")
# Runs tried per code: a decoy run first (a Markdown rule "|---|---|", %00%01...) must not hide the
# coded order after it.
_MAX_RUNS = 4
# A message uses several letters: "ssssssss" from a row of ellipses, "mmmmmmmm" from dashes are not.
_MIN_DISTINCT_LETTERS = 3

_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9+._~-]){12,}")

def morse(view: str) -> str | None:
    """The first long run of Morse code that reads as a message (letters split on spaces, words on
    ``/``, ``|``, new lines or wide gaps), decoded."""
    if sum(map(view.count, _MORSE_SIGNS)) < 16:
        return None
    return _first_message((m.group()[:_MAX_CODED] for m in _MORSE_RUN.finditer(view)), _read_morse)


def _read_morse(run: str) -> str | None:
    words = []
    for word in re.split(r"[/|\n]|\s{3,}", run.translate(_MORSE_UNIFY)):
        codes = word.split()
        if codes:
            words.append("".join(MORSE_CODE.get(code, "\ufffd") for code in codes))
    text = " ".join(words)
    known = sum(ch != "\ufffd" for ch in text)
    return text[:MAX_OUTPUT] if known >= 6 and known >= 0.9 * len(text.replace(" ", "")) and _reads(text) else None


def _first_message(runs: Iterable[str], read: Callable[[str], str | None]) -> str | None:
    """The first of at most :data:`_MAX_RUNS` candidate runs that ``read`` turns into a message."""
    for run in itertools.islice(runs, _MAX_RUNS):
        text = read(run)
        if text is not None:
            return text
    return None


def _reads(text: str) -> bool:
    return len({ch for ch in text if ch.isalpha()}) >= _MIN_DISTINCT_LETTERS


def nato(tokens: list[bytes], distinct: set[bytes]) -> str | None:
    """The longest run of NATO-alphabet words among ``tokens`` (the lower-cased ASCII words of
    the view; ``distinct`` is their set), read as their letters."""
    if len(_NATO_WORDS.intersection(distinct)) < _NATO_MIN_DISTINCT:  # C-level pre-check
        return None
    best: list[str] = []
    run: list[str] = []
    letters = 0
    for token in tokens[:_MAX_CODED]:
        word = token.strip(_NATO_STRIP)
        letter = _NATO_B.get(word)
        if letter is not None:
            run.append(letter)
            letters += 1
        elif word in _NATO_BREAKS and run:
            run.append(" ")
        else:
            if letters >= _NATO_MIN_RUN and len(run) > len(best):
                best = run
            run, letters = [], 0
    if letters >= _NATO_MIN_RUN and len(run) > len(best):
        best = run
    text = "".join(best).strip()[:MAX_OUTPUT]
    return text if _reads(text) else None


def braille(view: str) -> str | None:
    """The first run of Braille cells that reads as a message, as letters (contractions and
    numbers are not read)."""
    if view.isascii():
        return None
    return _first_message((m.group()[:MAX_OUTPUT] for m in _BRAILLE_RUN.finditer(view)), _read_braille)


def _read_braille(run: str) -> str | None:
    text = "".join(" " if ch in " \n\u2800" else BRAILLE_CELLS.get(ch, "") for ch in run)
    return text if sum(ch.isalpha() for ch in text) >= 8 and _reads(text) else None


def percent(view: str, printable: Callable[[bytes], str | None]) -> str | None:
    """The first run of mostly %-escaped bytes (``%49%67%6e...``) that decodes to text."""
    if view.count("%") < 8:
        return None
    runs = (m.group()[:_MAX_CODED] for m in _PERCENT_RUN.finditer(view))
    return _first_message(filter(_escaped, runs), lambda run: printable(unquote_to_bytes(run)))


def _escaped(run: str) -> bool:
    """Mostly escapes (every byte escaped), or words joined by escaped spaces and punctuation
    (``quote()`` leaves letters as they are): not a URL with an escape or two."""
    escapes = run.count("%")
    return escapes * 3 >= 0.6 * len(run) or (escapes >= 4 and "%20" in run)


_ASCII_LOWER = b"abcdefghijklmnopqrstuvwxyz"


def _rotation(shift: int) -> bytes:
    return _ASCII_LOWER[shift:] + _ASCII_LOWER[:shift]


def caesar_name(shift: int) -> str:
    """The :data:`CIPHERS` name of the Caesar shift ``shift`` (1-25)."""
    return "rot13" if shift == 13 else f"caesar{shift}"


# Every letter cipher a red-team tool applies by default, on lower-cased ASCII: the 25 Caesar
# shifts (ROT13 among them: :func:`caesar_name`) and Atbash (a<->z). Name -> (decipher, encipher)
# translation tables.
CIPHERS: dict[str, tuple[bytes, bytes]] = {
    caesar_name(k): (bytes.maketrans(_rotation(k), _ASCII_LOWER), bytes.maketrans(_ASCII_LOWER, _rotation(k)))
    for k in range(1, 26)
}
CIPHERS["atbash"] = (bytes.maketrans(_ASCII_LOWER[::-1], _ASCII_LOWER), bytes.maketrans(_ASCII_LOWER, _ASCII_LOWER[::-1]))


def cipher_index(words: tuple[bytes, ...]) -> dict[bytes, tuple[str, ...]]:
    """For each token that one of :data:`CIPHERS` deciphers into one of ``words``, those ciphers."""
    table: dict[bytes, list[str]] = {}
    for name, (_, encipher) in CIPHERS.items():
        for word in words:
            table.setdefault(word.translate(encipher), []).append(name)
    return {token: tuple(names) for token, names in table.items()}


def cipher_candidates(distinct: set[bytes], index: dict[bytes, tuple[str, ...]], least: int = 3,
                      most: int = 4) -> list[str]:
    """Ciphers under which at least ``least`` distinct tokens read as common words: the only ones
    worth deciphering (one dictionary look-up a token, however many ciphers there are). At most
    ``most`` of them, the most readable first: a text built so that every cipher qualifies would
    otherwise be deciphered 26 times."""
    hits: dict[str, int] = {}
    for names in filter(None, map(index.get, distinct)):
        for name in names:
            hits[name] = hits.get(name, 0) + 1
    ranked = sorted((name for name, n in hits.items() if n >= least), key=lambda name: (-hits[name], name))
    return ranked[:most]
