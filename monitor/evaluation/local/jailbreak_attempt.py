"""``local_jailbreak_attempt``: does the user turn look like an attempt to jailbreak the assistant?

A pattern detector (no LLM) over the question: instruction overrides ("ignore previous
instructions"), known persona templates (DAN and its relatives), "developer mode" style
switches, role-play escapes, prompt-leak requests, chat-template tokens smuggled into the text,
and obfuscation (base64 blobs, invisible characters, "decode this" hints).

Strong patterns flag on their own; weak ones (phrasings that also occur in ordinary requests,
such as "act as" or "hypothetically") flag only together with another match. The result is a
flag plus the names of the patterns that matched. :func:`mark_jailbreak_attempt` sets
``Turn.jailbreak_attempt`` so that judge results can be split by it (the seed's jailbreak
comparison, made online). The value is an attempt indicator about the user, not a defect of the
app, but it is reported as one so its rate shows up like every other rate.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

from monitor.evaluation.local.offload import run_cpu_bound
from monitor.evaluation.registry import BuildContext, MetricRegistry, MetricSpec
from monitor.evaluation.scoring import graded, skipped
from monitor.model import Score, Turn

__all__ = [
    "METRIC_ID",
    "PATTERNS",
    "JailbreakDetection",
    "detect_jailbreak_attempt",
    "mark_jailbreak_attempt",
    "JailbreakAttemptEvaluator",
    "register",
]

METRIC_ID = "local_jailbreak_attempt"
SCALE = (0.0, 1.0)


@dataclass(frozen=True, slots=True)
class Pattern:
    name: str
    regex: re.Pattern[str]
    strong: bool = True


def _p(name: str, regex: str, strong: bool = True) -> Pattern:
    return Pattern(name, re.compile(regex, re.IGNORECASE), strong)


_RULES = (
    r"(instructions?|rules|prompts?|directions|guidelines|directives|programming|constraints"
    r"|policies|restrictions)"
)
PATTERNS: tuple[Pattern, ...] = (
    _p(
        "ignore_instructions",
        r"\b(ignore|disregard|forget|override|bypass|skip|drop|abandon)\b.{0,25}"
        r"\b(all|any|every|previous|prior|above|earlier|preceding|initial|original|system|your)\b.{0,20}\b"
        + _RULES,
    ),
    _p(
        "new_instructions",
        r"\b(new|updated|real|true)\s+(system\s+)?(instructions|rules|directives)\s*(:|are|follow)"
        r"|\byour\s+new\s+(task|role|purpose|instructions)\b",
    ),
    _p("dan_template", r"\bdo anything now\b|(?-i:\bDAN\b)|\b(better|anti)-?dan\b|\bjailbr(oken|eak)\b"),
    _p(
        "persona_template",
        r"\b(STAN|DUDE|AIM|Mongo Tom)\b.{0,60}\b(mode|persona|character|stands for|always)\b"
        r"|\balways intelligent and machiavellian\b|\bevil (confidant|assistant|twin)\b|\bopposite mode\b",
    ),
    _p(
        "developer_mode",
        r"\b(developer|dev|god|sudo|admin|debug|unrestricted|unfiltered)\s+mode\s+(enabled|activated|output)\b"
        r"|\b(you are|you're|you will|act|simulate|pretend|behave)\b.{0,30}"
        r"\b(developer|god|sudo|jailbreak|unrestricted|unfiltered)\s+mode\b"
        r"|\b(enable|enter|activate|switch to)\s+(god|jailbreak|unrestricted|unfiltered|dan)\s+mode\b",
    ),
    # "developer mode" alone is also a phone setting: weak unless something else matches.
    _p("mode_switch", r"\b(developer|god|jailbreak|unrestricted|unfiltered)\s+mode\b", strong=False),
    _p(
        "no_restrictions",
        r"\b(without|no|free (of|from)|not bound by|unbound by|released from|liberated from)\s+(any\s+)?"
        r"(ethical\s+|moral\s+|content\s+)?"
        r"(restrictions|filters|limitations|censorship|guidelines|rules|morals|ethics|policies)\b",
    ),
    _p(
        "role_play_escape",
        r"\byou are no longer\b|\b(stay|remain) in character\b|\bbreak(ing)? character\b"
        r"|\bfrom now on,?\s+you (are|will|must)\b",
    ),
    _p(
        "prompt_leak",
        r"\b(reveal|show|print|repeat|output|display|leak|dump|tell me|what (is|are|was|were))\b.{0,20}"
        r"\b(your|the)\s+(full\s+|exact\s+|hidden\s+|initial\s+|original\s+|secret\s+)*"
        r"(system\s+prompt|system\s+message|initial\s+prompt|hidden\s+prompt|pre-?prompt|instructions you were given)\b"
        r"|\brepeat (the|all|everything)( words| text)? above\b",
    ),
    _p(
        "chat_template_tokens",
        r"<\|im_(start|end)\|>|\[/?INST\]|<</?SYS>>|<\|(system|user|assistant|endoftext)\|>"
        r"|^\s*#{2,}\s*(system|instruction)s?\b",
    ),
    _p(
        "obfuscation_hint",
        r"\b(base64|rot13|rot-13|hex[- ]?encoded|caesar cipher|morse code|leetspeak)\b.{0,40}"
        r"\b(decode|decoded|decrypt|translate|respond|answer|follow|execute)\b"
        r"|\b(decode|decrypt)\b.{0,30}\b(then|and)\s+(follow|execute|do|answer|obey)\b",
        strong=False,
    ),
    _p(
        "persona_request",
        r"\b(act|behave|respond|roleplay|role-play)\s+as\b|\bpretend (to be|you are|you're)\b|\bimagine you are\b",
        strong=False,
    ),
    _p(
        "hypothetical_framing",
        r"\bhypothetical(ly)?\b|\bfor (purely )?(educational|research|academic) purposes\b"
        r"|\bin a (fictional|fiction|made-up) (story|world|scenario)\b",
        strong=False,
    ),
)

_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad\u202a-\u202e\u2066-\u2069]")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


@dataclass(frozen=True, slots=True)
class JailbreakDetection:
    flagged: bool
    patterns: tuple[str, ...]


def _decoded_text(blob: str) -> str | None:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in raw)
    return raw.decode("ascii", "replace") if len(raw) >= 20 and printable / len(raw) > 0.9 else None


def _match(text: str) -> list[Pattern]:
    # NFKC folds full-width and other look-alike letters; invisible characters are removed so
    # "ig\u200bnore" still matches.
    normalised = " ".join(_INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).split())
    return [p for p in PATTERNS if p.regex.search(normalised) or p.regex.search(text)]


def _structural_matches(text: str) -> tuple[list[str], bool]:
    """Names of invisible-character and base64 findings, and whether one is strong."""
    found, strong = [], False
    if _INVISIBLE.search(text):
        found.append("invisible_characters")
    for blob in _BASE64_RUN.finditer(text):
        decoded = _decoded_text(blob.group())
        if decoded is None:
            continue
        # A text blob is an obfuscation hint; one that decodes to an attack is an attack.
        if any(p.strong for p in _match(decoded)):
            found.append("base64_payload")
            strong = True
            break
        if "base64_text" not in found:
            found.append("base64_text")
    return found, strong


def detect_jailbreak_attempt(text: str) -> JailbreakDetection:
    """Match ``text`` against :data:`PATTERNS`; flagged on a strong match or on two or more matches."""
    structural, strong_structural = _structural_matches(text)
    matched = _match(text)
    names = tuple([p.name for p in matched] + structural)
    strong = strong_structural or any(p.strong for p in matched)
    return JailbreakDetection(flagged=strong or len(names) >= 2, patterns=names)


def mark_jailbreak_attempt(turn: Turn) -> Turn:
    """``turn`` with ``jailbreak_attempt`` set from the detector (same object when unchanged)."""
    flagged = bool(turn.question) and detect_jailbreak_attempt(turn.question).flagged
    return turn if flagged == turn.jailbreak_attempt else dataclasses.replace(turn, jailbreak_attempt=flagged)


class JailbreakAttemptEvaluator:
    """Reports the detector's verdict on the question: 1 = attempt, with the matched patterns."""

    metric_ids = (METRIC_ID,)

    async def evaluate(self, turn: Turn) -> Sequence[Score]:
        """Run the detector (in an executor for long inputs)."""
        if not turn.question or not turn.question.strip():
            return [skipped(METRIC_ID, SCALE, "no question")]
        found = await run_cpu_bound(detect_jailbreak_attempt, turn.question, size=len(turn.question))
        label = "attempt" if found.flagged else "none"
        return [
            graded(METRIC_ID, float(found.flagged), SCALE, found.flagged, label=label, details={"patterns": list(found.patterns)})
        ]


def register(registry: MetricRegistry) -> None:
    """Add ``local_jailbreak_attempt`` to ``registry``."""

    def build(ctx: BuildContext) -> JailbreakAttemptEvaluator:
        return JailbreakAttemptEvaluator()

    registry.register(
        MetricSpec(METRIC_ID, "jailbreak-attempt patterns in the user turn (1 = attempt, no LLM)", "local", SCALE, "max", build=build)
    )
