"""What counts as personal data: one detector per kind, a candidate pattern plus a check.

Patterns find candidates; checks keep only real ones, so numbers that merely look alike (an order
number, a date, a price) stay: card numbers must pass the Luhn check, IBANs their country's format
and check digits, national ids their checksum (all three from python-stdnum, which knows each
country's rules), IP addresses must parse. Phone numbers need a phone's shape, checked by
libphonenumber's rules (the ``phonenumbers`` package) on the candidates our own scan found (the
library never scans a whole text: it is slow on long ones): with a country code, a length that
country's numbers have; in a national format, a number of one of the configured regions
(``redaction.phone_regions``) written with its trunk prefix where the region has one, either in
an assigned range or laid out as the region lays its numbers out; two numbers separated by a
space ("question 15 81291676") are not one phone. Emails have no checksum: they are matched by
shape. Detectors run in a fixed priority order and a later one never touches text an earlier
one claimed, so a card number is not half-redacted as a phone number.

What this cannot catch (see the README): names, postal addresses and free-text identifiers
(no NER model is shipped, by design: nothing is downloaded at run time); phone numbers written as
one run of digits without a keyword such as "phone" or "call" nearby; national numbers of regions
not in ``phone_regions`` written without their country code; numbers split across lines;
obfuscated emails ("jane at example dot com"); ids of countries not listed in ``NATIONAL_IDS``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Callable

import phonenumbers
from phonenumbers import NumberParseException
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

__all__ = ["Detector", "SEEDS", "SEED_MARGIN", "BUILTIN_KINDS", "NATIONAL_IDS", "DEFAULT_PHONE_REGIONS", "builtin_detectors",
           "custom_detector", "phone_detectors"]

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
    # No issuer number starts with 0: "0044 20 7946 0410" is a phone with a 00 prefix, whatever Luhn says.
    return 13 <= len(digits) <= 19 and digits[0] != "0" and _luhn.is_valid(digits)


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
    if not 8 <= len(digits) <= 15:  # E.164: at most 15 digits with the country code
        return False
    # A country code that exists and a length its numbers can have (libphonenumber's per-country
    # lengths). Possible rather than valid: a written "+44 7700 900123" (a range kept for fiction)
    # is still someone's number in a text, and the country code already says "phone".
    try:
        return phonenumbers.is_possible_number(phonenumbers.parse("+" + digits))
    except NumberParseException:
        return False


def _national_phone_in(regions: tuple[str, ...]) -> Callable[[str], bool]:
    """The check of national-format candidates: a number of one of ``regions`` written the way
    that region writes it."""

    def check(value: str) -> bool:
        digits = _digits(value)
        # Nine to twelve digits covers national numbers with their trunk prefix (US 10, UK 10-11,
        # DE 10-12, FR 10, IN 10-11); fewer is a short code or a date, more a card or an account.
        if not 9 <= len(digits) <= 12 or _DATE_START.match(value):
            return False
        groups = _DIGIT_RUNS.findall(value)
        if len(groups) == 2 and _SPACED.search(value) and not (groups[0].startswith("0") or value.startswith("(")):
            return False  # "question 15 81291676": two numbers separated by a space, not one phone
        return any(_fits_region(value, digits, groups, region) for region in regions)

    return check


def _fits_region(value: str, digits: str, groups: list[str], region: str) -> bool:
    trunk = _TRUNK_PREFIX.get(region)
    if trunk is None:
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
        trunk = _TRUNK_PREFIX[region] = (metadata.national_prefix or "") if metadata else ""
    if trunk == "0" and not digits.startswith("0"):
        return False  # where numbers are written with a trunk "0", a national number starts with it
    if trunk == "1" and [len(g) for g in groups] not in _NANP_LAYOUTS:
        return False  # "120-684-634-69" is a serial, not (1) 206-846-3469
    try:
        number = phonenumbers.parse(value, region)
    except NumberParseException:
        return False
    if not phonenumbers.is_possible_number(number):
        return False
    if phonenumbers.is_valid_number(number):
        return True
    # A number outside the assigned ranges ("(555) 123-4567", "07700 900123") still counts when it
    # is written in the region's own layout: the same digit groups as libphonenumber formats it.
    formatted = [len(g) for g in _DIGIT_RUNS.findall(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL))]
    written = [len(g) for g in groups]
    return written == formatted or (trunk == "1" and groups[0] == "1" and written[1:] == formatted)


def _keyword_phone_in(regions: tuple[str, ...]) -> Callable[[str], bool]:
    """Digits after "phone", "call", "tel"...: the keyword says phone, the library says whether
    one of ``regions`` (or the country code) has numbers of that length."""

    def check(value: str) -> bool:
        if value.startswith("+"):
            return _international_phone(value)
        for region in regions:
            try:
                if phonenumbers.is_possible_number(phonenumbers.parse(value, region)):
                    return True
            except NumberParseException:
                continue
        return False

    return check


def _issuable_ssn(value: str) -> bool:
    digits = _digits(value)
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return len(digits) == 9 and area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


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
# Not glued to a letter ("1Z…" tracking ids) nor after a "+" (a phone's country code).
_CARD = Detector("card_number", _C(r"(?<![\w+-])(?:\d[ -]?){12,18}\d(?![\d-])"), _card)
_IPV4 = Detector("ip_address", _C(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)"), _ip)
_IPV6 = Detector("ip_address", _C(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])"), _ip)
_PHONE_INTERNATIONAL = Detector("phone", _C(r"(?<![\w+])(?:\+|00)\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){1,6}(?!\w)"),
                                _international_phone)
_PHONE_NATIONAL_PATTERN = _C(r"(?<![\w+/.,-])\(?\d{1,5}\)?(?:[ .\-/]\(?\d{1,8}\)?){1,4}(?!\w|[.,/-]\d)")
_PHONE_KEYWORD_PATTERN = _C(r"(?i:\b(?:phone|tel|telephone|mobile|cell|call|fax|whatsapp|sms)\b[^\d\n]{0,15})"
                            r"(\+?\d{7,15})(?!\d)")
_DIGIT_RUNS = _C(r"\d+")
_SPACED = _C(r"\d\s+\(?\d")
_TRUNK_PREFIX: dict[str, str] = {}
# Regions whose national formats (no country code) are recognised by default: the common
# languages of the project's users. A number with a country code ("+81 …", "0081 …") is
# recognised for every country whatever this list says. Cost: a candidate is parsed once per
# region that could hold it (~25 µs each), and candidates are few (SEEDS).
# Not by default: regions whose numbers are written without a trunk prefix and in groups that
# ordinary numbers also use (ES "682 330 318" reads as a count, IT accepts most 6-11 digit runs:
# in the benign-numbers corpus of tests/redaction they turned 7 % of texts into phones).
DEFAULT_PHONE_REGIONS = ("US", "GB", "IE", "DE", "AT", "CH", "FR", "BE", "NL", "BR", "IN", "AU")
# NANP numbers are written 3-3-4, with an optional leading 1 (or as one run).
_NANP_LAYOUTS = ([3, 3, 4], [1, 3, 3, 4], [3, 7], [1, 10], [10], [11])


def phone_detectors(regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS) -> tuple[Detector, ...]:
    """The phone detectors, in priority order: with a country code, after a keyword, national formats."""
    return (_PHONE_INTERNATIONAL, Detector("phone", _PHONE_KEYWORD_PATTERN, _keyword_phone_in(regions), group=1),
            Detector("phone", _PHONE_NATIONAL_PATTERN, _national_phone_in(regions)))

BUILTIN_KINDS = ("email", "phone", "card_number", "iban", "ip_address")

# National ids: candidate shape + checksum. Digit-only shapes also match ordinary numbers, so the
# checksum is what keeps false positives at about one in ten (one in eleven for mod-11 schemes).
NATIONAL_IDS: dict[str, tuple[Detector, ...]] = {
    "us_ssn": (
        # After a keyword first: there the number is an SSN if it could have been issued (stdnum's list
        # of publicised numbers, such as 078-05-1120, does not apply: a pasted one is still an SSN).
        Detector("us_ssn", _C(r"(?i:\b(?:ssn|social security(?: number| no\.?)?)\b[^\d\n]{0,12}?)(\d{3}[- ]?\d{2}[- ]?\d{4})(?![\d-])"),
                 _issuable_ssn, group=1),
        Detector("us_ssn", _C(r"(?<![\d-])\d{3}[- ]\d{2}[- ]\d{4}(?![\d-])"),
                 _checked(lambda v: _us_ssn.is_valid(_digits(v)))),
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
_ORDER_AFTER_IDS: dict[str, tuple[Detector, ...]] = {"ip_address": (_IPV4, _IPV6)}


def builtin_detectors(kinds: tuple[str, ...], national_ids: tuple[str, ...],
                      phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS) -> tuple[Detector, ...]:
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
    if "phone" in kinds:
        chosen += phone_detectors(phone_regions)
    return tuple(chosen)


def custom_detector(name: str, regex: str, ignore_case: bool = False) -> Detector:
    """A user pattern: every match is replaced, no check, over the whole text."""
    return Detector(name, re.compile(regex, re.IGNORECASE if ignore_case else 0), windowed=False)
