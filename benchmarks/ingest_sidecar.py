"""The sidecar under benchmark, seen from outside: its config, its CPU and memory (the whole
process tree, so work moved to a worker process is still counted), its /metrics, and when its
pipeline has drained."""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["EVALUATES", "MODES", "Scrape", "drain", "scrape", "tree_cpu_seconds", "tree_peak_rss_mib", "write_config"]

# What differs between the configurations: nothing but evaluation. "defaults" is the embedded
# default config (sampling: every error or jailbreak attempt + 10 % of conversations by hash; the
# local tier; no judge since none is configured); "off" turns evaluation off and keeps the rest.
MODES: dict[str, dict[str, object]] = {"off": {"evaluation": {"metrics": []}}, "defaults": {}}
EVALUATES = {"off": False, "defaults": True}  # whether the warm-up must see an evaluation finish


def write_config(tmp: Path, mode: str, http: int, admin: int) -> Path:
    cfg = {
        "receivers": {"http": {"port": http}, "grpc": {"enabled": False}},
        "admin": {"port": admin},
        "exporters": {"store": {"path": str(tmp / "results.sqlite3")}},  # the store stays on, in the temp dir
        "shutdown_deadline_seconds": 5.0,
        "log_level": "WARNING",
        **MODES[mode],
    }
    path = tmp / "rag-monitor.yaml"
    path.write_text(json.dumps(cfg, indent=2))  # JSON is YAML
    return path


# --- process tree ---------------------------------------------------------------------------

def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                parents.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
            except (OSError, IndexError):
                continue  # exited meanwhile
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def tree_cpu_seconds(pid: int) -> tuple[float, float]:
    """(CPU-seconds of ``pid`` itself, of ``pid`` plus its children, live or reaped)."""
    tick = os.sysconf("SC_CLK_TCK")
    f = _stat(pid)
    own = (int(f[11]) + int(f[12])) / tick
    total = own + (int(f[13]) + int(f[14])) / tick
    for child in _descendants(pid):
        try:
            c = _stat(child)
        except OSError:
            continue
        total += (int(c[11]) + int(c[12])) / tick
    return own, total


def _hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def tree_peak_rss_mib(pid: int) -> tuple[float, float]:
    """(peak RSS of ``pid``, plus the peaks of its live children: an upper bound for the tree)."""
    own = _hwm_mib(pid)
    children = 0.0
    for child in _descendants(pid):
        try:
            children += _hwm_mib(child)
        except OSError:
            continue
    return own, own + children


# --- /metrics ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scrape:
    samples: tuple[tuple[str, tuple[tuple[str, str], ...], float], ...]

    def sum(self, name: str, **labels: str) -> float:
        return sum(v for n, ls, v in self.samples if n == name and all((k, x) in ls for k, x in labels.items()))

    def by(self, name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for n, ls, v in self.samples:
            if n == name:
                key = dict(ls).get(label, "")
                out[key] = out.get(key, 0.0) + v
        return out


async def scrape(admin: int, timeout: float = 30.0) -> Scrape:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s:
        async with s.get(f"http://127.0.0.1:{admin}/metrics") as r:
            text = await r.text()
    return Scrape(tuple((s.name, tuple(sorted(s.labels.items())), s.value)
                        for family in text_string_to_metric_families(text) for s in family.samples))


async def drain(admin: int, max_seconds: float) -> tuple[Scrape, float, bool]:
    """Wait until nothing is pending: no buffered trace, empty queues, and no turn assembled nor
    evaluation finished for 0.5 s. Returns the last scrape, the seconds waited, and whether it drained."""
    start = time.perf_counter()
    last: tuple[float, float] | None = None
    while True:
        m = await scrape(admin)
        progress = (m.sum("rag_monitor_turns_assembled_total"), m.sum("rag_monitor_evaluations_total"))
        idle = m.sum("rag_monitor_pending_traces") == 0 and m.sum("rag_monitor_queue_depth") == 0
        waited = time.perf_counter() - start
        if idle and progress == last:
            return m, waited, True
        if waited > max_seconds:
            return m, waited, False
        last = progress
        await asyncio.sleep(0.5)
