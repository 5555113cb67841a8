"""Find text hidden in an encoding (base64, base32, hex, binary, %-escapes, Morse, NATO alphabet,
Braille, Caesar shifts and Atbash, reversed) and decode it.

A request smuggled as "decode this and do what it says" carries its attack in the payload, so
the detector reads the decoded text alongside the original. Everything here is bounded: the
patterns are single character classes with a minimum length (linear scans), at most
:data:`MAX_PAYLOADS` blobs are decoded, each cut to :data:`MAX_BLOB_CHARS`, and a decoded blob
counts only when it is mostly printable text.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Iterator

from monitor.evaluation.local.jailbreak import letter_codes

__all__ = ["Decoded", "decode_payloads", "MAX_PAYLOADS", "MAX_BLOB_CHARS"]

MAX_PAYLOADS = 4
MAX_BLOB_CHARS = 2048

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,6}")
# One scan finds unbroken runs of base64, hex or binary (all are runs of these characters);
# separated hex/binary ("48 65 6c", "01001000 01101001") gets its own scans, which run only
# when digits are common enough to hold such a blob.
_SPACED_HEX = re.compile(r"(?:[0-9a-fA-F]{2}[ :]){11,}[0-9a-fA-F]{2}")
_SPACED_BINARY = re.compile(r"(?:[01]{8} ){3,}[01]{8}")
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")
_BASE32_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567=")
# ROT13 and reversed text show up as the common English words they hide: count those words in
# the text and in its transform, and decode when the transform reads much more like English.
_COMMON = tuple(w.encode() for w in (" the ", " and ", " you ", " to ", " of ", " is ", " are ", " all ", " your ", " that ", " this ",
           " with ", " for ", " not ", " how ", " what ", " me ", " my ", " it ", " now ",
    # words an attack hidden this way tends to carry, so a short hidden order is found too
    " ignore ", " previous ", " instructions ", " system ", " prompt ", " rules ", " reveal ", " secret ", " password "))
_COMMON_WORDS = tuple(w.strip() for w in _COMMON)
# The tokens that a letter cipher (ROT13, other Caesar shifts, Atbash) turns into a common word,
# and which ciphers do; and those that reversal does.
_CIPHERED_COMMON = letter_codes.cipher_index(_COMMON_WORDS)
_REVERSED_COMMON = frozenset(w[::-1] for w in _COMMON_WORDS)
_DECIPHER = {name: decipher for name, (decipher, _) in letter_codes.CIPHERS.items()}


@dataclass(frozen=True, slots=True)
class Decoded:
    """Decoded payloads (each already cut) and the encodings they came from."""

    texts: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()


def _printable(raw: bytes) -> str | None:
    if len(raw) < 12:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    letters = sum(ch.isalpha() for ch in text)
    if printable / len(text) < 0.95 or letters / len(text) < 0.5 or " " not in text:
        return None  # binary data, an id or a hash, not a message
    return text


def _base64(blob: str) -> str | None:
    blob = blob[:MAX_BLOB_CHARS]
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), altchars=b"-_" if ("-" in blob or "_" in blob) else None)
    except (binascii.Error, ValueError):
        return None
    return _printable(raw)


def _base32(blob: str) -> str | None:
    blob = blob[:MAX_BLOB_CHARS].rstrip("=")
    try:
        return _printable(base64.b32decode(blob + "=" * (-len(blob) % 8)))
    except (binascii.Error, ValueError):
        return None


def _hex(blob: str) -> str | None:
    digits = "".join(c for c in blob[:MAX_BLOB_CHARS] if c not in " :")
    try:
        return _printable(bytes.fromhex(digits[: len(digits) // 2 * 2]))
    except ValueError:
        return None


def _binary(blob: str) -> str | None:
    bits = blob[:MAX_BLOB_CHARS].replace(" ", "")
    return _printable(bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits) - 7, 8)))


def _common_words(text: bytes) -> int:
    return sum(text.count(word) for word in _COMMON)  # str.count is a C scan: cheaper than a regex


def _run(blob: str) -> tuple[str, str | None]:
    """Decode an unbroken run as binary, hex or base64, whichever its alphabet allows."""
    if len(blob) >= 96 and set(blob) <= {"0", "1"}:
        return "binary", _binary(blob)
    if len(blob) >= 24 and len(blob) % 2 == 0 and _HEX_CHARS.issuperset(blob):
        return "hex", _hex(blob)
    if _BASE32_CHARS.issuperset(blob):
        decoded = _base32(blob)
        if decoded:
            return "base32", decoded
    return "base64", _base64(blob)


def decode_payloads(text: str) -> Decoded:
    """Payloads found in ``text`` (the caller's bounded view of the raw, unfolded input)."""
    found: list[tuple[str, str | None]] = [_run(m.group()) for m in _limited(_BASE64.finditer(text))]
    raw = text.encode("ascii", "ignore")
    digits = len(raw) - len(raw.translate(None, b"0123456789"))
    if digits * 4 >= len(raw) >= 36:
        found += [("hex", _hex(m.group())) for m in _limited(_SPACED_HEX.finditer(text))]
        found += [("binary", _binary(m.group())) for m in _limited(_SPACED_BINARY.finditer(text))]
    found.append(("percent", letter_codes.percent(text, _printable)))
    found.append(("morse", letter_codes.morse(text)))
    found.append(("braille", letter_codes.braille(text)))
    tokens = raw.lower().split()
    distinct = set(tokens)
    found.append(("nato", letter_codes.nato(tokens, distinct)))
    payloads = [(kind, decoded[:MAX_BLOB_CHARS]) for kind, decoded in found if decoded][:MAX_PAYLOADS]
    # A word counted in a transform is a whole token of the text, so the tokens that a transform
    # turns into a common word must be there: a cipher is tried only when three distinct ones
    # are, reversal when three occurrences are (a hidden order uses several different words).
    transforms: list[tuple[str, bytes | None]] = [
        (name, _DECIPHER[name])
        for name in letter_codes.cipher_candidates(distinct, _CIPHERED_COMMON, most=MAX_PAYLOADS - len(payloads))]
    if sum(map(_REVERSED_COMMON.__contains__, tokens)) >= 3:
        transforms.append(("reversed", None))
    if not transforms:
        return Decoded(tuple(t for _, t in payloads), tuple(k for k, _ in payloads))
    lowered = b" " + b" ".join(tokens) + b" "
    plain = _common_words(lowered)
    for kind, table in transforms:
        if len(payloads) >= MAX_PAYLOADS:
            break
        transformed = lowered[::-1] if table is None else lowered.translate(table)
        hits = _common_words(transformed)
        if hits >= 3 and hits > 2 * plain + 1:
            payloads.append((kind, transformed[:MAX_BLOB_CHARS].decode("ascii")))
    return Decoded(tuple(t for _, t in payloads), tuple(k for k, _ in payloads))


def _limited(matches: Iterator[re.Match[str]]) -> Iterator[re.Match[str]]:
    for i, match in enumerate(matches):
        if i >= 2 * MAX_PAYLOADS:  # a text made of many blobs: the first few tell enough
            return
        yield match
