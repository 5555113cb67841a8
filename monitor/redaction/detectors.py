"""What counts as personal data: one detector per kind, a candidate pattern plus a check.

Patterns find candidates; checks keep only real ones, so numbers that merely look alike (an order
number, a date, a price) stay: card numbers must pass the Luhn check, IBANs their country's format
and check digits, national ids their checksum (all three from python-stdnum, which knows each
country's rules), IP addresses must parse. Emails and phone numbers have no checksum: they are
matched by shape, leaning towards recall (a redacted order number costs less than a leaked phone
number). Detectors run in a fixed priority order and a later one never touches text an earlier
one claimed, so a card number is not half-redacted as a phone number.

What this cannot catch (see the README): names, postal addresses and free-text identifiers
(no NER model is shipped, by design: nothing is downloaded at run time); phone numbers written as
one run of digits without a keyword such as "phone" or "call" nearby; numbers split across lines;
obfuscated emails ("jane at example dot com"); ids of countries not listed in ``NATIONAL_IDS``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Callable

from stdnum import iban as _iban
from stdnum import luhn as _luhn
from stdnum.br import cpf as _br_cpf
from stdnum.ca import sin as _ca_sin
from stdnum.de import idnr as _de_idnr
from stdnum.es import dni as _es_dni
from stdnum.es import nie as _es_nie
from stdnum.fr import nir as _fr_nir
from stdnum.gb import nhs as _gb_nhs
from stdnum.in_ import aadhaar as _in_aadhaar
from stdnum.it import codicefiscale as _it_cf
from stdnum.nl import bsn as _nl_bsn
from stdnum.pl import pesel as _pl_pesel
from stdnum.us import ssn as _us_ssn

__all__ = ["Detector", "SEEDS", "SEED_MARGIN", "BUILTIN_KINDS", "NATIONAL_IDS", "builtin_detectors", "custom_detector"]

_NOT_DIGIT = re.compile(r"\D")
_DATE_START = re.compile(r"\(?(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})(?!\d)")


# Every number-based kind contains one of these shapes: a digit followed by six or more digits
# and separators (phone, card, IBAN digits, ids, IPv4), the digit skeleton of an Italian tax
# code, or two colons at most four hex digits apart (IPv6). Scanning for them finds the few
# windows of a text worth running the number detectors on; a scan costs about as much as one
# detector's, so a dozen detectors cost about one scan plus a few short windows. (Two patterns,
# each starting with a fixed character class, and without nested repetition: in Python's
# backtracking engine that is several times faster than one alternation of all three shapes.)
SEEDS = (re.compile(r"\d(?:[\d\s().\-/+]{6,}|\d[A-Za-z]\d\d[A-Za-z]\d)"), re.compile(r":[0-9A-Fa-f]{0,4}:"))
# How far around a seed a match may start or end (keywords such as "social security number:",
# an IBAN's letters before its digits, the rest of an IPv6 address).
SEED_MARGIN = 40


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of personal data."""

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] = lambda value: True
    """Keeps a candidate (the text of ``group``) only when it is the real thing."""
    group: int = 0
    """The part of the match that is replaced (a keyword before it stays)."""
    windowed: bool = True
    """Runs only around :data:`SEEDS` matches (the number-based kinds)."""
    needs: str | None = None
    """Runs only on text containing this substring (a cheap pre-test)."""


def _digits(value: str) -> str:
    return _NOT_DIGIT.sub("", value)


def _card(value: str) -> bool:
    digits = _digits(value)
    return 13 <= len(digits) <= 19 and _luhn.is_valid(digits)


def _ip(value: str) -> bool:
    if value.count(":") < 2 and value.count(".") != 3:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _international_phone(value: str) -> bool:
    digits = _digits(value)
    digits = digits[2:] if value.startswith("00") else digits
    return 8 <= len(digits) <= 15  # E.164: at most 15 digits with the country code


def _national_phone(value: str) -> bool:
    # Nine to twelve digits covers national numbers with their trunk prefix (US 10, UK 10-11,
    # DE 10-12, FR 10, IN 10-11); fewer is a short code or a date, more a card or an account.
    return 9 <= len(_digits(value)) <= 12 and not _DATE_START.match(value)


def _checked(validate: Callable[[str], bool]) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return bool(validate(value))
        except Exception:  # noqa: BLE001 - a checker choking on a candidate means "not one"
            return False
    return check


_C = re.compile
_EMAIL = Detector("email", _C(r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}(?![\w-])"),
                  windowed=False, needs="@")
_IBAN = Detector("iban", _C(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?:[ ]?[A-Za-z0-9]{4}){2,7}(?:[ ]?[A-Za-z0-9]{1,4})?"
                           r"(?![A-Za-z0-9])"), _checked(lambda v: _iban.is_valid(v.upper())))
_CARD = Detector("card_number", _C(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"), _card)
_IPV4 = Detector("ip_address", _C(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)"), _ip)
_IPV6 = Detector("ip_address", _C(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])"), _ip)
_PHONE_INTERNATIONAL = Detector("phone", _C(r"(?<![\w+])(?:\+|00)\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){1,6}(?!\w)"),
                                _international_phone)
_PHONE_NATIONAL = Detector("phone", _C(r"(?<![\w+/.,-])\(?\d{2,5}\)?(?:[ .\-/]\(?\d{1,8}\)?){1,4}(?!\w|[.,/-]\d)"),
                           _national_phone)
_PHONE_KEYWORD = Detector("phone", _C(r"(?i:\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms)\b[^\d\n]{0,15})"
                                      r"(\+?\d{7,15})(?!\d)"), group=1)

BUILTIN_KINDS = ("email", "phone", "card_number", "iban", "ip_address")

# National ids: candidate shape + checksum. Digit-only shapes also match ordinary numbers, so the
# checksum is what keeps false positives at about one in ten (one in eleven for mod-11 schemes).
NATIONAL_IDS: dict[str, tuple[Detector, ...]] = {
    "us_ssn": (
        Detector("us_ssn", _C(r"(?<![\d-])\d{3}[- ]\d{2}[- ]\d{4}(?![\d-])"), _checked(_us_ssn.is_valid)),
        Detector("us_ssn", _C(r"(?i:\b(?:ssn|social security(?: number| no\.?)?)\W{0,3})(\d{9})(?!\d)"),
                 _checked(_us_ssn.is_valid), group=1),
    ),
    "ca_sin": (Detector("ca_sin", _C(r"(?<![\d-])\d{3}[- ]\d{3}[- ]\d{3}(?![\d-])"), _checked(_ca_sin.is_valid)),),
    "gb_nhs": (Detector("gb_nhs", _C(r"(?<![\d-])\d{3}[- ]?\d{3}[- ]?\d{4}(?![\d-])"), _checked(_gb_nhs.is_valid)),),
    "es_dni": (Detector("es_dni", _C(r"(?<![A-Za-z0-9])\d{8}-?[A-Za-z](?![A-Za-z0-9])"), _checked(_es_dni.is_valid)),),
    "es_nie": (Detector("es_nie", _C(r"(?<![A-Za-z0-9])[XYZxyz]-?\d{7}-?[A-Za-z](?![A-Za-z0-9])"),
                        _checked(_es_nie.is_valid)),),
    "fr_nir": (Detector("fr_nir", _C(r"(?<!\d)[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[ABab]) ?\d{3} ?\d{3} ?\d{2}(?!\d)"),
                        _checked(_fr_nir.is_valid)),),
    "it_codice_fiscale": (Detector("it_codice_fiscale", _C(
        r"(?<![A-Za-z0-9])[A-Za-z]{6}\d{2}[A-Za-z]\d{2}[A-Za-z]\d{3}[A-Za-z](?![A-Za-z0-9])"), _checked(_it_cf.is_valid)),),
    "de_idnr": (Detector("de_idnr", _C(r"(?<!\d)\d{2} ?\d{3} ?\d{3} ?\d{3}(?!\d)"), _checked(_de_idnr.is_valid)),),
    "nl_bsn": (Detector("nl_bsn", _C(r"(?<![\d.])\d{4}\.?\d{2}\.?\d{3}(?![\d.]\d)"), _checked(_nl_bsn.is_valid)),),
    "br_cpf": (Detector("br_cpf", _C(r"(?<!\d)\d{3}\.\d{3}\.\d{3}-\d{2}(?!\d)"), _checked(_br_cpf.is_valid)),),
    "in_aadhaar": (Detector("in_aadhaar", _C(r"(?<!\d)[2-9]\d{3} ?\d{4} ?\d{4}(?!\d)"), _checked(_in_aadhaar.is_valid)),),
    "pl_pesel": (Detector("pl_pesel", _C(r"(?<!\d)\d{11}(?!\d)"), _checked(_pl_pesel.is_valid)),),
}

# Priority among the built-ins: checksummed and distinctive kinds claim text before the shapes
# that would also match part of them (a card number before a phone number).
_ORDER_BEFORE_IDS: dict[str, tuple[Detector, ...]] = {"email": (_EMAIL,), "iban": (_IBAN,), "card_number": (_CARD,)}
_ORDER_AFTER_IDS: dict[str, tuple[Detector, ...]] = {"ip_address": (_IPV4, _IPV6), "phone": (_PHONE_INTERNATIONAL, _PHONE_KEYWORD, _PHONE_NATIONAL)}


def builtin_detectors(kinds: tuple[str, ...], national_ids: tuple[str, ...]) -> tuple[Detector, ...]:
    """The enabled built-in detectors, in priority order."""
    chosen: list[Detector] = []
    for kind, detectors in _ORDER_BEFORE_IDS.items():
        if kind in kinds:
            chosen += detectors
    for name in NATIONAL_IDS:
        if name in national_ids:
            chosen += NATIONAL_IDS[name]
    for kind, detectors in _ORDER_AFTER_IDS.items():
        if kind in kinds:
            chosen += detectors
    return tuple(chosen)


def custom_detector(name: str, regex: str, ignore_case: bool = False) -> Detector:
    """A user pattern: every match is replaced, no check, over the whole text."""
    return Detector(name, re.compile(regex, re.IGNORECASE if ignore_case else 0), windowed=False)
