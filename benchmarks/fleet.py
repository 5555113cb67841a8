"""Fleet cost benchmark: sidecar CPU per ingested span and Redis work per turn, fleet off against on.

    .venv/bin/python benchmarks/fleet.py --repeat 3                  # ~4 minutes
    .venv/bin/python benchmarks/fleet.py --repeat 3 --profile --json  # + in-process profile and probe
    .venv/bin/python benchmarks/fleet.py --tree /tmp/wt-fleet ...     # serve a pinned checkout

Cases (``--cases``, default all three, run interleaved per repeat):

* ``off``: the embedded defaults (default sampling, the local tier, no judge), the SQLite result
  store in the case's temp dir, gRPC off (``ingest_sidecar.write_config(…, "defaults", …)``);
* ``fleet``: the same plus ``fleet.redis_url`` of a fresh ``redis-server`` on 127.0.0.1
  (``tests.support.redis_server.RedisServer``, one per run, so no decision of an earlier run is
  found);
* ``fleet_pg``: ``fleet`` plus ``exporters.store.url`` = a fresh database on one PostgreSQL
  server (``tests.support.postgres_server.PostgresServer``, started once for the benchmark).

A run: a fresh ``rag-monitor serve``; one sender process (``fleet_stream``) posts the same OTLP
bodies at ``--rate`` bodies/s (20 traces of 5 spans each, ``--turn-kib`` of text a turn) with
conversations of ``--turns-per-conversation`` turns spread over the stream; after a warm-up (until
the stream's start-up transient has been assembled, ``warmup_seconds``; and at least one finished
evaluation, so lazy model loading is not charged), the
benchmark reads the sidecar's CPU (``/proc``: utime + stime of the serving process, and of its
whole tree, children included), its ``/metrics``, Redis ``INFO all`` and PostgreSQL's
``pg_stat_database``; again ``--seconds`` later, while the stream goes on. The stream is steady,
so the window needs no drain: the CPU in it is the cost of the spans received in it.

``--together`` runs the cases of a repeat side by side instead of one after the other: each has
its own sidecar, sender and Redis, the windows overlap, and a change in the machine's other load
(2 shared cores here) weighs on every case alike, so the paired ratios are far less noisy.

Per run: sidecar CPU-seconds per 1,000 spans received (tree and serving process), Redis commands
per turn and per conversation (``total_commands_processed``, which counts the commands a script
runs too, and per command from ``commandstats``), Redis round trips per turn and per conversation
(``total_reads_processed``: one read event per request or pipeline the server received), server
time per EVAL, Redis's and PostgreSQL's own CPU per 1,000 spans, and what the sidecar counted
(decisions by source, evaluations, pending work at the end). The benchmark's own INFO is
subtracted. "Conversation" = a fleet decision taken in the window (a first turn this replica saw).

``--profile`` adds in-process runs of ``off`` and ``fleet`` (a ``monitor.app.Sidecar`` object in
this process, the same stream from a sender process): one under cProfile (the serving event
loop's CPU by module group), and one ``fleet`` *probe* without cProfile that times every
``FleetLink.run`` (one Redis round trip each) and every first-turn decision from
``FleetDecider.submit`` to its delivery.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

CASES = ("off", "fleet", "fleet_pg")
SERVER_CMD_ENV = "FLEET_BENCH_SERVER_CMD"


# --- configuration and servers ----------------------------------------------------------------

def write_case_config(tmp: Path, case: str, http: int, admin: int, redis_url: str | None,
                      pg_url: str | None) -> Path:
    from ingest_sidecar import write_config  # noqa: PLC0415 - after sys.path is set (--tree)

    path = write_config(tmp, "defaults", http, admin)  # embedded defaults, SQLite store in tmp, gRPC off
    cfg = json.loads(path.read_text())
    if case != "off":
        cfg["fleet"] = {"redis_url": redis_url}
    if case == "fleet_pg":
        cfg["exporters"]["store"] = {"url": pg_url}  # url and path are mutually exclusive
    path.write_text(json.dumps(cfg, indent=2))
    return path


class Servers:
    """Redis per run (fresh state), PostgreSQL once per benchmark (a fresh database per run)."""

    def __init__(self) -> None:
        self.pg: Any = None
        self._databases = 0

    def postgres_url(self) -> str:
        if self.pg is None:
            from tests.support.postgres_server import PostgresServer  # noqa: PLC0415

            self.pg = PostgresServer()
            self.pg.start()
        self._databases += 1
        return str(self.pg.create_database(f"fleet_bench_{os.getpid()}_{self._databases}"))

    def close(self) -> None:
        if self.pg is not None:
            self.pg.close()


def _redis_stats(port: int) -> dict[str, Any]:
    import redis  # noqa: PLC0415

    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
    try:
        info = client.info("all")
    finally:
        client.close()
    return {"commands": info["total_commands_processed"], "reads": info["total_reads_processed"],
            "cmd": {k[len("cmdstat_"):]: (v["calls"], v["usec"]) for k, v in info.items() if k.startswith("cmdstat_")}}


def _pg_stats(url: str) -> dict[str, int]:
    import psycopg  # noqa: PLC0415

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        row = conn.execute("SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted "
                           "FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return dict(zip(("xact_commit", "xact_rollback", "tup_inserted", "tup_updated", "tup_deleted"), row or ()))


@dataclass
class Snapshot:
    wall: float
    cpu_own: float
    cpu_tree: float
    metrics: Any  # ingest_sidecar.Scrape
    redis: dict[str, Any] | None
    redis_cpu: float
    pg: dict[str, int] | None
    pg_cpu: float


async def _snapshot(pid: int, admin: int, redis_port: int | None, redis_pid: int | None,
                    pg_url: str | None, pg_pid: int | None) -> Snapshot:
    from ingest_sidecar import scrape, tree_cpu_seconds  # noqa: PLC0415

    own, tree = tree_cpu_seconds(pid)
    wall = time.perf_counter()
    redis = _redis_stats(redis_port) if redis_port else None
    pg = _pg_stats(pg_url) if pg_url else None
    return Snapshot(wall, own, tree, await scrape(admin), redis,
                    tree_cpu_seconds(redis_pid)[1] if redis_pid else 0.0, pg,
                    tree_cpu_seconds(pg_pid)[1] if pg_pid else 0.0)


# --- one run --------------------------------------------------------------------------------

def _launch(args: argparse.Namespace, config: Path, tmp: Path) -> tuple[list[str], dict[str, str], Path]:
    if args.tree:
        tree = Path(args.tree).resolve()
        return [sys.executable, "-m", "monitor.cli", "serve", "-c", str(config)], {"PYTHONPATH": str(tree)}, tree
    # Not with --tree: admin_latency puts this checkout first on sys.path and imports its monitor.app.
    import admin_latency  # noqa: PLC0415

    cmd, env = admin_latency.server_command(args.server_cmd or os.environ.get(SERVER_CMD_ENV), config)
    return cmd, env, tmp


class Sender:
    """The stream's sender process (``fleet_stream.sender_process``)."""

    def __init__(self, port: int, templates: list[Any], args: argparse.Namespace) -> None:
        from fleet_stream import Stream, sender_process  # noqa: PLC0415

        ctx = mp.get_context("spawn")
        self._ready, self._go, self._stop, self._out = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
        stream = Stream(args.turns_per_conversation, args.open_conversations)
        self._proc = ctx.Process(target=sender_process, daemon=True,
                                 args=(port, templates, args.rate, stream, self._ready, self._go, self._stop,
                                       self._out))

    async def start(self) -> None:
        self._proc.start()
        if not await asyncio.get_running_loop().run_in_executor(None, self._ready.wait, 60):
            raise RuntimeError("the sender did not start within 60 s")
        self._go.set()

    async def stop(self) -> dict[str, Any]:
        self._stop.set()
        try:
            return await asyncio.get_running_loop().run_in_executor(None, self._out.get, True, 60)
        finally:
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.terminate()


def warmup_seconds(args: argparse.Namespace) -> float:
    """``--warmup``, else until the stream is steady *as assembled*: its first T·(T−1)·W turns hold
    later turns of conversations never opened (first turns to the sidecar), and a turn is assembled
    ``assembly.decision_wait_seconds`` (5 s by default) after it was sent; plus 2 s."""
    if args.warmup is not None:
        return float(args.warmup)
    t, w = args.turns_per_conversation, args.open_conversations
    return t * (t - 1) * w / (args.rate * 20) + ASSEMBLY_WAIT_SECONDS + 2.0


ASSEMBLY_WAIT_SECONDS = 5.0  # assembly.decision_wait_seconds, default


async def _warm_up(admin: int, args: argparse.Namespace) -> float:
    """``warmup_seconds``, then on until an evaluation has finished (at most 60 s more)."""
    from ingest_sidecar import scrape  # noqa: PLC0415

    start = time.perf_counter()
    wait = warmup_seconds(args)
    await asyncio.sleep(wait)
    while time.perf_counter() - start < wait + 60:
        if (await scrape(admin)).sum("rag_monitor_evaluations_total") > 0:
            break
        await asyncio.sleep(0.5)
    return time.perf_counter() - start


async def run_one(case: str, templates: list[Any], args: argparse.Namespace, servers: Servers) -> dict[str, Any]:
    import ingest  # noqa: PLC0415
    from tests.support.daemon import stop  # noqa: PLC0415
    from tests.support.redis_server import RedisServer  # noqa: PLC0415

    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    redis = RedisServer(tmp / "redis") if case != "off" else None
    if redis is not None:
        await redis.start()
    pg_url = servers.postgres_url() if case == "fleet_pg" else None
    http, admin = ingest.free_port(), ingest.free_port()
    config = write_case_config(tmp, case, http, admin, redis.url if redis else None, pg_url)
    cmd, env, cwd = _launch(args, config, tmp)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_MONITOR_")}
    log_path = tmp / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env={**base_env, **env}, stdout=log, stderr=subprocess.STDOUT)
    rc = None
    redis_pid = redis._proc.pid if redis is not None and redis._proc is not None else None  # noqa: SLF001
    pg_pid = servers.pg._process.pid if pg_url else None  # noqa: SLF001
    try:
        try:
            await ingest.wait_ready(admin, proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; command {cmd}; log:\n{log_path.read_text()[-3000:]}") from None
        sender = Sender(http, templates, args)
        await sender.start()
        try:
            warmup = await _warm_up(admin, args)
            a = await _snapshot(proc.pid, admin, redis.port if redis else None, redis_pid, pg_url, pg_pid)
            await asyncio.sleep(args.seconds)
            b = await _snapshot(proc.pid, admin, redis.port if redis else None, redis_pid, pg_url, pg_pid)
        finally:
            sent = await sender.stop()
    finally:
        await stop(proc)  # SIGTERM, SIGKILL after 10 s
        rc = proc.returncode
        if redis is not None:
            await redis.stop()
        server_log = log_path.read_text(errors="replace")
        if not args.keep_tmp and rc in (0, None):
            shutil.rmtree(tmp, ignore_errors=True)
    return {"case": case, "server_cmd": [f"{k}={v}" for k, v in env.items()] + cmd, "warmup_seconds": warmup,
            **figures(a, b, args), "sender": sent, "loadavg_1m_after": os.getloadavg()[0], "server_exit_code": rc,
            "server_log_warnings": [line for line in server_log.splitlines()
                                    if " WARNING " in line or " ERROR " in line][:10]}


def _by(a: Any, b: Any, name: str, label: str) -> dict[str, float]:
    before = a.by(name, label)
    return {k: v - before.get(k, 0.0) for k, v in b.by(name, label).items() if v - before.get(k, 0.0)}


def _per(x: float, n: float, scale: float = 1.0) -> float | None:
    return x / n * scale if n else None


def figures(a: Snapshot, b: Snapshot, args: argparse.Namespace) -> dict[str, Any]:
    m0, m1 = a.metrics, b.metrics
    spans = m1.sum("rag_monitor_spans_received_total") - m0.sum("rag_monitor_spans_received_total")
    turns = m1.sum("rag_monitor_turns_assembled_total") - m0.sum("rag_monitor_turns_assembled_total")
    wall = b.wall - a.wall
    decisions = _by(m0, m1, "rag_monitor_fleet_decisions_total", "source")
    conversations = sum(decisions.values())
    draws = sum(_by(m0, m1, "rag_monitor_sampling_decisions_total", "decision").values())
    out: dict[str, Any] = {
        "window_seconds": wall, "spans": spans, "turns": turns, "spans_per_s": spans / wall,
        "cpu_tree_s": b.cpu_tree - a.cpu_tree, "cpu_own_s": b.cpu_own - a.cpu_own,
        "cpu_tree_per_1k_spans": _per(b.cpu_tree - a.cpu_tree, spans, 1000),
        "cpu_own_per_1k_spans": _per(b.cpu_own - a.cpu_own, spans, 1000),
        "sidecar_cores": (b.cpu_tree - a.cpu_tree) / wall,
        "fleet_decisions": decisions,
        # Draws = conversations decided in the window: equal in every case when the stream is steady (1/T).
        "first_turn_share": _per(draws, turns),
        "sampling_decisions": _by(m0, m1, "rag_monitor_sampling_decisions_total", "decision"),
        "evaluations": _by(m0, m1, "rag_monitor_evaluations_total", "outcome"),
        "queue_dropped": _by(m0, m1, "rag_monitor_queue_dropped_total", "queue"),
        "fleet_redis_errors": _by(m0, m1, "rag_monitor_fleet_redis_errors_total", "cause"),
        "end": {"pending_traces": m1.sum("rag_monitor_pending_traces"), "queue_depth": m1.sum("rag_monitor_queue_depth"),
                "fleet_pending_decisions": m1.sum("rag_monitor_fleet_pending_decisions"),
                "weights_held": m1.sum("rag_monitor_weights_held"), "fleet_degraded": m1.sum("rag_monitor_fleet_degraded")},
    }
    if a.redis is not None and b.redis is not None:
        cmd = {k: (v[0] - a.redis["cmd"].get(k, (0, 0))[0], v[1] - a.redis["cmd"].get(k, (0, 0))[1])
               for k, v in b.redis["cmd"].items()}
        ours = cmd.get("info", (0, 0))[0]  # the benchmark's own INFO (one in the window)
        commands = b.redis["commands"] - a.redis["commands"] - ours
        reads = b.redis["reads"] - a.redis["reads"] - ours
        evals = cmd.get("eval", (0, 0))[0] + cmd.get("evalsha", (0, 0))[0]
        eval_usec = cmd.get("eval", (0, 0))[1] + cmd.get("evalsha", (0, 0))[1]
        out["redis"] = {
            "commands": commands, "round_trips": reads, "evals": evals,
            "commands_per_turn": _per(commands, turns), "commands_per_conversation": _per(commands, conversations),
            "round_trips_per_turn": _per(reads, turns), "round_trips_per_conversation": _per(reads, conversations),
            "round_trips_per_s": reads / wall,
            "eval_server_usec_per_call": _per(eval_usec, evals),
            "redis_cpu_per_1k_spans": _per(b.redis_cpu - a.redis_cpu, spans, 1000),
            "commandstats": {k: v[0] for k, v in sorted(cmd.items()) if v[0] and k != "info"},
        }
    if a.pg is not None and b.pg is not None:
        out["postgres"] = {**{k: b.pg[k] - a.pg.get(k, 0) for k in b.pg},
                           "xact_per_turn": _per(b.pg["xact_commit"] - a.pg["xact_commit"], turns),
                           "server_cpu_per_1k_spans": _per(b.pg_cpu - a.pg_cpu, spans, 1000),
                           "note": "pg_stat_database is flushed by backends at most once a second: approximate"}
    return out


# --- summary --------------------------------------------------------------------------------

def _spread(values: list[float]) -> dict[str, float] | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    keys = ("cpu_tree_per_1k_spans", "cpu_own_per_1k_spans", "spans_per_s", "sidecar_cores")
    rkeys = ("commands_per_turn", "commands_per_conversation", "round_trips_per_turn", "round_trips_per_conversation",
             "round_trips_per_s", "eval_server_usec_per_call", "redis_cpu_per_1k_spans")
    for case in CASES:
        rs = [r for r in runs if r["case"] == case]
        if not rs:
            continue
        s = {k: _spread([r[k] for r in rs]) for k in keys}
        if any("redis" in r for r in rs):
            s["redis"] = {k: _spread([r["redis"][k] for r in rs if "redis" in r]) for k in rkeys}
        if any("postgres" in r for r in rs):
            s["postgres_server_cpu_per_1k_spans"] = _spread([r["postgres"]["server_cpu_per_1k_spans"]
                                                             for r in rs if "postgres" in r])
        out[case] = s
    off = {r["repeat"]: r["cpu_tree_per_1k_spans"] for r in runs if r["case"] == "off"}
    off_own = {r["repeat"]: r["cpu_own_per_1k_spans"] for r in runs if r["case"] == "off"}
    for case in CASES[1:]:
        paired = [r["cpu_tree_per_1k_spans"] / off[r["repeat"]] for r in runs
                  if r["case"] == case and off.get(r["repeat"])]
        paired_own = [r["cpu_own_per_1k_spans"] / off_own[r["repeat"]] for r in runs
                      if r["case"] == case and off_own.get(r["repeat"])]
        if paired and case in out and "off" in out:
            out[f"ratio_{case}_to_off"] = {
                "of_medians_tree": out[case]["cpu_tree_per_1k_spans"]["median"] / out["off"]["cpu_tree_per_1k_spans"]["median"],
                "of_medians_own": out[case]["cpu_own_per_1k_spans"]["median"] / out["off"]["cpu_own_per_1k_spans"]["median"],
                "paired_by_repeat_tree": _spread(paired), "paired_by_repeat_own": _spread(paired_own)}
    return out


def print_report(report: dict[str, Any]) -> None:
    print(f"# {report['machine']}")
    print(f"# {' '.join(report['argv'])}")
    print("| case | run | spans/s | sidecar cores | CPU-s / 1k spans (tree) | (serving) | Redis cmds/turn | "
          "cmds/conv | round trips/turn | round trips/conv | EVAL server µs | Redis CPU-s/1k spans | "
          "PG CPU-s/1k spans | first-turn share | fleet decisions | evaluations | end pending traces | load 1m after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")

    def f(v: Any, digits: int = 3) -> str:
        return "–" if v is None else f"{v:.{digits}f}"

    for r in report["runs"]:
        rd = r.get("redis", {})
        pg = r.get("postgres", {})
        print(f"| {r['case']} | {r['repeat']} | {r['spans_per_s']:,.0f} | {r['sidecar_cores']:.3f} | "
              f"{f(r['cpu_tree_per_1k_spans'], 4)} | {f(r['cpu_own_per_1k_spans'], 4)} | {f(rd.get('commands_per_turn'), 2)} | "
              f"{f(rd.get('commands_per_conversation'), 2)} | {f(rd.get('round_trips_per_turn'), 4)} | "
              f"{f(rd.get('round_trips_per_conversation'), 4)} | {f(rd.get('eval_server_usec_per_call'), 0)} | "
              f"{f(rd.get('redis_cpu_per_1k_spans'), 4)} | {f(pg.get('server_cpu_per_1k_spans'), 4)} | "
              f"{f(r['first_turn_share'], 3)} | {', '.join(f'{k} {v:,.0f}' for k, v in sorted(r['fleet_decisions'].items())) or '–'} | "
              f"{sum(r['evaluations'].values()):,.0f} | {r['end']['pending_traces']:,.0f} | {r['loadavg_1m_after']:.2f} |")
    print()
    print(json.dumps(report["summary"], indent=2))
    if report.get("profile"):
        print(json.dumps(report["profile"], indent=2))


# --- main -------------------------------------------------------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)} (default: all)")
    p.add_argument("--repeat", type=int, default=3, help="runs per case, interleaved (default 3)")
    p.add_argument("--rate", type=float, default=20.0, help="bodies per second, 20 traces of 5 spans each (default 20)")
    p.add_argument("--seconds", type=float, default=15.0, help="measured window per run (default 15)")
    p.add_argument("--warmup", type=float, default=None,
                   help="stream before the window, then on until an evaluation finished (default: until the "
                        "stream's start-up transient has been assembled, see warmup_seconds())")
    p.add_argument("--turn-kib", type=float, default=1.0, help="text per turn (default 1 KiB)")
    p.add_argument("--turns-per-conversation", type=int, default=3, help="default 3")
    p.add_argument("--open-conversations", type=int, default=400,
                   help="conversations open at a time: turns of one are turns-per-conversation × this apart (default 400)")
    p.add_argument("--together", action="store_true",
                   help="run the cases of a repeat at the same time (each its own server, sender and Redis), so "
                        "the machine's other load weighs on all of them alike")
    p.add_argument("--profile", action="store_true",
                   help="also profile off and fleet in this process (cProfile) and probe fleet's round trips and "
                        "decision latency")
    p.add_argument("--profile-seconds", type=float, default=15.0, help="window of the in-process runs (default 15)")
    p.add_argument("--server-cmd", default=None, help=f"as in admin_latency.py (env {SERVER_CMD_ENV})")
    p.add_argument("--tree", default=None, help="serve from this checkout: cwd and PYTHONPATH = TREE")
    p.add_argument("--keep-tmp", action="store_true")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    p.add_argument("--save", default=None, help="also write the JSON document to this file")


def _versions() -> dict[str, str]:
    out = {}
    for name, argv in (("redis", ["redis-server", "--version"]),):
        try:
            out[name] = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            pass
    try:
        from tests.support.postgres_server import find_binary  # noqa: PLC0415

        out["postgres"] = subprocess.run([find_binary("postgres"), "--version"], capture_output=True, text=True,
                                         timeout=10).stdout.strip()
    except (OSError, ImportError):
        pass
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from ingest_bodies import build_templates  # noqa: PLC0415

    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"--cases: {c!r} is not one of {', '.join(CASES)}")
    templates = build_templates(args.turn_kib, 8)
    tree = args.tree or str(ROOT)
    commit = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            timeout=10).stdout.strip()
    dirty = subprocess.run(["git", "-C", tree, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, timeout=10).stdout.strip()
    report: dict[str, Any] = {
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), "cpu": _cpu_model(),
                    "loadavg_1m_start": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                    **_versions()},
        "argv": sys.argv, "tree": tree, "commit": commit, "tree_modified": bool(dirty),
        "stream": {"bodies_per_s": args.rate, "spans_per_body": templates[0].spans,
                   "turns_per_s": args.rate * 20, "turn_kib": args.turn_kib,
                   "body_kib": sum(t.size for t in templates) / len(templates) / 1024,
                   "turns_per_conversation": args.turns_per_conversation,
                   "open_conversations": args.open_conversations},
        "runs": []}
    servers = Servers()
    try:
        for repeat in range(args.repeat):
            if args.together:  # the cases side by side: a change in the machine's load hits all of them
                results = await asyncio.gather(*(run_one(case, templates, args, servers) for case in cases))
            else:
                results = [await run_one(case, templates, args, servers) for case in cases]
            for result in results:
                result["repeat"] = repeat + 1
                report["runs"].append(result)
                rd = result.get("redis", {})
                print(f"# {result['case']} run {repeat + 1}: {result['cpu_tree_per_1k_spans']:.4f} CPU-s/1k spans "
                      f"(tree), {result['spans_per_s']:,.0f} spans/s, round trips/turn {rd.get('round_trips_per_turn')}",
                      file=sys.stderr, flush=True)
        report["summary"] = summarise(report["runs"])
        if args.profile:
            import fleet_profile  # noqa: PLC0415

            report["profile"] = await fleet_profile.run(args, templates)
    finally:
        servers.close()
    report["loadavg_1m_end"] = os.getloadavg()[0]
    return report


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--tree", default=None)
    tree = pre.parse_known_args()[0].tree
    if tree:  # this process (and the in-process profile) import monitor and tests.support from it
        sys.path.insert(0, str(Path(tree).resolve()))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args()
    report = asyncio.run(run(args))
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print_report(report)


if __name__ == "__main__":
    main()
