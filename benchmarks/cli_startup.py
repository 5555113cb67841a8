"""How long the ``rag-monitor`` command takes before it answers: ``--help`` and each command's
``--help`` (what a user waits for while typing), and ``validate`` on the embedded defaults.

Each figure is the median wall time of N fresh processes of the installed console script (the
interpreter's own start included, as the user sees it). The target from issue 26: ``--help``
under 0.5 s, which holds because every command imports what it runs only when it runs.

    python benchmarks/cli_startup.py [--runs 15]

Recorded on the CI machine (2 shared cores, Python 3.11, warm page cache), 2026-11-28:

    rag-monitor --help            0.09 s   (was 0.4-1.0 s: every stage's config imported first)
    rag-monitor eval --help       0.08 s
    rag-monitor validate          0.48 s   (loads and validates every config model and the registry)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
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
        subprocess.run([*_executable(), *args], check=True, stdout=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    for command in COMMANDS:
        print(f"rag-monitor {' '.join(command):<20} {median_seconds(command, args.runs):.2f} s")


if __name__ == "__main__":
    main()
