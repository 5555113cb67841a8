"""Ingest benchmark: spans/s through OTLP/HTTP protobuf + assembly vs raw protobuf decode.

    .venv/bin/python benchmarks/ingest.py            # ~1 minute
    .venv/bin/python benchmarks/ingest.py --seconds 20 --overload-seconds 20

Runs ``rag-monitor serve`` as a subprocess (its own core) and a load generator in this process.
Payloads are realistic RAG traces (≈100 spans per request; prompts and documents of 1–4 KB).
Reports, in the same run:
  * raw decode: ``ExportTraceServiceRequest.FromString`` over the same bodies, spans/s on one core;
  * ingest: spans accepted by the sidecar per wall second and per CPU-second of the sidecar
    process (the fair comparison with a one-core decode), and their ratio to raw decode;
  * overload: 10× the connections of the sustained run; the sidecar's peak RSS and what it
    refused (503) or evicted, read from its own /metrics.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from tests.support.otlp_payloads import rag_trace_spans, request  # noqa: E402

SPANS_PER_TRACE = 5
TRACES_PER_REQUEST = 20  # 100 spans per request


def build_bodies(n: int, seed: int = 1) -> list[tuple[bytes, bytes]]:
    """Bodies whose traces share an 8-byte trace-id prefix, so the load generator can make every
    send carry new trace ids with one ``bytes.replace`` (a re-sent trace would be 'late')."""
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


def raw_decode_rate(bodies: list[tuple[bytes, bytes]], seconds: float = 3.0) -> float:
    spans = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _, b in bodies:
            req = ExportTraceServiceRequest.FromString(b)
            spans += sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
    return spans / (time.perf_counter() - start)


def materialize_rate(bodies: list[tuple[bytes, bytes]]) -> float:
    """Context figure: decode plus protobuf's own conversion of everything to Python objects."""
    from google.protobuf.json_format import MessageToDict

    start = time.perf_counter()
    spans = 0
    for _, b in bodies:
        MessageToDict(ExportTraceServiceRequest.FromString(b))
        spans += SPANS_PER_TRACE * TRACES_PER_REQUEST
    return spans / (time.perf_counter() - start)


def convert_rate(bodies: list[tuple[bytes, bytes]]) -> float:
    """Our decoder alone (protobuf → SpanRecord), no HTTP, no assembly."""
    from monitor.receivers.decode import PROTOBUF, decode_traces

    start = time.perf_counter()
    spans = 0
    for _ in range(3):
        for _, b in bodies:
            spans += len(decode_traces(b, PROTOBUF).records)
    return spans / (time.perf_counter() - start)


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


async def http_ceiling(bodies: list[tuple[bytes, bytes]], connections: int, seconds: float) -> float:
    """Spans/s per CPU-second of a server that only reads the bodies (no decode, no assembly)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "http_sink.py"), str(port)], cwd=ROOT)
    try:
        await wait_ready(port, proc)
        await load(port, bodies, connections, 1.0)
        cpu0 = proc_cpu_seconds(proc.pid)
        stats = await load(port, bodies, connections, seconds)
        cpu = proc_cpu_seconds(proc.pid) - cpu0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    return stats["spans"] / cpu if cpu else float("nan")


async def run(args: argparse.Namespace) -> dict[str, float]:
    bodies = build_bodies(args.bodies)
    mean_kb = sum(len(b) for _, b in bodies) / len(bodies) / 1024
    decode = raw_decode_rate(bodies)
    materialize = materialize_rate(bodies)
    convert = convert_rate(bodies)
    ceiling = await http_ceiling(bodies, args.connections, min(args.seconds, 8.0))
    http, admin = free_port(), free_port()
    cfg = {"receivers": {"http": {"port": http}, "grpc": {"enabled": False}}, "admin": {"port": admin},
           "assembly": {"decision_wait_seconds": 1.0}, "log_level": "WARNING",
           # Ingest + assembly only: evaluation has its own benchmark (judge_throughput.py).
           "evaluation": {"metrics": []}}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        json.dump(cfg, f)  # JSON is YAML
    proc = subprocess.Popen([sys.executable, "-m", "monitor.cli", "serve", "-c", f.name], cwd=ROOT)
    try:
        await wait_ready(admin, proc)
        await load(http, bodies, args.connections, 2.0)  # warm-up
        cpu0, m0, t0 = proc_cpu_seconds(proc.pid), await metrics(admin), time.perf_counter()
        sustained = await load(http, bodies, args.connections, args.seconds)
        wall = time.perf_counter() - t0
        cpu = proc_cpu_seconds(proc.pid) - cpu0
        await asyncio.sleep(2.0)  # let the decision wait pass
        m1 = await metrics(admin)
        if os.environ.get("BENCH_DEBUG"):
            print({k: v for k, v in m1.items() if "turn" in k or "without" in k or "evict" in k})
        rss_sustained = proc_peak_rss_mib(proc.pid)
        over = await load(http, bodies, args.connections * 10, args.overload_seconds)
        await asyncio.sleep(2.0)
        m2 = await metrics(admin)
        rss_overload = proc_peak_rss_mib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    received = total(m1, "rag_monitor_spans_received_total") - total(m0, "rag_monitor_spans_received_total")
    turns = total(m1, "rag_monitor_turns_assembled_total") - total(m0, "rag_monitor_turns_assembled_total")
    result = {
        "request_kib": mean_kb,
        "raw_decode_spans_per_s": decode,
        "message_to_dict_spans_per_s": materialize,
        "decode_to_records_spans_per_s": convert,
        "http_only_spans_per_cpu_s": ceiling,
        "ingest_spans_per_wall_s": sustained["spans"] / wall,
        "ingest_spans_per_cpu_s": received / cpu if cpu else float("nan"),
        "sidecar_cpu_share": cpu / wall,
        "turns_assembled": turns,
        "peak_rss_mib_sustained": rss_sustained,
        "overload_requests_ok": over["ok"],
        "overload_503": over["503"],
        "overload_rejected_counted": total(m2, 'rag_monitor_requests_rejected_total{reason="overloaded"')
        + total(m2, 'rag_monitor_requests_rejected_total{transport="http",reason="overloaded"'),
        "overload_traces_evicted": total(m2, "rag_monitor_traces_evicted_total"),
        "peak_rss_mib_overload": rss_overload,
    }
    result["ratio_cpu"] = result["ingest_spans_per_cpu_s"] / decode
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--overload-seconds", type=float, default=10.0)
    p.add_argument("--connections", type=int, default=4)
    p.add_argument("--bodies", type=int, default=20)
    args = p.parse_args()
    r = asyncio.run(run(args))
    width = max(map(len, r))
    for k, v in r.items():
        print(f"{k:<{width}}  {v:,.2f}")
    print(f"\ningest+assembly = {r['ratio_cpu']:.0%} of raw protobuf decode (per CPU-second of the sidecar)")


if __name__ == "__main__":
    main()
