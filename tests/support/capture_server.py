"""Capture raw OTLP/HTTP export bodies to files, and regenerate the checked-in captures.

A tiny aiohttp OTLP/HTTP receiver on 127.0.0.1: ``POST /v1/traces``, ``/v1/logs`` and
``/v1/metrics`` with any content type (gzip/deflate bodies are inflated first) are answered 200
with an empty export response of the request's content type (zero bytes for protobuf, ``{}`` for
JSON) and written verbatim (inflated) to ``<dir>/<signal>-NNN.<pb|json>`` in arrival order.

Commands::

    # just listen (Ctrl-C to stop)
    python -m tests.support.capture_server serve --dir /tmp/cap --port 4318

    # re-run every rag_app combination and rewrite tests/testdata/captures/
    python -m tests.support.capture_server regenerate [--out DIR] [--only genai-stream-span]

    # print a capture file (.pb or .json) as OTLP JSON (protobuf field names, hex ids)
    python -m tests.support.capture_server dump tests/testdata/captures/genai-stream-span/traces-001.pb
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import json
import os
import shutil
import sys
import zlib
from pathlib import Path

from aiohttp import web

__all__ = ["CaptureServer", "COMBINATIONS", "regenerate"]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "tests" / "testdata" / "captures"

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# (instrumentation, scenario, content, exporter) -> directory name
COMBINATIONS: tuple[tuple[str, str, str, str], ...] = tuple(
    [
        (inst, scenario, content, "http-protobuf")
        for inst, contents in (
            ("genai", ("span", "event")),
            ("openinference", ("span",)),
            ("openllmetry", ("span", "event")),
        )
        for scenario in ("conversation", "stream", "agent")
        for content in contents
    ]
    + [
        ("genai", "conversation", "both", "http-protobuf"),
        ("openinference", "conversation", "both", "http-protobuf"),
        ("genai", "conversation", "span", "http-json"),
        ("genai", "conversation", "event", "http-json"),
    ]
)


def combination_name(inst: str, scenario: str, content: str, exporter: str) -> str:
    name = f"{inst}-{scenario}-{content}"
    return name + ("-json" if exporter == "http-json" else "")


class CaptureServer:
    """OTLP/HTTP sink that stores each request body. Binds 127.0.0.1 only."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, port: int = 0) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.port = port
        self.bodies: list[tuple[str, str, bytes]] = []  # (signal, content type, body)
        self._counts: dict[str, int] = {}
        self._runner: web.AppRunner | None = None
        self.base_url: str | None = None

    async def start(self) -> str:
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for signal in ("traces", "logs", "metrics"):
            app.router.add_post(f"/v1/{signal}", self._handler(signal))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _handler(self, signal: str):
        async def handle(request: web.Request) -> web.Response:
            body = await request.read()
            # aiohttp's server already inflates gzip/deflate request bodies (auto_decompress);
            # inflate here only if the bytes are still compressed.
            encoding = request.headers.get("Content-Encoding", "").lower()
            if encoding == "gzip" and body[:2] == b"\x1f\x8b":
                body = gzip.decompress(body)
            elif encoding == "deflate" and body[:1] not in (b"{", b"["):
                try:
                    body = zlib.decompress(body)
                except zlib.error:
                    pass
            content_type = request.content_type or PROTOBUF
            is_json = "json" in content_type
            self.bodies.append((signal, content_type, body))
            if self.directory is not None:
                n = self._counts.get(signal, 0) + 1
                self._counts[signal] = n
                ext = "json" if is_json else "pb"
                # Exactly the bytes the exporter sent (after inflating a compressed body).
                (self.directory / f"{signal}-{n:03d}.{ext}").write_bytes(body)
            if is_json:
                return web.Response(body=b"{}", content_type=JSON)
            return web.Response(body=b"", content_type=PROTOBUF)

        return handle


async def _run_one(out_dir: Path, inst: str, scenario: str, content: str, exporter: str) -> None:
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.rag_app import ANSWERS

    name = combination_name(inst, scenario, content, exporter)
    target = out_dir / name
    if target.exists():
        shutil.rmtree(target)
    capture = CaptureServer(target)
    fake = FakeOpenAI(ANSWERS)
    endpoint = await capture.start()
    base_url = await fake.start()
    try:
        cmd = [
            sys.executable, "-m", "tests.support.rag_app",
            "--instrumentation", inst, "--exporter", exporter, "--endpoint", endpoint,
            "--openai-base-url", base_url, "--scenario", scenario, "--content", content,
            "--conversation-id", f"conv-{inst}-{scenario}-{content}",
        ]  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            cwd=str(REPO_ROOT),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: rag_app exited {proc.returncode}\n{stderr.decode()}")
        (target / "expected.jsonl").write_bytes(stdout)
        print(f"{name}: {len(capture.bodies)} bodies, {len(stdout.splitlines())} turns", file=sys.stderr)
    finally:
        await fake.close()
        await capture.close()


async def regenerate(out_dir: Path = DEFAULT_OUT, only: list[str] | None = None) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for combo in COMBINATIONS:
        if only and combination_name(*combo) not in only:
            continue
        await _run_one(out_dir, *combo)


async def _serve(directory: Path, port: int) -> None:
    server = CaptureServer(directory, port)
    url = await server.start()
    print(f"capturing OTLP/HTTP on {url} into {directory}", file=sys.stderr)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()


def decode_file(path: str | os.PathLike[str]) -> dict:
    """Decode a captured body into a dict (protobuf JSON mapping; ids as lowercase hex)."""
    path = Path(path)
    data = path.read_bytes()
    if path.suffix == ".json":
        return json.loads(data)
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    message = (ExportLogsServiceRequest if path.name.startswith("logs") else ExportTraceServiceRequest)()
    message.ParseFromString(data)
    decoded = json_format.MessageToDict(message)

    def fix_ids(node: object) -> None:  # protobuf JSON renders bytes as base64; OTLP uses hex
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                    node[key] = base64.b64decode(value).hex()
                else:
                    fix_ids(value)
        elif isinstance(node, list):
            for item in node:
                fix_ids(item)

    fix_ids(decoded)
    return decoded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.capture_server")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--dir", required=True, type=Path)
    serve.add_argument("--port", type=int, default=4318)
    regen = sub.add_parser("regenerate")
    regen.add_argument("--out", type=Path, default=DEFAULT_OUT)
    regen.add_argument("--only", action="append", help="combination name, e.g. genai-stream-span")
    dump = sub.add_parser("dump")
    dump.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        for file in args.files:
            print(json.dumps(decode_file(file), indent=1, ensure_ascii=False))
    elif args.command == "serve":
        try:
            asyncio.run(_serve(args.dir, args.port))
        except KeyboardInterrupt:
            pass
    else:
        asyncio.run(regenerate(args.out, args.only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
