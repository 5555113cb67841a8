"""Statistics harness benchmark: false alarms of A/A weeks and detection delays of regressions.

Runs the simulation of tests/regression/harness.py over more seeds than the tests and prints the
tables of benchmarks/README-regression.md and docs/regressions.md:

    .venv/bin/python -m benchmarks.regression_harness --seeds 20 --aa-seeds 10

(``--quick`` runs a few seeds only.) Pure CPU, deterministic for given seeds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Sequence

from tests.regression.harness import (
    RELEASE_FOR_MINUTES,
    TIME_FOR_MINUTES,
    DetectionResult,
    run_aa_week,
    run_release,
    run_shift,
)

RATES = (20.0, 60.0, 600.0)
DELTAS = (0.02, 0.05, 0.10)


def _quantile(values: Sequence[float | None], q: float) -> str:
    """Quantile with undetected runs counted as +inf (so a median of 'n/d' means < half found)."""
    ordered = sorted(float("inf") if v is None else v for v in values)
    if not ordered:
        return "-"
    value = ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return "n/d" if value == float("inf") else f"{value:.2f}"


def _detected(values: Sequence[float | None]) -> str:
    return f"{sum(v is not None for v in values)}/{len(values)}"


def aa_table(seeds: int, for_minutes: float, time_for_minutes: float) -> list[str]:
    lines = [
        "| evaluations/hour | simulated weeks | release alert episodes / week | time-based (defect rate) / week | time-based (score) / week | worst week (release, defect, score) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for rate in RATES:
        runs = [run_aa_week(rate, seed, for_minutes=for_minutes, time_for_minutes=time_for_minutes)
                for seed in range(seeds)]
        rel = [r.release_episodes for r in runs]
        tim = [r.time_episodes for r in runs]
        sco = [r.score_episodes for r in runs]
        lines.append(
            f"| {rate:.0f} | {seeds} | {statistics.mean(rel):.2f} | {statistics.mean(tim):.2f} "
            f"| {statistics.mean(sco):.2f} | {max(rel)}, {max(tim)}, {max(sco)} |"
        )
    return lines


def detection_table(seeds: int, for_minutes: float, time_for_minutes: float) -> list[str]:
    lines = [
        "| scenario | evaluations/hour | change | alert | detected | median delay (h) | p90 delay (h) | median candidate evaluations at alarm |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for rate in RATES:
        for delta in DELTAS:
            horizon = 24.0 if rate >= 60 else 48.0
            runs: list[DetectionResult] = [
                run_release(rate, delta, seed, horizon_hours=horizon, for_minutes=for_minutes,
                            time_for_minutes=time_for_minutes)
                for seed in range(seeds)
            ]
            rel = [r.release_delay_hours for r in runs]
            tim = [r.time_delay_hours for r in runs]
            counts = [r.candidate_evaluations_at_release_alarm for r in runs
                      if r.candidate_evaluations_at_release_alarm is not None]
            med_n = f"{statistics.median(counts):.0f}" if counts else "-"
            change = f"5 % → {5 + delta * 100:.0f} %"
            lines.append(f"| release (rolling update) | {rate:.0f} | {change} | release | {_detected(rel)} "
                         f"| {_quantile(rel, 0.5)} | {_quantile(rel, 0.9)} | {med_n} |")
            lines.append(f"| release (rolling update) | {rate:.0f} | {change} | time-based | {_detected(tim)} "
                         f"| {_quantile(tim, 0.5)} | {_quantile(tim, 0.9)} | |")
    for rate in (60.0, 600.0):
        runs = [run_release(rate, 0.05, seed, canary_share=0.1, horizon_hours=48.0,
                            for_minutes=for_minutes, time_for_minutes=time_for_minutes)
                for seed in range(seeds)]
        rel = [r.release_delay_hours for r in runs]
        counts = [r.candidate_evaluations_at_release_alarm for r in runs
                  if r.candidate_evaluations_at_release_alarm is not None]
        med_n = f"{statistics.median(counts):.0f}" if counts else "-"
        lines.append(f"| canary on 10 % | {rate:.0f} | 5 % → 10 % | release | {_detected(rel)} "
                     f"| {_quantile(rel, 0.5)} | {_quantile(rel, 0.9)} | {med_n} |")
    for rate in RATES:
        for delta in DELTAS:
            shifts = [run_shift(rate, delta, seed, horizon_hours=48.0, for_minutes=for_minutes,
                                time_for_minutes=time_for_minutes)[0]
                      for seed in range(seeds)]
            tim = [r.time_delay_hours for r in shifts]
            lines.append(f"| same version, rate shift | {rate:.0f} | 5 % → {5 + delta * 100:.0f} % "
                         f"| time-based | {_detected(tim)} | {_quantile(tim, 0.5)} | {_quantile(tim, 0.9)} | |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs per detection scenario")
    parser.add_argument("--aa-seeds", type=int, default=10, help="simulated A/A weeks per rate")
    parser.add_argument("--release-for-minutes", type=float, default=RELEASE_FOR_MINUTES,
                        help="for: of the release alert (lower > 0)")
    parser.add_argument("--time-for-minutes", type=float, default=TIME_FOR_MINUTES,
                        help="for: of the time-based alerts (active)")
    parser.add_argument("--quick", action="store_true", help="3 seeds, 2 A/A weeks")
    args = parser.parse_args(argv)
    seeds, aa_seeds = (3, 2) if args.quick else (args.seeds, args.aa_seeds)
    started = time.perf_counter()
    fors = (args.release_for_minutes, args.time_for_minutes)
    label = f"release alert for: {fors[0]:g}m, time-based for: {fors[1]:g}m"
    print(f"## A/A: firing episodes per simulated week ({label})\n")
    print("\n".join(aa_table(aa_seeds, *fors)))
    print(f"\n## Detection delay from the change to the alert firing ({label})\n")
    print("\n".join(detection_table(seeds, *fors)))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
