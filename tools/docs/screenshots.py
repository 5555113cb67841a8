"""Regenerate the documentation's screenshots from the demo, never by hand.

    python -m tools.docs.screenshots [--out docs/assets]

Runs ``rag-monitor demo`` (the sidecar, the sample RAG app and its scripted regression) for
``--duration`` seconds with the regression a third of the way in, the judge tier on against the
scripted OpenAI-compatible judge of the tests (tests/support/judge_server.py, on 127.0.0.1: no
API key, no cost; its scores are schema-valid placeholders, so the judge rows show the page's
layout, not a finding), then loads the status page in headless Chromium (the machinery of
tests/admin/dom.py) and saves ``status-page.png``. What the
picture shows — thresholds, the local metrics, the defaults — is therefore what the code does
today. Needs the Debian ``chromium`` package (.ci/run installs it); about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
import tempfile
from pathlib import Path

from tests.admin.dom import dump_dom
from tests.support.judge_server import JudgeServer, schema_reply

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def status_page(out: Path, duration: float) -> Path:
    """Run the demo, screenshot its status page after the regression, stop it; the PNG's path."""
    port = _free_port()
    async with JudgeServer(default=schema_reply()) as judge:
        with tempfile.TemporaryDirectory(prefix="rag-monitor-shot-") as scratch:
            config = Path(scratch) / "judge.yaml"
            config.write_text(f"judge: {{base_url: '{judge.base_url}', model: demo-judge}}\n")
            return await _shoot(out, duration, port, config)


async def _shoot(out: Path, duration: float, port: int, config: Path) -> Path:
    demo = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "monitor.cli", "demo", "-c", str(config), "--duration", str(duration),
        "--regression-at", str(duration / 3), "--admin-port", str(port), "--linger", "120", "--rate", "10",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, cwd=ROOT)
    try:
        await asyncio.sleep(duration + 2)  # the run and its final summary; the page lingers
        out.mkdir(parents=True, exist_ok=True)
        target = out / "status-page.png"
        with tempfile.TemporaryDirectory(prefix="rag-monitor-shot-") as profile:
            await dump_dom(f"http://127.0.0.1:{port}/", Path(profile), screenshot=target)
        return target
    finally:
        if demo.returncode is None:
            demo.send_signal(signal.SIGTERM)
        await asyncio.wait_for(demo.wait(), 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "assets")
    parser.add_argument("--duration", type=float, default=45.0)
    args = parser.parse_args()
    print(asyncio.run(status_page(args.out, args.duration)))


if __name__ == "__main__":
    main()
