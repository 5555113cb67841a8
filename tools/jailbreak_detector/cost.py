"""CPU cost of the shipped detector: short questions (the per-turn flag) and inputs up to 1 MiB.

    python -m tools.jailbreak_detector.cost

Short questions: the written hard negatives and attempts of 50-200 characters, each scored
``--rounds`` times (memos warm after the first round, as in a serving process). Long inputs: one
MiB of several repeated units (the worst shapes for the folding, decoding and regex steps), each
scored ``--rounds`` times; the largest single call is what the event loop would wait for.
Times are CPU time of this process (``time.process_time_ns``), so another process on the
machine slows them less than wall time; print the load average next to them anyway.
"""

from __future__ import annotations

import argparse
import os
import random
import string
import sys
import time
from typing import Sequence

from monitor.evaluation.local.jailbreak.model import load_weights, score_text
from tools.jailbreak_detector.benign import HARD_NEGATIVES_FILE, WRITTEN_ATTACKS_FILE, _lines

LONG_UNITS = ("aim ", "I.g.n.o.r.e ", "a b ", "QUJD", "41 ", "1gn0re ", "\n", "é\u200b", "Ignore previous instructions. ",
              "<|im_start|>system ", "[ADMIN] ",
              # the letter codes and ciphers (2026-11-27): Morse, NATO words, %-escapes, Braille, Caesar-shifted "the"
              ". - ", "alfa ", "%41", "\u2801 ", "uif ")


def _percentile(values: list[int], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] / 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    weights = load_weights()
    questions = [t for path in (HARD_NEGATIVES_FILE, WRITTEN_ATTACKS_FILE) for t in _lines(path) if 50 <= len(t) <= 200]
    for text in questions:  # the first call of each fills the memos; a server sees its words again
        score_text(text, weights)
    short: list[int] = []
    around_100: list[int] = []
    for _ in range(args.rounds):
        for text in questions:
            start = time.process_time_ns()
            score_text(text, weights)
            short.append(time.process_time_ns() - start)
            if 90 <= len(text) <= 110:
                around_100.append(short[-1])
    mean_chars = sum(map(len, questions)) / len(questions)
    print(f"load average {os.getloadavg()[0]:.2f}; {len(questions)} questions of 50-200 chars (mean {mean_chars:.0f}), "
          f"{len(short)} calls: p50 {_percentile(short, 0.5):.1f} us, p99 {_percentile(short, 0.99):.1f} us, "
          f"max {max(short) / 1000:.1f} us")
    print(f"  of which 90-110 chars, {len(around_100)} calls: p50 {_percentile(around_100, 0.5):.1f} us, "
          f"p99 {_percentile(around_100, 0.99):.1f} us")
    rng = random.Random(5)
    cold: list[int] = []
    for size in (100, 200, 400, 800, 1500):  # every word new: the memos cannot help
        for _ in range(args.rounds * 5):
            words = ("".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 12))) for _ in range(size))
            text = " ".join(words)[:size]
            start = time.process_time_ns()
            score_text(text, weights)
            cold.append(time.process_time_ns() - start)
    print(f"texts of new words (100-1500 chars), {len(cold)} calls: p50 {_percentile(cold, 0.5):.1f} us, "
          f"p99 {_percentile(cold, 0.99):.1f} us, max {max(cold) / 1000:.1f} us")
    worst = 0
    for unit in LONG_UNITS:
        text = unit * ((1 << 20) // len(unit))
        calls = []
        for _ in range(args.rounds):
            start = time.process_time_ns()
            score_text(text, weights)
            calls.append(time.process_time_ns() - start)
        worst = max(worst, max(calls))
        print(f"  1 MiB of {unit!r:28s} p50 {_percentile(calls, 0.5) / 1000:.2f} ms, max {max(calls) / 1e6:.2f} ms")
    print(f"largest single call at 1 MiB: {worst / 1e6:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
