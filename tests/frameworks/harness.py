"""Run a real framework app (its own venv) against the fake OpenAI server and capture its OTLP.

Each framework stack lives in ``tests/frameworks/<stack>/``: ``requirements.txt`` (pinned) and
``app.py``. The app runs in a venv of its own under ``.venv-frameworks/<stack>/`` because the
stacks pin conflicting OpenTelemetry and pydantic versions; the capture server and the fake
OpenAI server run here, in the project's venv, on 127.0.0.1.

App contract (``app.py``)::

    app.py --list                        # JSON list of [instrumentation, scenario] it supports
    app.py --instrumentation I --scenario S --endpoint http://127.0.0.1:P \\
           --openai-base-url http://127.0.0.1:Q/v1 --conversation-id ID [--exporter http-protobuf]

It exports with the real OTLP/HTTP protobuf exporter to ``--endpoint`` (``/v1/traces``,
``/v1/logs``), flushes before exiting, and prints one truth line per turn on stdout
(``tests/frameworks/truth.py``); everything else goes to stderr. It must never reach the
internet: no model downloads, no telemetry upload, no price tables.

Commands::

    python -m tests.frameworks.harness venv langchain          # create/refresh the venv
    python -m tests.frameworks.harness capture langchain       # rewrite its captures
    python -m tests.frameworks.harness capture langchain --only langchain-openinference-conversation
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

REPO_ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = Path(__file__).resolve().parent
CAPTURES = REPO_ROOT / "tests" / "testdata" / "captures"
VENVS = Path(os.environ.get("RAG_MONITOR_FRAMEWORK_VENVS", REPO_ROOT / ".venv-frameworks"))

__all__ = ["STACKS", "ensure_venv", "app_python", "list_combinations", "run_app", "capture"]

STACKS = tuple(sorted(p.name for p in FRAMEWORKS.iterdir() if (p / "app.py").is_file()))


def _requirements(stack: str) -> Path:
    return FRAMEWORKS / stack / "requirements.txt"


def app_python(stack: str) -> Path:
    return VENVS / stack / "bin" / "python"


def ensure_venv(stack: str, quiet: bool = True) -> Path:
    """Create the stack's venv, or refresh it when its requirements changed. Returns its python."""
    req = _requirements(stack)
    digest = hashlib.sha256(req.read_bytes()).hexdigest()
    venv = VENVS / stack
    stamp = venv / ".requirements.sha256"
    python = app_python(stack)
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return python
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    q = ["--quiet"] if quiet else []
    subprocess.run([str(python), "-m", "pip", "install", *q, "--upgrade", "pip"], check=True)
    subprocess.run([str(python), "-m", "pip", "install", *q, "-r", str(req)], check=True)
    stamp.write_text(digest)
    return python


def _app_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_", "TRACELOOP_"))}
    env.update({
        "PYTHONPATH": str(REPO_ROOT),
        "OPENAI_API_KEY": "sk-test-not-a-real-key",
        # Belt and braces against libraries that phone home or download at import.
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TRACELOOP_TELEMETRY": "false",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
        "OPENAI_AGENTS_DISABLE_TRACING": "0",
        "DO_NOT_TRACK": "1",
        "ANONYMIZED_TELEMETRY": "False",
    })
    return env


def list_combinations(stack: str) -> list[tuple[str, str]]:
    out = subprocess.run([str(app_python(stack)), str(FRAMEWORKS / stack / "app.py"), "--list"],
                         capture_output=True, text=True, check=True, env=_app_env(), cwd=REPO_ROOT)
    return [(i, s) for i, s in json.loads(out.stdout)]


async def run_app(stack: str, instrumentation: str, scenario: str, endpoint: str, openai_base_url: str,
                  conversation_id: str, exporter: str = "http-protobuf", timeout: float = 180) -> list[dict[str, Any]]:
    """Run one app scenario to completion; return its truth lines. Raises with its stderr on failure."""
    proc = await asyncio.create_subprocess_exec(
        str(app_python(stack)), str(FRAMEWORKS / stack / "app.py"),
        "--instrumentation", instrumentation, "--scenario", scenario, "--endpoint", endpoint,
        "--openai-base-url", openai_base_url, "--conversation-id", conversation_id, "--exporter", exporter,
        cwd=str(REPO_ROOT), env=_app_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        raise RuntimeError(f"{stack}/{instrumentation}/{scenario} exited {proc.returncode}:\n"
                           f"{err.decode(errors='replace')[-4000:]}")
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def capture_name(stack: str, instrumentation: str, scenario: str) -> str:
    return f"{stack}-{instrumentation}-{scenario}"


async def capture(stack: str, only: list[str] | None = None, out_dir: Path = CAPTURES) -> list[str]:
    ensure_venv(stack)
    return await write_captures(stack, list_combinations(stack), run_app, only, out_dir)


RunApp = Callable[[str, str, str, str, str, str], Awaitable[list[dict[str, Any]]]]
"""(stack, instrumentation, scenario, OTLP endpoint, fake OpenAI base URL, conversation id) -> truth rows."""


async def write_captures(stack: str, combinations: list[tuple[str, str]], run: RunApp,
                         only: list[str] | None = None, out_dir: Path = CAPTURES) -> list[str]:
    """Run each (instrumentation, scenario) app against a capture server and the fake OpenAI server;
    write its OTLP bodies and ``expected.jsonl`` (the truth) under ``out_dir/<name>``. Shared by the
    Python stacks and the TypeScript ones (``tests.frameworks.js.harness``)."""
    from tests.support.capture_server import CaptureServer
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.rag_app import ANSWERS

    written = []
    for instrumentation, scenario in combinations:
        name = capture_name(stack, instrumentation, scenario)
        if only and name not in only:
            continue
        target = out_dir / name
        if target.exists():
            shutil.rmtree(target)
        server = CaptureServer(target)
        endpoint = await server.start()
        try:
            async with FakeOpenAI(ANSWERS) as llm:
                truth = await run(stack, instrumentation, scenario, endpoint, llm.base_url or "",
                                  f"conv-{name}")
        finally:
            await server.close()
        with open(target / "expected.jsonl", "w") as fh:
            for row in truth:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{name}: {len(server.bodies)} bodies, {len(truth)} turns", file=sys.stderr)
        written.append(name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.frameworks.harness")
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("venv")
    v.add_argument("stack", choices=STACKS)
    c = sub.add_parser("capture")
    c.add_argument("stack", choices=STACKS)
    c.add_argument("--only", action="append")
    args = parser.parse_args(argv)
    if args.command == "venv":
        print(ensure_venv(args.stack, quiet=False))
    else:
        asyncio.run(capture(args.stack, args.only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
