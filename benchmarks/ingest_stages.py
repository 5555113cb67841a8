"""Ingest's own stages in one process, against the parse+walk anchor, over the same bodies.

    .venv/bin/python benchmarks/ingest_stages.py                    # 1, 16, 128 KiB turns, 3 rounds
    .venv/bin/python benchmarks/ingest_stages.py --kib 16 --rounds 5 --seconds 2

``benchmarks/ingest.py`` measures the whole sidecar (HTTP, decode, assembly, redaction, the
evaluation intake, telemetry, the admin port). This one isolates what the receivers and the
assembler do, as the sidecar configures them (the assembly's attribute selection, the default
``AssemblyConfig``), with no HTTP and a downstream that only counts turns:

* **anchor**: ``ExportTraceServiceRequest.FromString`` + a walk of every attribute (``ingest_bodies``);
* **decode**: ``decode_traces`` with the selection (spans/CPU-s);
* **decode + assembly**: decode, ``Assembler.consume_spans``, then every trace built into a turn.

The three are measured round robin (``--rounds``), each for ``--seconds`` of CPU, so a change in
the machine's load hits them alike; every send has fresh trace ids (no span is "late").
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

BENCH = Path(__file__).resolve().parent
for _p in (str(BENCH.parent), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from ingest_bodies import build_templates, conversation_id, parse_walk, render  # noqa: E402

from monitor.assembly.assembler import Assembler  # noqa: E402
from monitor.assembly.config import AssemblyConfig  # noqa: E402
from monitor.assembly.turns import span_attributes_read  # noqa: E402
from monitor.telemetry import NullTelemetry  # noqa: E402
from monitor.model import Turn  # noqa: E402
from monitor.receivers.decode import PROTOBUF, decode_traces  # noqa: E402

TRACES_PER_BODY = 20


class _CountTurns:
    def __init__(self) -> None:
        self.turns = 0

    def consume_turn(self, turn: Turn) -> None:
        self.turns += 1


def _bodies(kib: float, n_templates: int) -> list[bytes]:
    """Bodies with distinct trace ids and conversation ids, enough for a few CPU-seconds."""
    templates = build_templates(kib, n_templates)
    per_body = templates[0].size
    copies = max(2, int(256 * 1024 * 1024 / per_body / n_templates))  # ~256 MiB of distinct bodies at most
    prefixes = (i.to_bytes(8, "big") for i in itertools.count(1))
    ids = (conversation_id(k) for k in itertools.count())
    return [render(t, [next(ids) for _ in range(TRACES_PER_BODY)], next(prefixes))
            for _ in range(min(copies, 400)) for t in templates]


def _rate(step: Callable[[bytes], int], bodies: list[bytes], seconds: float) -> float:
    """Spans per CPU-second of this process over ``bodies`` in order (wrapping around)."""
    spans, start, i = 0, time.process_time(), 0
    while time.process_time() - start < seconds:
        spans += step(bodies[i % len(bodies)])
        i += 1
    return spans / (time.process_time() - start)


def measure(kib: float, rounds: int, seconds: float) -> list[dict[str, float]]:
    config = AssemblyConfig()
    selection = span_attributes_read(config.mapping)
    bodies = _bodies(kib, 8)

    def decode(body: bytes) -> int:
        return len(decode_traces(body, PROTOBUF, None, config.max_attribute_chars, selection).records)

    sink = _CountTurns()
    position = itertools.count()
    assembler = Assembler(config, sink, NullTelemetry())

    def decode_and_assemble(body: bytes) -> int:
        # A trace id seen before is "late" and dropped: bodies repeat after a pass over the
        # list (``_rate`` starts each round at the first), so each pass gets a new assembler.
        nonlocal assembler
        if next(position) % len(bodies) == 0:
            assembler = Assembler(config, sink, NullTelemetry())
        records = decode_traces(body, PROTOBUF, None, config.max_attribute_chars, selection).records
        assembler.consume_spans(records)
        assembler.flush()
        return len(records)

    runs = []
    for r in range(rounds):
        anchor = _rate(parse_walk, bodies[:8], seconds)
        dec = _rate(decode, bodies, seconds)
        position = itertools.count()  # _rate starts at the first body
        turns_before = sink.turns
        both = _rate(decode_and_assemble, bodies, seconds)
        # Every trace became a turn: nothing was dropped as late, the rate counts real work.
        assert sink.turns - turns_before > 0
        runs.append({"turn_kib": kib, "round": r + 1, "anchor": anchor, "decode": dec, "decode_assembly": both,
                     "loadavg_1m": os.getloadavg()[0]})
        print(f"{kib:g} KiB round {r + 1}: anchor {anchor:,.0f}  decode {dec:,.0f} ({dec / anchor:.0%})  "
              f"decode+assembly {both:,.0f} ({both / anchor:.0%}) spans/CPU-s; load {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)
    return runs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kib", type=float, action="append", help="turn size in KiB (repeatable; default 1, 16, 128)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=1.5, help="CPU-seconds per stage per round")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    results = [r for k in (args.kib or [1, 16, 128]) for r in measure(k, args.rounds, args.seconds)]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print("| turn | round | anchor k/CPU-s | decode k/CPU-s | decode / anchor | decode + assembly k/CPU-s | "
          "decode + assembly / anchor | load 1m |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['turn_kib']:g} KiB | {r['round']:.0f} | {r['anchor'] / 1e3:.0f} | {r['decode'] / 1e3:.0f} | "
              f"{r['decode'] / r['anchor']:.0%} | {r['decode_assembly'] / 1e3:.1f} | "
              f"{r['decode_assembly'] / r['anchor']:.1%} | {r['loadavg_1m']:.1f} |")


if __name__ == "__main__":
    main()
