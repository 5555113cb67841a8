"""Run a real TypeScript/JavaScript app (its own ``node_modules``) against the fake OpenAI server
and capture its OTLP; the JS twin of ``tests/frameworks/harness.py``.

Each stack lives in ``tests/frameworks/js/<stack>/``: ``package.json`` + ``package-lock.json``
(installed with ``npm ci``, never ``npm install``) and ``app.mjs``; the shared app code is
``common.mjs`` (Node built-ins only) and ``guard.cjs`` (preloaded: no connection leaves loopback).

App contract (``app.mjs``)::

    node app.mjs --list                  # JSON list of [instrumentation, scenario] it supports
    node app.mjs --instrumentation I --scenario S --endpoint http://127.0.0.1:P \\
         --openai-base-url http://127.0.0.1:Q/v1 --conversation-id ID --fixture FIXTURE.json

The fixture (written here from ``tests/support/rag_app.py``) holds the knowledge base and the
questions. The app exports OTLP/HTTP protobuf to ``--endpoint``, flushes before exiting, and prints
one *facts* line per turn on stdout (what it asked, retrieved and showed, and the fake server's
record of the turn's model calls); :func:`run_app` turns them into truth lines with
``tests/frameworks/truth.py`` — rag-monitor's output is never an input.

Commands::

    python -m tests.frameworks.js.harness install aisdk6      # npm ci (when the lockfile changed)
    python -m tests.frameworks.js.harness capture aisdk6      # rewrite its captures
    python -m tests.frameworks.js.harness capture aisdk6 --only aisdk6-native-generate
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.frameworks.harness import write_captures
from tests.frameworks.truth import truth_line

REPO_ROOT = Path(__file__).resolve().parents[3]
JS = Path(__file__).resolve().parent
CAPTURES = REPO_ROOT / "tests" / "testdata" / "captures"
STACKS = tuple(sorted(p.name for p in JS.iterdir() if (p / "app.mjs").is_file()))
QUESTIONS = 2  # two turns of one conversation per run

__all__ = ["STACKS", "installed", "npm_ci", "list_combinations", "run_app", "capture", "capture_name"]


def installed(stack: str) -> bool:
    """The stack's ``node_modules`` is there and was installed from its current lockfile."""
    stamp = JS / stack / "node_modules" / ".package-lock.json"
    return stamp.is_file()


def npm_ci(stack: str, quiet: bool = True) -> None:
    """``npm ci`` the stack when its lockfile changed since the last install."""
    directory = JS / stack
    digest = hashlib.sha256((directory / "package-lock.json").read_bytes()).hexdigest()
    stamp = directory / "node_modules" / ".rag-monitor-lock.sha256"
    if stamp.is_file() and stamp.read_text() == digest:
        return
    q = ["--no-audit", "--no-fund"] + (["--silent"] if quiet else [])
    subprocess.run(["npm", "ci", *q], cwd=directory, check=True)
    stamp.write_text(digest)


def _fixture() -> dict[str, Any]:
    from tests.support.rag_app import CONVERSATION_QUESTIONS, KNOWLEDGE_BASE

    return {
        "knowledge_base": [{"id": d.id, "title": d.title, "keywords": list(d.keywords), "content": d.content}
                           for d in KNOWLEDGE_BASE],
        "questions": list(CONVERSATION_QUESTIONS[:QUESTIONS]),
    }


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "OPENAI_", "TRACELOOP_", "NODE_OPTIONS"))}
    env.update({
        "NODE_OPTIONS": f"--require {JS / 'guard.cjs'}",
        "TRACELOOP_TELEMETRY": "false",
        "TRACELOOP_SYNC_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "NODE_NO_WARNINGS": "1",
    })
    return env


def list_combinations(stack: str) -> list[tuple[str, str]]:
    out = subprocess.run(["node", str(JS / stack / "app.mjs"), "--list"], capture_output=True, text=True,
                         check=True, env=_env(), cwd=JS / stack)
    return [(i, s) for i, s in json.loads(out.stdout)]


def capture_name(stack: str, instrumentation: str, scenario: str) -> str:
    return f"{stack}-{instrumentation}-{scenario}"


async def run_app(stack: str, instrumentation: str, scenario: str, endpoint: str, openai_base_url: str,
                  conversation_id: str, timeout: float = 120) -> list[dict[str, Any]]:
    """Run one app scenario to completion; return its truth lines. Raises with its stderr on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        fixture = Path(tmp) / "fixture.json"
        fixture.write_text(json.dumps(_fixture()))
        proc = await asyncio.create_subprocess_exec(
            "node", str(JS / stack / "app.mjs"), "--instrumentation", instrumentation, "--scenario", scenario,
            "--endpoint", endpoint, "--openai-base-url", openai_base_url, "--conversation-id", conversation_id,
            "--fixture", str(fixture), cwd=str(JS / stack), env=_env(),
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
    truths = []
    for line in out.decode().splitlines():
        if not line.startswith("{"):
            continue
        facts = json.loads(line)
        truths.append(truth_line(
            trace_id=facts["trace_id"], conversation_id=conversation_id, stack=stack,
            instrumentation=instrumentation, scenario=scenario, service="rag-demo-app",
            question=facts["question"], answer=facts["answer"], history=facts["history"],
            system_prompt=facts["system_prompt"], documents=facts["documents"], calls=facts["calls"],
            retrieval_query=facts["retrieval_query"], root_span_name="POST /chat"))
    return truths


async def capture(stack: str, only: list[str] | None = None, out_dir: Path = CAPTURES) -> list[str]:
    npm_ci(stack)
    return await write_captures(stack, list_combinations(stack), run_app, only, out_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.frameworks.js.harness")
    sub = parser.add_subparsers(dest="command", required=True)
    i = sub.add_parser("install")
    i.add_argument("stack", choices=STACKS)
    c = sub.add_parser("capture")
    c.add_argument("stack", choices=STACKS)
    c.add_argument("--only", action="append")
    args = parser.parse_args(argv)
    if args.command == "install":
        npm_ci(args.stack, quiet=False)
    else:
        asyncio.run(capture(args.stack, args.only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
