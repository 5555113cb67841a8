"""How long the ``rag-monitor`` command takes before it answers: ``--help`` and each command's
``--help`` (what a user waits for while typing), ``validate`` on the embedded defaults, and a
whole ``eval`` of three rows on the local tier (no judge: the openai SDK is not even imported).

Each figure is the median wall time of N fresh processes of the installed console script (the
interpreter's own start included, as the user sees it). The target from issue 26: ``--help``
under 0.5 s, which holds because every command imports what it runs only when it runs.

    python benchmarks/cli_startup.py [--runs 15]

Recorded on the CI machine (2 cores shared with other jobs, Python 3.11, warm page cache),
2026-11-28, medians of 7-9 runs over three sessions (the spread is the shared machine):

    rag-monitor --help                      0.08-0.13 s   (was 0.4-1.0 s: every stage's config imported first)
    rag-monitor eval --help                 0.08-0.13 s
    rag-monitor validate                    0.48-0.75 s   (loads every config model and the metric registry)
    rag-monitor eval (3 rows, local tier)   0.47-0.50 s   (was 1.35 s: the judge and Content Safety
                                                           clients, and with them openai, imported always)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS: tuple[tuple[str, ...], ...] = (
    ("--help",),
    ("serve", "--help"),
    ("eval", "--help"),
    ("inspect", "--help"),
    ("validate",),
)


def _executable() -> list[str]:
    script = shutil.which("rag-monitor", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "monitor.cli"]


def median_seconds(args: tuple[str, ...], runs: int) -> float:
    """The median wall time of ``runs`` fresh ``rag-monitor ARGS`` processes."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([*_executable(), *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={"PATH": "/usr/bin:/bin"})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    for command in COMMANDS:
        print(f"rag-monitor {' '.join(command):<38} {median_seconds(command, args.runs):.2f} s")
    with tempfile.TemporaryDirectory() as scratch:
        rows = Path(scratch) / "rows.jsonl"
        rows.write_text('{"question": "q", "answer": "five days", "ground_truth": "five days"}\n' * 3)
        seconds = median_seconds(("eval", str(rows), "--metrics", "f1_score"), args.runs)
        print(f"rag-monitor {'eval (3 rows, local tier)':<38} {seconds:.2f} s")


if __name__ == "__main__":
    main()
