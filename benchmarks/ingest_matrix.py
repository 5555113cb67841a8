"""The ingest benchmark's cases and one case's run (see ``ingest.py`` for the method)."""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

import admin_latency  # the /healthz + /metrics prober, server_command, stop_server
import ingest  # free_port, wait_ready
from ingest_bodies import TRACES_PER_BODY, BodyTemplate, build_templates, parse_walk_rate
from ingest_load import LoadPlan, load_process, post_bodies
from ingest_sidecar import EVALUATES, MODES, Scrape, drain, scrape, tree_cpu_seconds, tree_peak_rss_mib, write_config

__all__ = ["Case", "add_arguments", "run"]

SERVER_CMD_ENV = "INGEST_BENCH_SERVER_CMD"


@dataclass(frozen=True)
class Case:
    mode: str  # a key of ingest_sidecar.MODES
    turn_kib: int
    conversations: int

    @property
    def name(self) -> str:
        return f"{self.mode}/{self.turn_kib}KiB/{self.conversations // 1000}k"


FULL = tuple(Case(m, k, 1_000) for m in MODES for k in (1, 16, 128)) + tuple(Case(m, 1, 100_000) for m in MODES)
HEADLINE = (Case("off", 16, 1_000), Case("defaults", 16, 1_000))


def parse_cases(text: str) -> tuple[Case, ...]:
    """``mode:turn_kib:conversations,…``, e.g. ``off:16:1000,defaults:128:1000``."""
    cases = []
    for item in text.split(","):
        mode, kib, convs = item.split(":")
        if mode not in MODES:
            raise argparse.ArgumentTypeError(f"--cases: mode {mode!r} is not one of {', '.join(MODES)}")
        cases.append(Case(mode, int(kib), int(convs)))
    return tuple(cases)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=10.0, help="load per case (default 10)")
    p.add_argument("--max-seconds", type=float, default=90.0,
                   help="a case whose pool is not covered in --seconds runs on until covered, at most this (default 90)")
    p.add_argument("--cover", type=float, default=1.05,
                   help="pools over 10k: send at least this many turns per conversation of the pool (default 1.05)")
    p.add_argument("--warmup-seconds", type=float, default=1.5, help="load before the measured window (default 1.5)")
    p.add_argument("--drain-seconds", type=float, default=60.0, help="wait at most this for the pipeline to drain")
    p.add_argument("--load-procs", type=int, default=2, help="load-generator processes (default 2)")
    p.add_argument("--connections", type=int, default=4, help="keep-alive connections per process (default 4)")
    p.add_argument("--anchor-seconds", type=float, default=1.5, help="CPU-seconds of parse+walk per case")
    p.add_argument("--bodies-mib", type=float, default=32.0, help="distinct body bytes per turn size (default 32)")
    p.add_argument("--cases", type=parse_cases, default=None, help="mode:turn_kib:conversations,… (default: all)")
    p.add_argument("--headline", action="store_true", help=f"only {', '.join(c.name for c in HEADLINE)}")
    p.add_argument("--repeat", type=int, default=1, help="run the cases this many times, interleaved")
    p.add_argument("--interval", type=float, default=0.25, help="admin probe period per endpoint, s (default 0.25)")
    p.add_argument("--probe-timeout", type=float, default=10.0, help="per-probe timeout, s")
    p.add_argument("--server-cmd", default=None, help=f"as in admin_latency.py (env {SERVER_CMD_ENV})")
    p.add_argument("--tree", default=None, help="serve from this checkout: cwd and PYTHONPATH = TREE")
    p.add_argument("--keep-tmp", action="store_true", help="keep each case's temp dir (config, store, log)")


def _launch(args: argparse.Namespace, config: Path, tmp: Path) -> tuple[list[str], dict[str, str], Path]:
    if args.tree:
        tree = Path(args.tree).resolve()
        return [sys.executable, "-m", "monitor.cli", "serve", "-c", str(config)], {"PYTHONPATH": str(tree)}, tree
    cmd, env = admin_latency.server_command(args.server_cmd or os.environ.get(SERVER_CMD_ENV), config)
    return cmd, env, tmp


def _templates(turn_kib: int, bodies_mib: float) -> list[BodyTemplate]:
    per_body = turn_kib * 1024 * TRACES_PER_BODY * 1.05
    return build_templates(turn_kib, max(4, min(40, int(bodies_mib * 1024 * 1024 / per_body))))


def _commit(tree: str | None) -> str | None:
    if not tree:
        return None
    out = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
    return out.stdout.strip() or None


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cases = HEADLINE if args.headline else (args.cases or FULL)
    templates = {k: _templates(k, args.bodies_mib) for k in sorted({c.turn_kib for c in cases})}
    report: dict[str, Any] = {
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_1m_start": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M:%S %z")},
        "argv": sys.argv, "tree": args.tree, "tree_commit": _commit(args.tree), "runs": []}
    for repeat in range(args.repeat):
        for case in cases:
            result = await run_case(case, templates[case.turn_kib], args)
            result["repeat"] = repeat + 1
            report["runs"].append(result)
            print(f"# {case.name} run {repeat + 1}: {result['ingest_spans_per_cpu_s']:,.0f} spans/CPU-s, "
                  f"anchor {result['anchor_spans_per_cpu_s']:,.0f}", file=sys.stderr, flush=True)
    return report


async def _load(case: Case, templates: list[BodyTemplate], http: int, args: argparse.Namespace, admin: int,
                before_go: Callable[[], Awaitable[None]]) -> tuple[list[dict[str, Any]], dict[str, Any], float]:
    """The measured load in ``--load-procs`` processes, probing the admin port meanwhile;
    ``before_go`` runs once the generators are up, right before they start."""
    procs = args.load_procs
    pool = case.conversations - case.conversations % procs
    # Enough turns that every conversation of the pool is sent one (and some twice), if time allows.
    min_ids = int(pool * args.cover) // procs if pool > 10_000 else 0
    ctx = mp.get_context("spawn")
    ready, go, out = [ctx.Event() for _ in range(procs)], ctx.Event(), ctx.Queue()
    plans = [LoadPlan(http, args.connections, args.seconds, pool, procs, i, args.max_seconds, min_ids)
             for i in range(procs)]
    loaders = [ctx.Process(target=load_process, args=(plan, templates, ready[i], go, out), daemon=True)
               for i, plan in enumerate(plans)]
    for p in loaders:
        p.start()
    loop = asyncio.get_running_loop()
    try:
        for e in ready:
            if not await loop.run_in_executor(None, e.wait, 60):
                raise RuntimeError("a load generator did not start within 60 s")
        await before_go()
        go.set()
        t0 = time.perf_counter()

        def collect() -> list[dict[str, Any]]:
            return [out.get(timeout=args.max_seconds + 60) for _ in loaders]

        done = loop.run_in_executor(None, collect)
        probes = await admin_latency.probe_phase(admin, None, args.interval, args.probe_timeout, until=done)
        return done.result(), probes, time.perf_counter() - t0
    finally:
        for p in loaders:
            p.join(5)
            if p.is_alive():
                p.terminate()


async def _warm_up(case: Case, templates: list[BodyTemplate], http: int, admin: int,
                   args: argparse.Namespace) -> float:
    """Load, then drain; again (3 rounds at most) until an evaluation has finished when the mode
    evaluates, so lazy model loading is not charged to the measured window."""
    evaluations = 0.0
    for _ in range(3):
        await post_bodies(LoadPlan(http, 2, args.warmup_seconds, case.conversations), templates)
        m, _, _ = await drain(admin, args.drain_seconds)
        evaluations = m.sum("rag_monitor_evaluations_total")
        if evaluations or not EVALUATES[case.mode]:
            break
    return evaluations


def _delta(m0: Scrape, m1: Scrape, name: str, **labels: str) -> float:
    return m1.sum(name, **labels) - m0.sum(name, **labels)


@dataclass(frozen=True)
class _Readings:
    """What one case's server run measured, before it is turned into figures."""

    m0: Scrape
    m1: Scrape
    cpu0: tuple[float, float]  # (serving process, process tree) at the start of the load
    cpu1: tuple[float, float]  # … after the drain
    cpu_load: float  # tree CPU-seconds during the load alone
    loads: list[dict[str, Any]]
    probes: dict[str, Any]
    load_wall: float
    drain_wall: float
    drained: bool
    rss: tuple[float, float]
    rss_after_warmup: float
    warmup_evaluations: float


async def _measure(case: Case, templates: list[BodyTemplate], args: argparse.Namespace,
                   proc: subprocess.Popen[bytes], http: int, admin: int) -> _Readings:
    warmup_evaluations = await _warm_up(case, templates, http, admin, args)
    rss_after_warmup = tree_peak_rss_mib(proc.pid)[1]
    start: dict[str, Any] = {}

    async def before_go() -> None:
        start["m0"], start["cpu0"] = await scrape(admin), tree_cpu_seconds(proc.pid)

    loads, probes, load_wall = await _load(case, templates, http, args, admin, before_go)
    cpu_load = tree_cpu_seconds(proc.pid)[1] - start["cpu0"][1]
    m1, drain_wall, drained = await drain(admin, args.drain_seconds)
    return _Readings(start["m0"], m1, start["cpu0"], tree_cpu_seconds(proc.pid), cpu_load, loads, probes, load_wall,
                     drain_wall, drained, tree_peak_rss_mib(proc.pid), rss_after_warmup, warmup_evaluations)


async def run_case(case: Case, templates: list[BodyTemplate], args: argparse.Namespace) -> dict[str, Any]:
    anchor = parse_walk_rate([t.body() for t in templates], args.anchor_seconds)
    tmp = Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    http, admin = ingest.free_port(), ingest.free_port()
    cmd, env, cwd = _launch(args, write_config(tmp, case.mode, http, admin), tmp)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_MONITOR_")}
    log_path = tmp / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env={**base_env, **env}, stdout=log, stderr=subprocess.STDOUT)
    rc = None
    try:
        try:
            await ingest.wait_ready(admin, proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; command {cmd}; log:\n{log_path.read_text()[-3000:]}") from None
        readings = await _measure(case, templates, args, proc, http, admin)
    finally:
        rc = admin_latency.stop_server(proc)
        server_log = log_path.read_text(errors="replace")
        if not args.keep_tmp and rc in (0, None):
            shutil.rmtree(tmp, ignore_errors=True)
    return {"case": asdict(case), "name": case.name, "server_cmd": [f"{k}={v}" for k, v in env.items()] + cmd,
            "cwd": str(cwd), "body_kib_mean": sum(t.size for t in templates) / len(templates) / 1024,
            "turn_text_bytes": sum(t.turn_text_bytes for t in templates) // len(templates),
            "anchor_spans_per_cpu_s": anchor, **_figures(case, args, readings, anchor),
            "loadavg_1m_after": os.getloadavg()[0], "server_exit_code": rc,
            "server_log_warnings": [line for line in server_log.splitlines()
                                    if " WARNING " in line or " ERROR " in line][:10]}


def _figures(case: Case, args: argparse.Namespace, r: _Readings, anchor: float) -> dict[str, Any]:
    spans = _delta(r.m0, r.m1, "rag_monitor_spans_received_total")
    cpu_own, cpu_tree = r.cpu1[0] - r.cpu0[0], r.cpu1[1] - r.cpu0[1]
    ids_sent = sum(s.get("ids_taken", 0) for s in r.loads)
    return {
        "ingest_spans_per_cpu_s": spans / cpu_tree if cpu_tree else float("nan"),
        "ingest_spans_per_cpu_s_serving_process": spans / cpu_own if cpu_own else float("nan"),
        "ratio_to_anchor": (spans / cpu_tree) / anchor if cpu_tree else float("nan"),
        "spans_received": spans, "spans_per_wall_s_during_load": spans / r.load_wall,
        "load_seconds": r.load_wall, "drain_seconds": r.drain_wall, "drained": r.drained,
        "sidecar_cpu_seconds": cpu_tree, "sidecar_cores_during_load": r.cpu_load / r.load_wall,
        "load_generators_cores": sum(s.get("cpu_seconds", 0.0) for s in r.loads) / r.load_wall,
        "requests": {k: sum(s.get(k, 0) for s in r.loads) for k in ("ok", "503", "other", "errors")},
        "loader_errors": [s["error"] for s in r.loads if "error" in s],
        "conversations_sent": min(ids_sent, case.conversations - case.conversations % args.load_procs),
        "turns_sent": ids_sent,
        "peak_rss_mib": r.rss[0], "peak_rss_mib_tree": r.rss[1], "peak_rss_mib_after_warmup": r.rss_after_warmup,
        "warmup_evaluations": r.warmup_evaluations,
        "pipeline": _pipeline(r.m0, r.m1),
        "healthz": r.probes["healthz"].summary(), "metrics": r.probes["metrics"].summary(),
    }


def _pipeline(m0: Scrape, m1: Scrape) -> dict[str, Any]:
    def by(name: str, label: str) -> dict[str, float]:
        before = m0.by(name, label)
        return {k: v - before.get(k, 0.0) for k, v in m1.by(name, label).items() if v - before.get(k, 0.0)}

    return {
        "turns_assembled": _delta(m0, m1, "rag_monitor_turns_assembled_total"),
        "traces_evicted": by("rag_monitor_traces_evicted_total", "reason"),
        "traces_without_turn": by("rag_monitor_traces_without_turn_total", "reason"),
        "spans_dropped": by("rag_monitor_spans_dropped_total", "reason"),
        "conversations_closed": by("rag_monitor_conversations_closed_total", "reason"),
        "sampler_cache_evicted": _delta(m0, m1, "rag_monitor_sampling_cache_evicted_total"),
        "open_conversations_end": m1.sum("rag_monitor_open_conversations"),
        "sampling_decisions": by("rag_monitor_sampling_decisions_total", "decision"),
        "evaluations": by("rag_monitor_evaluations_total", "outcome"),
        # Every evaluated turn gets one outcome per metric: the busiest metric counts the turns.
        "turns_evaluated": max(by("rag_monitor_evaluations_total", "metric").values(), default=0.0),
        "queue_dropped": by("rag_monitor_queue_dropped_total", "queue"),
        "requests_rejected": by("rag_monitor_requests_rejected_total", "reason"),
    }
