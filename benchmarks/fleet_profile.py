"""In-process runs of the fleet benchmark (``fleet.py --profile``): where the fleet's CPU goes, how
many Redis round trips it makes and how long a first turn waits for the fleet's decision.

A run builds the case's config like ``fleet.py`` does, starts a ``monitor.app.Sidecar`` in this
process (its local-tier worker is still a child process), feeds it the same paced stream from a
sender process, warms up, then measures a window of ``--profile-seconds``:

* **profile** (``off`` and ``fleet``): cProfile on the event loop's thread during the window (wall
  clock; the loop's idle wait, ``epoll.poll``, is left out of every figure); the
  functions' own time is summed by module group (a C function's time goes to the group of its
  callers, in proportion), and reported per 1,000 spans received, so the two cases can be
  subtracted. cProfile slows Python code down about twofold: compare groups, not absolute CPU.
* **probe** (``fleet``, no cProfile): every ``FleetLink.run`` (one Redis round trip: a script or a
  pipeline) is counted and timed, and every turn the ``FleetDecider`` queues (a first turn of a
  conversation this replica has no decision for) is timed from ``submit`` to its delivery.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

__all__ = ["run"]


def _group(path: str) -> str:
    p = path.replace("\\", "/")
    for marker, name in (("/monitor/fleet/", "monitor/fleet"), ("/site-packages/redis/", "redis-py"),
                         ("/site-packages/psycopg", "psycopg"), ("/asyncio/", "asyncio (loop, tasks)"),
                         ("selectors.py", "asyncio (loop, tasks)"), ("/site-packages/aiohttp/", "aiohttp"),
                         ("/site-packages/multidict/", "aiohttp"), ("/site-packages/yarl/", "aiohttp"),
                         ("/site-packages/prometheus_client/", "prometheus_client"),
                         ("/site-packages/google/protobuf/", "protobuf")):
        if marker in p:
            return name
    for top in ("monitor/", "samplers/", "exporters/", "assembly/", "receivers/", "evaluators/", "redaction/"):
        i = p.rfind("/" + top)
        if i >= 0:
            rest = p[i + 1:].split("/")
            return "/".join(rest[:2]) if len(rest) > 2 else rest[0]
    if "/site-packages/" in p:
        return "other site-packages"
    if "/lib/python3" in p:
        return "stdlib (other)"
    return "other"


def _groups(stats: pstats.Stats) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """Own time by group (C functions attributed to their callers' groups) and the top functions."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    funcs: list[tuple[str, float]] = []
    for (file, line, name), (_, _, tt, _, callers) in raw.items():
        if file == "~" and name == "<method 'poll' of 'select.epoll' objects>":
            continue  # the loop waiting for work: idle, not CPU
        funcs.append((f"{_group(file) if file != '~' else 'C'}: {name} ({Path(file).name}:{line})", tt))
        if file != "~":
            out[_group(file)] = out.get(_group(file), 0.0) + tt
            continue
        total = sum(c[2] for c in callers.values()) or 0.0
        if not callers or total <= 0:
            out["C (no caller)"] = out.get("C (no caller)", 0.0) + tt
            continue
        for (cfile, _, _), c in callers.items():
            g = _group(cfile) if cfile != "~" else "C (no caller)"
            out[g] = out.get(g, 0.0) + tt * c[2] / total
    funcs.sort(key=lambda x: -x[1])
    return out, funcs


class _Probe:
    """Counts and times ``FleetLink.run`` and first-turn decisions (patched at class level)."""

    def __init__(self) -> None:
        self.round_trips: list[float] = []
        self.decisions: list[float] = []
        self.measuring = False
        self._undo: list[Callable[[], None]] = []

    def install(self) -> None:
        from monitor.fleet.decisions import FleetDecider  # noqa: PLC0415
        from monitor.fleet.link import FleetLink  # noqa: PLC0415
        from samplers.base import conversation_key  # noqa: PLC0415

        probe = self
        run, submit = FleetLink.run, FleetDecider.submit

        async def timed_run(link: Any, operation: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await run(link, operation)
            finally:
                if probe.measuring:
                    probe.round_trips.append(time.perf_counter() - t0)

        def timed_submit(decider: Any, turn: Any, deliver: Any) -> None:
            if not probe.measuring or decider._stage.cached(conversation_key(turn)) is not None:  # noqa: SLF001
                submit(decider, turn, deliver)
                return
            t0 = time.perf_counter()

            def delivered(t: Any, decision: Any) -> None:
                probe.decisions.append(time.perf_counter() - t0)
                deliver(t, decision)

            submit(decider, turn, delivered)

        FleetLink.run, FleetDecider.submit = timed_run, timed_submit  # type: ignore[method-assign]

        def undo() -> None:
            FleetLink.run, FleetDecider.submit = run, submit  # type: ignore[method-assign]

        self._undo.append(undo)

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()


def _quantiles(xs: list[float]) -> dict[str, float] | None:
    if not xs:
        return None
    xs = sorted(xs)

    def q(f: float) -> float:
        return xs[min(len(xs) - 1, int(f * len(xs)))] * 1000

    return {"n": len(xs), "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99), "max_ms": xs[-1] * 1000,
            "mean_ms": statistics.fmean(xs) * 1000}


async def in_process(case: str, args: argparse.Namespace, templates: list[Any], *, profile: bool,
                     probe: bool = False) -> dict[str, Any]:
    import fleet  # noqa: PLC0415
    import ingest  # noqa: PLC0415
    from ingest_sidecar import scrape  # noqa: PLC0415
    from monitor.app import Sidecar  # noqa: PLC0415
    from monitor.config import load_config  # noqa: PLC0415
    from tests.support.redis_server import RedisServer  # noqa: PLC0415

    tmp = Path(tempfile.mkdtemp(prefix="fleet-profile-"))
    redis = RedisServer(tmp / "redis") if case != "off" else None
    if redis is not None:
        await redis.start()
    http, admin = ingest.free_port(), ingest.free_port()
    path = fleet.write_case_config(tmp, case, http, admin, redis.url if redis else None, None)
    probes = _Probe()
    if probe:
        probes.install()
    sidecar = Sidecar(load_config(path))
    prof = cProfile.Profile()  # perf_counter: a CPU clock per call (thread_time) slowed the loop past the load
    try:
        await sidecar.start()
        sender = fleet.Sender(http, templates, args)
        await sender.start()
        try:
            await fleet._warm_up(admin, args)  # noqa: SLF001
            m0 = await scrape(admin)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            probes.measuring = True
            if profile:
                prof.enable()
            await asyncio.sleep(args.profile_seconds)
            if profile:
                prof.disable()
            probes.measuring = False
            cpu1, wall1 = time.process_time(), time.perf_counter()
            m1 = await scrape(admin)
        finally:
            await sender.stop()
    finally:
        await sidecar.shutdown()
        probes.remove()
        if redis is not None:
            await redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    spans = m1.sum("rag_monitor_spans_received_total") - m0.sum("rag_monitor_spans_received_total")
    turns = m1.sum("rag_monitor_turns_assembled_total") - m0.sum("rag_monitor_turns_assembled_total")
    firsts = m1.sum("rag_monitor_fleet_decisions_total") - m0.sum("rag_monitor_fleet_decisions_total")
    out: dict[str, Any] = {"case": case, "cprofile": profile, "window_seconds": wall1 - wall0, "spans": spans,
                           "turns": turns, "pending_traces_end": m1.sum("rag_monitor_pending_traces"),
                           "fleet_decisions": fleet._by(m0, m1, "rag_monitor_fleet_decisions_total", "source"),  # noqa: SLF001
                           "fleet_redis_errors": fleet._by(m0, m1, "rag_monitor_fleet_redis_errors_total", "cause"),  # noqa: SLF001
                           "process_cpu_per_1k_spans": (cpu1 - cpu0) / spans * 1000 if spans else None}
    if profile:
        groups, funcs = _groups(pstats.Stats(prof))
        out["own_time_s_by_group_per_1k_spans"] = {k: round(v / spans * 1000, 5) for k, v in
                                                    sorted(groups.items(), key=lambda kv: -kv[1]) if v > 0}
        out["profiled_total_s_per_1k_spans"] = sum(groups.values()) / spans * 1000 if spans else None
        fleetish = [(n, t) for n, t in funcs if n.startswith(("monitor/fleet", "redis-py"))
                    or "weight_gate" in n]
        out["top_functions"] = [(n, round(t / spans * 1000, 5)) for n, t in funcs[:15]]
        out["top_fleet_functions"] = [(n, round(t / spans * 1000, 5)) for n, t in fleetish[:15]]
    if probe:
        out["round_trips"] = len(probes.round_trips)
        out["round_trips_per_turn"] = len(probes.round_trips) / turns if turns else None
        out["round_trips_per_conversation"] = len(probes.round_trips) / firsts if firsts else None
        out["round_trip_latency"] = _quantiles(probes.round_trips)
        out["decision_latency"] = _quantiles(probes.decisions)
        out["first_turns"] = firsts
    return out


async def run(args: argparse.Namespace, templates: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for case in ("off", "fleet"):
        out[f"cprofile_{case}"] = await in_process(case, args, templates, profile=True)
    out["probe_fleet"] = await in_process("fleet", args, templates, profile=False, probe=True)
    a = out["cprofile_off"].get("own_time_s_by_group_per_1k_spans", {})
    b = out["cprofile_fleet"].get("own_time_s_by_group_per_1k_spans", {})
    out["cprofile_fleet_minus_off_per_1k_spans"] = {
        k: round(b.get(k, 0.0) - a.get(k, 0.0), 5)
        for k in sorted(set(a) | set(b), key=lambda k: -(b.get(k, 0.0) - a.get(k, 0.0)))}
    return out
