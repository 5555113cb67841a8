"""The benign calibration set: ordinary customer traffic, generated from the project's templates.

    python -m tools.jailbreak_detector.calibration            # print counts by kind and language
    python -m tools.jailbreak_detector.calibration --dump     # one JSON line per turn

Turns are built from ``calibration_templates.py`` (written for rag-monitor, no dataset copied):
a template of a kind and language, its ``{slots}`` filled from the vocabularies, sometimes a
greeting before and a sign-off after. A fixed seed makes the set the same on every run. The set is
never used to train the weights; it is used to choose the operating points of the detector
(``operating_points.py``), each validated on a kind held out of the choice.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass

from tools.jailbreak_detector.calibration_templates import KINDS, VOCAB

__all__ = ["Turn", "PER_KIND", "SEED", "generate"]

SEED = 30_2026
PER_KIND = 130
_SLOT = re.compile(r"\{(\w+)\}")
_GREETINGS = {
    "en": ("", "", "Hi, ", "Hello, ", "Hey there, ", "Good morning, "),
    "de": ("", "Guten Tag, "), "fr": ("", "Bonsoir, "), "es": ("", "Buenas, "), "it": ("", "Salve, "),
    "pt": ("", "Bom dia, "), "nl": ("", "Goedemiddag, "), "pl": ("", "Witam, "), "sv": ("", "Hallå, "),
    "tr": ("", "İyi günler, "), "ja": ("", "こんにちは。"), "zh": ("", "您好，"), "id": ("", "Selamat pagi, "),
}
_SIGN_OFFS = {
    "en": ("", "", " Thanks!", " Thank you.", " Cheers, Sam", " Regards, Priya", " Much appreciated."),
    "de": ("", " Danke!", " Viele Grüße, Jonas"), "fr": ("", " Merci !", " Cordialement, Claire"),
    "es": ("", " ¡Gracias!", " Saludos, Lucía"), "it": ("", " Grazie!", " Cordiali saluti, Marco"),
    "pt": ("", " Obrigado!", " Abraço, Rita"), "nl": ("", " Bedankt!", " Groet, Daan"),
    "pl": ("", " Dziękuję!", " Pozdrawiam, Ania"), "sv": ("", " Tack!", " Hälsningar, Erik"),
    "tr": ("", " Teşekkürler!", " Saygılar, Elif"), "ja": ("", "よろしくお願いします。"), "zh": ("", "谢谢！"),
    "id": ("", " Terima kasih!", " Salam, Budi"),
}


@dataclass(frozen=True, slots=True)
class Turn:
    text: str
    kind: str
    language: str


def _fill(template: str, rng: random.Random) -> str:
    return _SLOT.sub(lambda m: rng.choice(VOCAB[m.group(1)]), template)


def _turn(kind: str, language: str, template: str, rng: random.Random) -> str:
    body = _fill(template, rng)
    if "\n" in body or not body[:1].isupper():  # pastes and lower-case openers stay as written
        return body + rng.choice(_SIGN_OFFS[language][:2])
    greeting = rng.choice(_GREETINGS[language])
    if greeting and greeting.endswith(", ") and language != "de" and body[1:2].islower():  # "Hi, can you..." reads naturally
        body = body[0].lower() + body[1:]
    return greeting + body + rng.choice(_SIGN_OFFS[language])


def generate(per_kind: int = PER_KIND, seed: int = SEED) -> list[Turn]:
    """Up to ``per_kind`` distinct turns of each kind (fewer when its templates run out)."""
    rng = random.Random(seed)
    out: list[Turn] = []
    for kind, by_language in KINDS.items():
        pool = [(lang, t) for lang, templates in by_language.items() for t in templates]
        seen: set[str] = set()
        for _ in range(per_kind * 20):
            if len(seen) >= per_kind:
                break
            language, template = pool[rng.randrange(len(pool))]
            text = _turn(kind, language, template, rng)
            if text not in seen:
                seen.add(text)
                out.append(Turn(text, kind, language))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", action="store_true", help="print the turns as JSON lines")
    args = parser.parse_args(argv)
    turns = generate()
    if args.dump:
        for t in turns:
            sys.stdout.write(json.dumps({"kind": t.kind, "language": t.language, "text": t.text}, ensure_ascii=False) + "\n")
        return 0
    print(f"{len(turns)} turns")
    print("by kind:", dict(Counter(t.kind for t in turns)))
    print("by language:", dict(Counter(t.language for t in turns)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
