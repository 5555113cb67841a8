"""Replacing personal data in a turn by typed, numbered placeholders.

``jane@example.com`` becomes ``[EMAIL_1]``, a second address ``[EMAIL_2]``, and the first one again
``[EMAIL_1]`` — across every text of the turn (question, answer, documents, history, system prompt,
ground truth). The judge still sees *that* the answer gives the address the context holds, which
is what groundedness and relevance need, and token-F1 against a ground truth still matches. The
kind is in the placeholder so a rubric can tell a phone number from a card number.

Redaction is pure CPU on short texts: every detector is a compiled pattern run over the text, a
cheap pre-test skips detectors that cannot match (no digit, no ``@``), and the per-kind counts are
reported once per turn (``rag_monitor_redactions_total{kind}``).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import replace
from typing import Callable

from monitor.model import Document, Message, Turn
from monitor.redaction.config import RedactionConfig
from monitor.redaction.detectors import SEED_MARGIN, SEEDS, Detector, builtin_detectors, custom_detector
from monitor.telemetry import NullTelemetry, Telemetry, counter

__all__ = ["Redactor", "REDACTIONS"]

_KEY_NOISE = re.compile(r"[\s().\-/]")


REDACTIONS = counter(
    "rag_monitor_redactions_total",
    "Personal-data values replaced by placeholders before text left the process, by kind (email, phone, "
    "card_number, iban, ip_address, a national id, or a configured pattern's name).", "kind")


class _Placeholders:
    """Numbering shared by all texts of one turn, and what was replaced, by kind."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str, str], int] = {}
        self._per_kind: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

    def name(self, kind: str, value: str) -> str:
        key = (kind, _KEY_NOISE.sub("", value).lower())
        number = self._numbers.get(key)
        if number is None:
            self._per_kind[kind] += 1
            number = self._numbers[key] = self._per_kind[kind]
        self.counts[kind] += 1
        return f"[{kind.upper()}_{number}]"


class Redactor:
    """The configured detectors, applied to whole turns."""

    def __init__(self, config: RedactionConfig, telemetry: Telemetry | None = None) -> None:
        custom = tuple(custom_detector(p.name, p.regex, p.ignore_case) for p in config.patterns)
        self._detectors: tuple[Detector, ...] = custom + builtin_detectors(config.kinds, config.national_ids, config.phone_regions)
        self._telemetry = telemetry or NullTelemetry()

    def redact_turn(self, turn: Turn) -> Turn:
        """``turn`` with personal data replaced in every text field (the same object when
        nothing was found); counts are reported per kind."""
        names = _Placeholders()

        def text(value: str) -> str:
            return self._redact(value, names)

        def maybe(value: str | None) -> str | None:
            return None if value is None else self._redact(value, names)

        changed = replace(
            turn,
            question=text(turn.question),
            answer=text(turn.answer),
            documents=tuple(_redacted_document(d, maybe) for d in turn.documents),
            history=tuple(Message(m.role, text(m.content)) if m.content else m for m in turn.history),
            system_prompt=maybe(turn.system_prompt),
            ground_truth=maybe(turn.ground_truth),
            error=maybe(turn.error),
        )
        if not names.counts:
            return turn
        for kind, count in names.counts.items():
            self._telemetry.add(REDACTIONS, count, kind=kind)
        return changed

    def redact_text(self, value: str) -> str:
        """One text on its own (numbering starts at 1)."""
        names = _Placeholders()
        result = self._redact(value, names)
        for kind, count in names.counts.items():
            self._telemetry.add(REDACTIONS, count, kind=kind)
        return result

    def _redact(self, value: str, names: _Placeholders) -> str:
        spans = self._find(value)
        if not spans:
            return value
        parts: list[str] = []
        end = 0
        for start, stop, kind in spans:
            parts.append(value[end:start])
            parts.append(names.name(kind, value[start:stop]))
            end = stop
        parts.append(value[end:])
        return "".join(parts)

    def _find(self, value: str) -> list[tuple[int, int, str]]:
        """Non-overlapping (start, end, kind), sorted; earlier detectors claim text first."""
        windows = _windows(value)
        whole = [(0, len(value))]
        starts: list[int] = []
        spans: list[tuple[int, int, str]] = []
        for detector in self._detectors:
            if detector.needs is not None and detector.needs not in value:
                continue
            for pos, endpos in windows if detector.windowed else whole:
                # finditer(pos, endpos) still lets look-behinds see the text before the window.
                for match in detector.pattern.finditer(value, pos, endpos):
                    start, stop = match.span(detector.group)
                    if start == stop or _overlaps(starts, spans, start, stop):
                        continue
                    if not detector.check(match.group(detector.group)):
                        continue
                    index = bisect.bisect(starts, start)
                    starts.insert(index, start)
                    spans.insert(index, (start, stop, detector.kind))
        return spans


def _windows(value: str) -> list[tuple[int, int]]:
    """Merged stretches around the seeds of number-based kinds."""
    found = sorted((max(0, m.start() - SEED_MARGIN), min(len(value), m.end() + SEED_MARGIN))
                   for seed in SEEDS for m in seed.finditer(value))
    merged: list[tuple[int, int]] = []
    for start, stop in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _overlaps(starts: list[int], spans: list[tuple[int, int, str]], start: int, stop: int) -> bool:
    index = bisect.bisect(starts, start)
    if index > 0 and spans[index - 1][1] > start:
        return True
    return index < len(spans) and spans[index][0] < stop


def _redacted_document(doc: Document, maybe: Callable[[str | None], str | None]) -> Document:
    content, title = maybe(doc.content), maybe(doc.title)
    if content is doc.content and title is doc.title:
        return doc
    return replace(doc, content=content, title=title)
