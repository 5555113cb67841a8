"""The demo's terminal view: one row per metric, redrawn in place on a terminal.

Columns: evaluations and defect rate with its 95% Wilson interval over the shortest rolling
window (what ``rag_monitor_defect_rate{window="5m"}`` shows), the mean score, then the defect
rate of the turns sent before and after the scripted regression, and the change between them;
the header says when the regression is (or was) injected. On a terminal the block is redrawn in
place with two ANSI sequences (no extra dependency for one table); when stdout is not a
terminal (CI, a pipe) each refresh is appended as plain lines. ASCII only: a CI log may not
take anything else. Writing is blocking I/O: callers run :meth:`TerminalView.show` in a thread.
"""

from __future__ import annotations

import math
import shutil
import threading
from dataclasses import dataclass
from typing import Mapping, Sequence, TextIO

from exporters.rolling import WindowStats
from monitor.demo.phases import PhaseStats
from monitor.demo.traffic import AFTER, BEFORE

__all__ = ["DemoSnapshot", "render_table", "TerminalView"]

_METRIC_WIDTH = 28
_HEAD = (f"{'metric':<{_METRIC_WIDTH}} {'n':>5}  {'defect rate [95% CI]':<24} {'mean':>6}  "
         f"{'before reg.':>14} {'after reg.':>14} {'change':>9}")


@dataclass(frozen=True, slots=True)
class DemoSnapshot:
    elapsed_seconds: float
    turns_sent: int
    turns_evaluated: int
    regression_at_seconds: float | None
    regression_active: bool
    window: str
    summary: Mapping[str, Mapping[str, WindowStats]]  # metric → window → stats
    phases: Mapping[str, Mapping[str, PhaseStats]]  # metric → phase → stats


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.1f}%"


def _phase(stats: PhaseStats | None) -> str:
    if stats is None or not stats.evaluations:
        return "-"
    return f"{_pct(stats.defect_rate)} n={stats.evaluations}"


def _change(before: PhaseStats | None, after: PhaseStats | None) -> str:
    if before is None or after is None or not before.evaluations or not after.evaluations:
        return ""
    return f"{100 * (after.defect_rate - before.defect_rate):+.1f}pt"


def _status(s: DemoSnapshot) -> str:
    if s.regression_at_seconds is None:
        return "no regression scripted"
    if s.regression_active:
        return f"REGRESSION since +{s.regression_at_seconds:.0f}s: the retriever returns wrong articles"
    return f"regression at +{s.regression_at_seconds:.0f}s (in {max(0.0, s.regression_at_seconds - s.elapsed_seconds):.0f}s)"


def render_table(s: DemoSnapshot) -> list[str]:
    """The table as lines of text."""
    lines = [f"rag-monitor demo  +{s.elapsed_seconds:.0f}s  turns sent {s.turns_sent}, evaluated "
             f"{s.turns_evaluated}  |  {_status(s)}", _HEAD]
    metrics = sorted(set(s.summary) | set(s.phases))
    if not metrics:
        lines.append("(no evaluation yet)")
    for metric in metrics:
        w = s.summary.get(metric, {}).get(s.window)
        phases = s.phases.get(metric, {})
        before, after = phases.get(BEFORE), phases.get(AFTER)
        if w is not None and w.evaluations:
            rate = f"{_pct(w.defect_rate)} [{_pct(w.lower)}, {_pct(w.upper)}]"
            n, mean = str(w.evaluations), ("-" if math.isnan(w.mean_score) else f"{w.mean_score:.3f}")
        else:
            rate, n, mean = "-", "0", "-"
        lines.append(f"{metric[:_METRIC_WIDTH]:<{_METRIC_WIDTH}} {n:>5}  {rate:<24} {mean:>6}  "
                     f"{_phase(before):>14} {_phase(after):>14} {_change(before, after):>9}")
    lines.append(f"(n, defect rate and mean over the {s.window} window; before/after: turns sent before/after the regression)")
    return lines


class TerminalView:
    """Writes the table: in place when ``live``, appended otherwise. Thread-safe."""

    def __init__(self, stream: TextIO, *, live: bool) -> None:
        self._stream = stream
        self._live = live
        self._height = 0  # lines of the block drawn last, to move back over
        self._lock = threading.Lock()

    def show(self, lines: Sequence[str]) -> None:
        """Draw the table (replacing the previous one on a terminal)."""
        with self._lock:
            out = []
            if self._live:
                # A wrapped line would make the block taller than the count used to move back.
                width = shutil.get_terminal_size().columns - 1
                lines = [line[:width] for line in lines]
                if self._height:
                    # Cursor up to the block's first line, then clear to the end of the screen.
                    out.append(f"\x1b[{self._height}F\x1b[J")
            out.extend(line + "\n" for line in lines)
            if not self._live:
                out.append("\n")
            self._height = len(lines)
            self._write("".join(out))

    def message(self, lines: Sequence[str]) -> None:
        """Print lines that stay (the next table is drawn below them)."""
        with self._lock:
            self._height = 0
            self._write("".join(line + "\n" for line in lines))

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()
