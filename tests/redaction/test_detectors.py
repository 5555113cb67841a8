"""Each kind is found with its usual spellings, and look-alikes that fail its check stay."""

from __future__ import annotations

import pytest

from monitor.redaction import RedactionConfig, Redactor
from monitor.redaction.config import DEFAULT_NATIONAL_IDS
from monitor.redaction.detectors import NATIONAL_IDS

ALL_IDS = RedactionConfig(national_ids=tuple(NATIONAL_IDS))


def redact(text: str, config: RedactionConfig | None = None) -> str:
    return Redactor(config or RedactionConfig()).redact_text(text)


@pytest.mark.parametrize("text, placeholder", [
    ("write to jane.doe+rag@mail.example.co.uk today", "[EMAIL_1]"),
    ("JANE_DOE@Example.ORG", "[EMAIL_1]"),
    ("call (415) 555-2671 now", "[PHONE_1]"),
    ("call 415-555-2671 now", "[PHONE_1]"),
    ("call 415.555.2671 now", "[PHONE_1]"),
    ("ring +44 20 7946 0958", "[PHONE_1]"),
    ("ring 0044 20 7946 0958", "[PHONE_1]"),
    ("Festnetz 030 1234567", "[PHONE_1]"),
    ("portable 06 12 34 56 78", "[PHONE_1]"),
    ("+33 6 12 34 56 78", "[PHONE_1]"),
    ("my phone: 4155552671", "[PHONE_1]"),
    ("card 4111 1111 1111 1111 expires", "[CARD_NUMBER_1]"),
    ("card 4111-1111-1111-1111 expires", "[CARD_NUMBER_1]"),
    ("card 5500005555555559", "[CARD_NUMBER_1]"),
    ("amex 3782 822463 10005", "[CARD_NUMBER_1]"),
    ("IBAN DE89 3704 0044 0532 0130 00, thanks", "[IBAN_1]"),
    ("iban gb82west12345698765432", "[IBAN_1]"),
    ("NO9386011117947", "[IBAN_1]"),
    ("from 192.168.1.20 at noon", "[IP_ADDRESS_1]"),
    ("host 10.0.0.1.", "[IP_ADDRESS_1]"),
    ("v6 2001:db8:85a3::8a2e:370:7334 ok", "[IP_ADDRESS_1]"),
    ("v6 fe80::1ff:fe23:4567:890a", "[IP_ADDRESS_1]"),
    ("SSN 123-45-6789", "[US_SSN_1]"),
    ("social security number: 123456789", "[US_SSN_1]"),
    ("DNI 12345678Z", "[ES_DNI_1]"),
    ("NIE X1234567L", "[ES_NIE_1]"),
    ("CF RSSMRA85T10A562S", "[IT_CODICE_FISCALE_1]"),
    ("CPF 390.533.447-05", "[BR_CPF_1]"),
])
def test_each_kind_is_found(text: str, placeholder: str) -> None:
    result = redact(text)
    assert placeholder in result, result
    prefix, _, suffix = result.partition(placeholder)
    assert text.startswith(prefix) and text.endswith(suffix)  # the whole value went, nothing else


@pytest.mark.parametrize("text", [
    "The tent costs $349.99 and weighs 2.5 kg; rainfly rated 3000 mm.",
    "Released 2021-11-03 at 10:45:30, model AE-2000, version 1.2.3, range 2021-2024.",
    "Meeting on 2024-11-03 10:00 in room 12.",
    "Card-like 4111 1111 1111 1112 fails the Luhn check.",
    "Order 1234 5678 9012 3456 is not a card either.",
    "IBAN-shaped DE89370400440532013001 has a wrong check digit.",
    "Not an IP: 999.1.1.1 or 1.2.3",
    "std::vector and a::b::c are code, 12:30 is a time.",
    "Postcode 75001, 12,345 units, ticket #98765.",
    "Email-ish: user at example dot com.",
])
def test_look_alikes_stay(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("name, sample", [
    ("ca_sin", "130 692 544"), ("gb_nhs", "943 476 5919"), ("fr_nir", "2 95 10 99 126 111 93"),
    ("de_idnr", "36 574 261 809"), ("nl_bsn", "111222333"), ("in_aadhaar", "2341 2341 2346"),
    ("pl_pesel", "44051401359"),
])
def test_opt_in_national_ids(name: str, sample: str) -> None:
    assert name not in DEFAULT_NATIONAL_IDS
    # Off by default (digit-only shapes look like any number); a phone-shaped one is still caught.
    assert f"[{name.upper()}_1]" not in redact(f"id {sample} on file")
    assert redact(f"id {sample} on file", ALL_IDS) == f"id [{name.upper()}_1] on file"


def test_ids_that_were_never_issued_are_not_labelled_as_ids() -> None:
    for text in ("SSN 000-12-3456", "SSN 666-12-3456", "SSN 123-00-4567"):
        assert "[US_SSN_1]" not in redact(text)


def test_a_card_number_is_not_half_redacted_as_a_phone_number() -> None:
    assert redact("pay 4111 1111 1111 1111 or call +1 202 555 0143") == "pay [CARD_NUMBER_1] or call [PHONE_1]"
