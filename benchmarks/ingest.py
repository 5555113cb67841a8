"""Ingest benchmark: spans per sidecar CPU-second against a parse+walk anchor from the same run.

    .venv/bin/python benchmarks/ingest.py                      # the full matrix (8 cases), ~5 minutes
    .venv/bin/python benchmarks/ingest.py --headline --repeat 3
    .venv/bin/python benchmarks/ingest.py --tree /tmp/wt-bench-1 --markdown   # serve a pinned checkout

Each *case* is an evaluation mode, a turn size and a conversation pool:

* mode ``off`` (``evaluation.metrics: []``) or ``defaults`` (the embedded defaults: default
  sampling, the local tier, no judge); nothing else differs (``ingest_sidecar.MODES``);
* turns of 1, 16 or 128 KiB of text (documents, prompt, answer: ``ingest_bodies``), 5 spans a
  trace, 20 traces (100 spans) a request;
* 1k or 100k distinct conversations, sent round robin so every one is open before any repeats.

Per case, in one sitting: the **anchor** (``ExportTraceServiceRequest.FromString`` plus reading
every attribute of every span in Python, per CPU-second of this process, over the same bodies);
a fresh ``rag-monitor serve`` (free loopback ports, config in a temp dir); a warm-up and a drain;
then ``--seconds`` of load from ``--load-procs`` processes (fresh trace and conversation ids on
every send) while ``admin_latency.probe_phase`` probes ``/healthz`` (new connection) and
``/metrics`` (keep-alive) every ``--interval`` (0.25 s; their cost is the sidecar's); then a drain
(no pending trace, empty queues). **Ingest** = spans the sidecar counted received during the load
÷ CPU-seconds of its whole process tree from the start of the load to the end of the drain, so
assembling, sampling, evaluating and storing those spans are all paid for; **serving** = the same
spans ÷ the serving process's own CPU (children excluded: what a worker process takes off it). Also: peak RSS, traces
assembled early (``traces_evicted_total``), conversations closed and sampler cache evictions,
turns evaluated and dropped. Results go to a SQLite store in the temp dir (on, as by default).

With a 100k pool the load runs on until every conversation had a turn (``--cover`` 1.05 turns
per conversation of the pool), at most ``--max-seconds`` (90). ``--server-cmd`` as in ``admin_latency.py``; ``--tree DIR`` runs
``<this python> -m monitor.cli serve`` with cwd and PYTHONPATH = DIR (a ``git worktree``).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

SPANS_PER_TRACE = 5
TRACES_PER_REQUEST = 20  # 100 spans per request


# --- shared with admin_latency.py (its load and its bodies) -----------------------------------

def build_bodies(n: int, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """Bodies whose traces share an 8-byte trace-id prefix, so the load generator can make every
    send carry new trace ids with one ``bytes.replace`` (a re-sent trace would be 'late')."""
    from tests.support.otlp_payloads import rag_trace_spans, request  # noqa: PLC0415 - see main()

    rng = random.Random(seed)
    bodies = []
    for _ in range(n):
        prefix = rng.randbytes(8)
        spans = []
        for t in range(TRACES_PER_REQUEST):
            spans += rag_trace_spans(rng, prefix + t.to_bytes(8, "big"), SPANS_PER_TRACE, time.time_ns(),
                                     conversation_id=f"c{rng.randrange(10**6)}")
        bodies.append((prefix, request(spans).SerializeToString()))
    return bodies


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def metrics(admin: int) -> dict[str, float]:
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{admin}/metrics") as r:
            text = await r.text()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = out.get(name, 0.0) + float(value)
    return out


def total(m: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in m.items() if k.startswith(prefix))


async def load(port: int, bodies: list[tuple[bytes, bytes]], connections: int, seconds: float) -> dict[str, int]:
    stats = {"ok": 0, "spans": 0, "503": 0, "other": 0}
    spans_per_body = SPANS_PER_TRACE * TRACES_PER_REQUEST
    deadline = time.perf_counter() + seconds
    url = f"http://127.0.0.1:{port}/v1/traces"
    headers = {"Content-Type": "application/x-protobuf"}

    async def worker(i: int) -> None:
        async with aiohttp.ClientSession() as s:
            k = i
            while time.perf_counter() < deadline:
                prefix, body = bodies[k % len(bodies)]
                body = body.replace(prefix, os.urandom(8))
                async with s.post(url, data=io.BytesIO(body), headers=headers) as r:
                    await r.read()
                    if r.status == 200:
                        stats["ok"] += 1
                        stats["spans"] += spans_per_body
                    elif r.status == 503:
                        stats["503"] += 1
                        await asyncio.sleep(0.05)
                    else:
                        stats["other"] += 1
                k += connections

    await asyncio.gather(*(worker(i) for i in range(connections)))
    return stats


async def wait_ready(admin: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError("sidecar exited during start")
        try:
            async with aiohttp.ClientSession() as s:
                async with s.get(f"http://127.0.0.1:{admin}/readyz") as r:
                    if r.status == 200:
                        return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("sidecar did not become ready")


# --- the matrix -------------------------------------------------------------------------------

def main() -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--tree", default=None)
    tree = pre.parse_known_args()[0].tree
    if tree:  # this process and the load generators import tests.support (and scrape.py's monitor) from it
        sys.path.insert(0, str(Path(tree).resolve()))
    import ingest_matrix  # noqa: PLC0415 - after sys.path is set; it imports this module's helpers
    import ingest_report  # noqa: PLC0415

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ingest_matrix.add_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    p.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    p.add_argument("--save", default=None, help="also write the JSON document to this file")
    args = p.parse_args()
    report = asyncio.run(ingest_matrix.run(args))
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=2))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    ingest_report.print_report(report, markdown=args.markdown)


if __name__ == "__main__":
    main()
