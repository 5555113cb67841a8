"""Admin latency under ingest load: /healthz and /metrics while OTLP/HTTP ingest is saturated.

    .venv/bin/python benchmarks/admin_latency.py                 # ~30 s: 20 s of load
    .venv/bin/python benchmarks/admin_latency.py --seconds 60 --json

The goal (issue): ``/healthz`` answers within 1 s and ``/metrics`` within 2 s at ANY ingest rate,
because kubelet's liveness probe and Prometheus' scrape time out and a busy sidecar must not look
dead nor lose its series.

1. ``rag-monitor serve`` runs as a subprocess on free loopback ports with a config written to a
   temp dir: result store in that dir, ``sampling: {policies: [{type: probabilistic, rate: 1.0}]}``
   (every turn goes through the local evaluation tier), no judge, gRPC off.
2. ``--load-procs`` load-generator PROCESSES each keep ``--connections`` keep-alive connections
   posting pre-built ``ExportTraceServiceRequest`` bodies (``ingest.build_bodies``: 100-span RAG
   requests of ~250 KB, plus ``--large-bodies`` of 1-4 MB) for ``--seconds``; every send carries
   fresh trace ids (``ingest.load``). Loopback only.
3. Meanwhile this process probes ``GET /healthz`` (a new connection per probe, like kubelet) and
   ``GET /metrics`` (one keep-alive connection, like Prometheus) every ``--interval`` and records
   each latency and any non-200 or timeout. A ticker on the same event loop records how late the
   prober itself wakes up (``scrape._lag``): if that is large, the client was starved, not the
   server. Spans accepted come from the sidecar's ``rag_monitor_spans_received_total``.
4. Prints p50 / p99 / max for both endpoints, failures, and spans/s (``--json``: one JSON document).

``--server-cmd`` (or env ``ADMIN_BENCH_SERVER_CMD``) starts another server build, e.g. an older
checkout: ``"PYTHONPATH=/tmp/admin-before /work/main/.venv/bin/python -m monitor.cli serve"``.
Leading ``NAME=value`` words are environment assignments; ``{config}`` is replaced by the config
path, or ``-c <config>`` is appended. The server runs with the temp dir as working directory, so
``python -m`` does not put this checkout in front of ``PYTHONPATH``.

Everything is bounded: server start ≤ 20 s, load ``--seconds`` (load generators still running
60 s after that are terminated), each probe ≤ ``--probe-timeout``, then SIGTERM to the server
(SIGKILL 15 s later).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import random
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(ROOT)]

import ingest  # noqa: E402  (build_bodies, load, free_port, wait_ready, proc_cpu_seconds)
from scrape import _lag  # noqa: E402  (loop-lag ticker: is the prober itself starved?)
from tests.support.otlp_payloads import rag_trace_spans, request  # noqa: E402

SPANS_RECEIVED = "rag_monitor_spans_received_total"
SERVER_CMD_ENV = "ADMIN_BENCH_SERVER_CMD"
GOAL_SECONDS = {"healthz": 1.0, "metrics": 2.0}
MiB = 1024 * 1024


# --- payloads ---------------------------------------------------------------------------------

def build_large_bodies(sizes_mib: list[float], seed: int = 7) -> list[tuple[bytes, bytes]]:
    """Bodies of about ``sizes_mib`` each, same shape and same shared-trace-id-prefix contract as
    ``ingest.build_bodies`` (so ``ingest.load`` refreshes their trace ids on every send): more
    traces per request, i.e. what an SDK batch exporter sends after a burst."""
    rng = random.Random(seed)
    bodies = []
    for target in sizes_mib:
        prefix = rng.randbytes(8)
        req = request([])
        spans_list = req.resource_spans[0].scope_spans[0].spans
        t = 0
        while req.ByteSize() < target * MiB:
            spans_list.extend(rag_trace_spans(rng, prefix + t.to_bytes(8, "big"), ingest.SPANS_PER_TRACE,
                                              time.time_ns(), conversation_id=f"c{rng.randrange(10**6)}"))
            t += 1
        bodies.append((prefix, req.SerializeToString()))
    return bodies


def span_count(body: bytes) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest.FromString(body)
    return sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)


# --- load generators (separate processes) -----------------------------------------------------

def _load_process(index: int, port: int, bodies: list[tuple[bytes, bytes]], connections: int, seconds: float,
                  ready: Any, go: Any, out: Any) -> None:
    """One load generator: its own interpreter and event loop, ``connections`` keep-alive
    connections (``ingest.load``), its own body order so large bodies are spread over time."""
    random.Random(index).shuffle(bodies)
    ready.set()
    if not go.wait(60):
        out.put({"index": index, "error": "never started"})
        return
    try:
        cpu0 = time.process_time()
        stats = asyncio.run(ingest.load(port, bodies, connections, seconds))
        stats.pop("spans", None)  # ingest.load counts 100 spans per body; ours vary, the server counts
        out.put({"index": index, **stats, "cpu_seconds": time.process_time() - cpu0})
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the run still has figures
        out.put({"index": index, "error": repr(exc)})


# --- probes -----------------------------------------------------------------------------------

@dataclass
class Probes:
    latencies: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)  # non-200 status or error name -> count
    body_bytes: int = 0  # of the last 200 answer
    started: list[float] = field(default_factory=list)  # unix time of each probe (for --series)

    def failure_count(self) -> int:
        return sum(self.statuses.values())

    def summary(self) -> dict[str, Any]:
        xs = sorted(self.latencies)
        if not xs:
            return {"count": 0}
        p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
        return {"count": len(xs), "p50_ms": statistics.median(xs) * 1e3, "p99_ms": p99 * 1e3,
                "max_ms": xs[-1] * 1e3, "failures": self.failure_count(), "failure_kinds": dict(self.statuses)}


def spans_received(text: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == SPANS_RECEIVED:
                total += sample.value
    return total


async def _probe_loop(url: str, interval: float, timeout: float, stop: asyncio.Event, probes: Probes, *,
                      keep_alive: bool, samples: list[tuple[float, float]] | None = None) -> None:
    """GET ``url`` every ``interval`` (a slow probe delays the next, never overlaps it)."""
    connector = aiohttp.TCPConnector(force_close=not keep_alive, limit=1)
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(connector=connector, timeout=client_timeout) as session:
        next_at = time.perf_counter()
        while not stop.is_set():
            start = time.perf_counter()
            try:
                async with session.get(url) as r:
                    body = await r.read()
                elapsed = time.perf_counter() - start
                if r.status != 200:
                    probes.statuses[str(r.status)] = probes.statuses.get(str(r.status), 0) + 1
                elif samples is not None:
                    samples.append((time.perf_counter(), spans_received(body.decode())))
                    probes.body_bytes = len(body)
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                elapsed = time.perf_counter() - start
                kind = "timeout" if isinstance(exc, asyncio.TimeoutError) else type(exc).__name__
                probes.statuses[kind] = probes.statuses.get(kind, 0) + 1
            probes.latencies.append(elapsed)
            probes.started.append(time.time() - elapsed)
            next_at += interval
            delay = next_at - time.perf_counter()
            if delay < 0:
                next_at = time.perf_counter()
            else:
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                except asyncio.TimeoutError:
                    pass


async def probe_phase(admin: int, seconds: float | None, interval: float, timeout: float,
                      until: asyncio.Future[Any] | None = None) -> dict[str, Any]:
    """Probe both endpoints for ``seconds``, or until ``until`` completes."""
    health, scrape_probes, lag = Probes(), Probes(), []
    samples: list[tuple[float, float]] = []
    stop = asyncio.Event()
    base = f"http://127.0.0.1:{admin}"
    tasks = [asyncio.create_task(_probe_loop(f"{base}/healthz", interval, timeout, stop, health, keep_alive=False)),
             asyncio.create_task(_probe_loop(f"{base}/metrics", interval, timeout, stop, scrape_probes,
                                             keep_alive=True, samples=samples)),
             asyncio.create_task(_lag(stop, lag, 0.01))]
    if until is not None:
        await until
    else:
        await asyncio.sleep(seconds or 0)
    stop.set()
    await asyncio.gather(*tasks)
    return {"healthz": health, "metrics": scrape_probes, "prober_lag": lag, "samples": samples,
            "metrics_body_bytes": scrape_probes.body_bytes}


# --- the server -------------------------------------------------------------------------------

def server_command(template: str | None, config_path: Path) -> tuple[list[str], dict[str, str]]:
    """The argv and the environment assignments (``NAME=value`` words in front) of the server."""
    env: dict[str, str] = {}
    if not template:
        return [sys.executable, "-m", "monitor.cli", "serve", "-c", str(config_path)], env
    words = shlex.split(template)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if any("{config}" in w for w in words):
        words = [w.replace("{config}", str(config_path)) for w in words]
    else:
        words += ["-c", str(config_path)]
    return words, env


def write_config(tmp: Path, http: int, admin: int) -> Path:
    cfg = {
        "receivers": {"http": {"port": http}, "grpc": {"enabled": False}},
        "admin": {"port": admin},
        # Every turn is sampled; no judge is configured, so the evaluators are the local tier
        # (f1_score, lexical groundedness, offensive language, jailbreak attempt).
        "sampling": {"policies": [{"type": "probabilistic", "rate": 1.0}]},
        "exporters": {"store": {"path": str(tmp / "results.sqlite3")}},
        "shutdown_deadline_seconds": 5.0,
        "log_level": "WARNING",
    }
    path = tmp / "rag-monitor.yaml"
    path.write_text(json.dumps(cfg, indent=2))  # JSON is YAML
    return path


def stop_server(proc: subprocess.Popen[bytes]) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


# --- the run ----------------------------------------------------------------------------------

async def run(args: argparse.Namespace) -> dict[str, Any]:
    loadavg_before = os.getloadavg()[0]  # other work on the machine skews everything: recorded
    small = ingest.build_bodies(args.bodies)
    large = build_large_bodies([1.0 + 3.0 * i / max(1, args.large_bodies - 1) for i in range(args.large_bodies)])
    bodies = small + large
    spans_per_body = [span_count(b) for _, b in bodies]
    tmp = Path(tempfile.mkdtemp(prefix="admin-latency-"))
    http, admin = ingest.free_port(), ingest.free_port()
    config_path = write_config(tmp, http, admin)
    cmd, env = server_command(args.server_cmd or os.environ.get(SERVER_CMD_ENV), config_path)
    log_path = tmp / "server.log"
    ctx = mp.get_context("spawn")
    loaders: list[Any] = []
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=tmp, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    try:
        try:
            await ingest.wait_ready(admin, proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; command {cmd}; log:\n{log_path.read_text()[-3000:]}") from None
        idle = await probe_phase(admin, args.idle_seconds, args.interval, args.probe_timeout)

        ready = [ctx.Event() for _ in range(args.load_procs)]
        go, out = ctx.Event(), ctx.Queue()
        loaders = [ctx.Process(target=_load_process, name=f"loadgen-{i}", daemon=True,
                               args=(i, http, bodies, args.connections, args.seconds, ready[i], go, out))
                   for i in range(args.load_procs)]
        for p in loaders:
            p.start()
        loop = asyncio.get_running_loop()
        for e in ready:
            if not await loop.run_in_executor(None, e.wait, 60):
                raise RuntimeError("a load generator did not start within 60 s")
        m0 = await asyncio.wait_for(ingest.metrics(admin), 30)
        cpu0 = ingest.proc_cpu_seconds(proc.pid)
        go.set()
        t0 = time.perf_counter()

        def join_loaders() -> list[dict[str, Any]]:
            results = []
            deadline = time.monotonic() + args.seconds + 60
            for _ in loaders:
                try:
                    results.append(out.get(timeout=max(0.1, deadline - time.monotonic())))
                except Exception:  # noqa: BLE001 - queue.Empty: a generator hung; it is killed below
                    break
            return results

        done = loop.run_in_executor(None, join_loaders)
        under_load = await probe_phase(admin, None, args.interval, args.probe_timeout, until=done)
        wall = time.perf_counter() - t0
        cpu = ingest.proc_cpu_seconds(proc.pid) - cpu0
        load_stats = done.result()
        m1 = await asyncio.wait_for(ingest.metrics(admin), 30)
        for p in loaders:
            p.join(5)
        rss = ingest.proc_peak_rss_mib(proc.pid)
    finally:
        for p in loaders:
            if p.is_alive():
                p.terminate()
        rc = stop_server(proc)
        server_log = log_path.read_text(errors="replace")
        if not args.keep_tmp and rc in (0, None):
            shutil.rmtree(tmp, ignore_errors=True)

    samples = under_load["samples"]
    # Spans the sidecar counted between just before the start signal and just after the last
    # load generator finished, per wall second of load.
    ingest_rate = (ingest.total(m1, SPANS_RECEIVED) - ingest.total(m0, SPANS_RECEIVED)) / wall
    # The highest rate between two scrapes at least 1 s apart (ingest is bursty with 4 MiB bodies).
    peak = 0.0
    j = 0
    for t, s in samples:
        while j + 1 < len(samples) and t - samples[j + 1][0] >= 1.0:
            j += 1
        if t - samples[j][0] >= 1.0:
            peak = max(peak, (s - samples[j][1]) / (t - samples[j][0]))
    requests_ok = sum(s.get("ok", 0) for s in load_stats)
    lag = under_load["prober_lag"]
    result = {
        "server_cmd": [f"{k}={v}" for k, v in env.items()] + cmd,
        "load": {"seconds": args.seconds, "wall_seconds": wall, "load_procs": args.load_procs,
                 "connections_per_proc": args.connections,
                 "body_kib": {"small_mean": sum(len(b) for _, b in small) / max(1, len(small)) / 1024,
                              "large": [round(len(b) / 1024) for _, b in large]},
                 "spans_per_body": {"small_mean": statistics.mean(spans_per_body[:len(small)]) if small else 0,
                                    "large": spans_per_body[len(small):]},
                 "requests_ok": requests_ok, "requests_503": sum(s.get("503", 0) for s in load_stats),
                 "requests_other": sum(s.get("other", 0) for s in load_stats),
                 "loader_errors": [s["error"] for s in load_stats if "error" in s],
                 "spans_per_s": ingest_rate, "spans_per_s_peak_1s": peak,
                 "server_cpu_cores": cpu / wall if wall else float("nan"), "server_peak_rss_mib": rss,
                 "load_generators_cpu_cores": sum(s.get("cpu_seconds", 0.0) for s in load_stats) / wall},
        "pipeline": {name: ingest.total(m1, prefix) - ingest.total(m0, prefix) for name, prefix in (
            ("spans_received", SPANS_RECEIVED), ("spans_dropped", "rag_monitor_spans_dropped_total"),
            ("turns_assembled", "rag_monitor_turns_assembled_total"),
            ("evaluations", "rag_monitor_evaluations_total"),
            ("queue_dropped", "rag_monitor_queue_dropped_total"),
            ("traces_evicted", "rag_monitor_traces_evicted_total"))},
        "pipeline_series": {k: v - m0.get(k, 0.0) for k, v in m1.items() if v != m0.get(k, 0.0) and any(
            k.startswith(f"rag_monitor_{n}") for n in ("turns", "evaluations_total", "queue", "traces", "spans",
                                                       "backlog", "sampling_decisions", "requests_rejected"))},
        "metrics_body_bytes": under_load["metrics_body_bytes"],
        "healthz": under_load["healthz"].summary(),
        "metrics": under_load["metrics"].summary(),
        "idle": {"healthz": idle["healthz"].summary(), "metrics": idle["metrics"].summary()},
        "prober_loop_lag_ms": {"p50": statistics.median(lag) * 1e3 if lag else None,
                               "p99": sorted(lag)[int(len(lag) * 0.99)] * 1e3 if lag else None,
                               "max": max(lag) * 1e3 if lag else None},
        "server_exit_code": rc,
        "series": {"spans_received": [(round(t - t0, 2), v) for t, v in samples],
                   **{name: [(round(u, 3), round(x * 1e3, 1)) for u, x in zip(under_load[name].started,
                                                                               under_load[name].latencies)]
                      for name in ("healthz", "metrics")}} if args.series else None,
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_1m_before": loadavg_before},
    }
    result["server_log_warnings"] = [line for line in server_log.splitlines()
                                     if " WARNING " in line or " ERROR " in line][:20]
    if rc not in (0, None):
        result["server_log_tail"] = f"{server_log[-2000:]}\n(kept in {tmp})"
    for name, goal in GOAL_SECONDS.items():
        s = result[name]
        result[name]["goal_ms"] = goal * 1e3
        result[name]["meets_goal"] = bool(s.get("count")) and s["max_ms"] <= goal * 1e3 and s["failures"] == 0
    return result


def print_table(r: dict[str, Any]) -> None:
    load = r["load"]
    print(f"server: {' '.join(r['server_cmd'])}")
    print(f"load: {load['load_procs']} processes x {load['connections_per_proc']} connections, "
          f"{load['wall_seconds']:.1f} s; bodies ~{load['body_kib']['small_mean']:.0f} KiB "
          f"(+ {', '.join(f'{k / 1024:.1f} MiB' for k in load['body_kib']['large'])})")
    print(f"ingest: {load['spans_per_s']:,.0f} spans/s accepted; "
          f"requests ok {load['requests_ok']}, 503 {load['requests_503']}, other {load['requests_other']}; "
          f"server CPU {load['server_cpu_cores']:.2f} cores (load generators {load['load_generators_cpu_cores']:.2f}), "
          f"peak RSS {load['server_peak_rss_mib']:.0f} MiB")
    pipe = r["pipeline"]
    print(f"during the load: {pipe['turns_assembled']:,.0f} turns assembled, {pipe['evaluations']:,.0f} metric "
          f"evaluations (local tier), {pipe['queue_dropped']:,.0f} queue drops, {pipe['spans_dropped']:,.0f} spans "
          f"dropped, {pipe['traces_evicted']:,.0f} traces evicted; "
          f"/metrics body {r['metrics_body_bytes'] / 1024:.0f} KiB")
    for line in r["server_log_warnings"]:
        print(f"server log: {line}")
    if load["loader_errors"]:
        print(f"load generator errors: {load['loader_errors']}")
    print()
    print(f"{'endpoint':<10} {'probes':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'non-200':>8} {'goal':>7}  ok")
    for name in ("healthz", "metrics"):
        s = r[name]
        if not s.get("count"):
            print(f"/{name:<9} {0:>6}  (no probes)")
            continue
        kinds = f"  {s['failure_kinds']}" if s["failures"] else ""
        print(f"/{name:<9} {s['count']:>6} {s['p50_ms']:>8.1f} {s['p99_ms']:>8.1f} {s['max_ms']:>8.1f} "
              f"{s['failures']:>8} {s['goal_ms'] / 1e3:>6.0f}s  {'yes' if s['meets_goal'] else 'NO'}{kinds}")
    idle = r["idle"]
    if idle["healthz"].get("count"):
        print(f"idle (before load): /healthz p50 {idle['healthz']['p50_ms']:.1f} ms, "
              f"/metrics p50 {idle['metrics']['p50_ms']:.1f} ms")
    lag = r["prober_loop_lag_ms"]
    if lag["p50"] is not None:
        print(f"prober's own loop lag: p50 {lag['p50']:.1f} ms, p99 {lag['p99']:.1f} ms, max {lag['max']:.1f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=20.0, help="load duration (default 20)")
    p.add_argument("--load-procs", type=int, default=2, help="load-generator processes (default 2)")
    p.add_argument("--connections", type=int, default=8, help="keep-alive connections per process (default 8)")
    p.add_argument("--bodies", type=int, default=16, help="~250 KiB bodies of 100 spans (default 16)")
    p.add_argument("--large-bodies", type=int, default=4, help="bodies of 1 to 4 MiB (default 4)")
    p.add_argument("--interval", type=float, default=0.1, help="probe period per endpoint, s (default 0.1)")
    p.add_argument("--probe-timeout", type=float, default=10.0, help="per-probe timeout, s (default 10)")
    p.add_argument("--idle-seconds", type=float, default=2.0, help="probe an idle server first (default 2)")
    p.add_argument("--server-cmd", default=None,
                   help=f"server command (default: this Python -m monitor.cli serve; env {SERVER_CMD_ENV})")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (config, store, server log)")
    p.add_argument("--series", action="store_true", help="with --json: every probe (unix start, ms) and spans count")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = p.parse_args()
    r = asyncio.run(run(args))
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        print_table(r)


if __name__ == "__main__":
    main()
