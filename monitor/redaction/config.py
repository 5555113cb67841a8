"""The ``redaction`` config section: what is replaced before text leaves the process.

Example (YAML)::

    redaction:
      enabled: true                 # the default
      kinds: [email, phone, card_number, iban, ip_address]
      national_ids: [us_ssn, es_dni, it_codice_fiscale]
      phone_regions: [US, GB, DE, FR]  # national formats recognised (with a country code: any)
      patterns:
        - {name: employee_id, regex: "EMP-\\d{6}"}
      keep_text: true               # false: store, JSONL, API and events get scores and ids only

Unknown keys, kinds and id names are errors that name them; a custom regex that does not compile
is an error naming its ``patterns[i].regex``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

import phonenumbers

from monitor.redaction.detectors import BUILTIN_KINDS, DEFAULT_PHONE_REGIONS, NATIONAL_IDS

__all__ = ["RedactionConfig", "PatternConfig", "DEFAULT_NATIONAL_IDS"]

_STRICT = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
# Formats distinctive enough (separators, check letters) to be on by default; the digit-only
# ids of other countries look like any other number and are opt-in.
DEFAULT_NATIONAL_IDS = ("us_ssn", "es_dni", "es_nie", "it_codice_fiscale", "br_cpf")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class PatternConfig(BaseModel):
    """A user-supplied pattern: every match is replaced by ``[NAME_n]``."""

    model_config = _STRICT

    name: str
    """Kind name (lowercase letters, digits, ``_``): the placeholder and the ``kind`` label."""
    regex: str
    """Python regular expression; the whole match is replaced (no look-behind needed)."""
    ignore_case: bool = False
    """Match case-insensitively."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("lowercase letters, digits and _ only, starting with a letter, at most 32")
        return value

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"does not compile: {exc}") from None
        if compiled.match(""):
            raise ValueError("matches the empty string")
        return value


class RedactionConfig(BaseModel):
    """Personal data replaced by typed placeholders before any text reaches the judge, the
    result store, the JSONL sink, the evaluation events or the API."""

    model_config = _STRICT

    enabled: bool = True
    """Redact at all. Off only when every output and the judge may see the raw conversation."""
    kinds: tuple[str, ...] = Field(default=BUILTIN_KINDS)
    """Built-in detectors to run: ``email``, ``phone``, ``card_number`` (Luhn-checked),
    ``iban`` (country format and check digits), ``ip_address`` (v4 and v6)."""
    national_ids: tuple[str, ...] = Field(default=DEFAULT_NATIONAL_IDS)
    """National identity numbers, each checked by its checksum (python-stdnum): any of
    ``us_ssn``, ``ca_sin``, ``gb_nhs``, ``es_dni``, ``es_nie``, ``fr_nir``, ``it_codice_fiscale``,
    ``de_idnr``, ``nl_bsn``, ``br_cpf``, ``in_aadhaar``, ``pl_pesel``."""
    phone_regions: tuple[str, ...] = Field(default=DEFAULT_PHONE_REGIONS)
    """Regions whose national phone formats (written without a country code) are recognised, as
    ISO 3166 codes; default US (with Canada and the rest of +1), GB, IE, DE, AT, CH, FR, BE, NL, BR,
    IN, AU. A number with a country code ("+81 3-1234-5678", "0081 …") is recognised whatever the
    list. More regions find more national numbers, and turn more ordinary numbers into phones:
    each region's lengths and layouts are checked with libphonenumber's rules. ES and IT are not
    in the default: their numbers have no trunk prefix and share their groups with ordinary
    numbers ("682 330 318 units")."""
    patterns: tuple[PatternConfig, ...] = ()
    """Your own patterns (customer numbers, internal ids…), run before the built-ins."""
    keep_text: bool = True
    """False: the store, the JSONL sink, the API and the evaluation events keep no text at all
    (question, answer, documents, history, judge reasons), only scores, ids and labels; the
    judge still gets the redacted text it needs, and the durable backlog is off."""

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _known(value, BUILTIN_KINDS, "kind")

    @field_validator("national_ids")
    @classmethod
    def _known_ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _known(value, tuple(NATIONAL_IDS), "national id")

    @field_validator("phone_regions")
    @classmethod
    def _known_regions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        regions = tuple(v.upper() for v in value)
        for region in regions:
            if region not in phonenumbers.SUPPORTED_REGIONS:
                raise ValueError(f"unknown phone region {region!r}: an ISO 3166 two-letter code libphonenumber knows "
                                 "(US, GB, DE, FR, ES, IT, JP...)")
        return _known(regions, regions, "phone region")

    @model_validator(mode="after")
    def _distinct_names(self) -> RedactionConfig:
        taken = set(BUILTIN_KINDS) | set(NATIONAL_IDS)
        for index, pattern in enumerate(self.patterns):
            if pattern.name in taken:
                raise ValueError(f"patterns[{index}].name: {pattern.name!r} is already a detector's name")
            taken.add(pattern.name)
        return self


def _known(value: tuple[str, ...], known: tuple[str, ...], what: str) -> tuple[str, ...]:
    for name in value:
        if name not in known:
            raise ValueError(f"unknown {what} {name!r}; known: {', '.join(known)}")
    if len(set(value)) != len(value):
        raise ValueError(f"a {what} is listed twice")
    return value
