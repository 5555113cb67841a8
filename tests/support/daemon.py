"""Start-up and shut-down of the real Prometheus-family servers the tests run (Prometheus,
Alertmanager): a free loopback port, readiness on ``/-/ready`` with the log on early exit, and a
terminate-then-kill stop."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from pathlib import Path

import aiohttp

__all__ = ["free_port", "wait_ready", "stop"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def wait_ready(proc: subprocess.Popen[bytes], session: aiohttp.ClientSession, base_url: str, log_path: Path,
                     what: str, timeout: float = 30.0) -> None:
    """Poll ``base_url/-/ready`` until 200; raise with the server's log if it exits, or on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log_path.read_text()[-2000:]}")
        try:
            async with session.get(f"{base_url}/-/ready") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout:g} s")
        await asyncio.sleep(0.1)


async def stop(proc: subprocess.Popen[bytes] | None) -> None:
    """Terminate, then kill after 10 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        await asyncio.to_thread(proc.wait, 10)
    except subprocess.TimeoutExpired:
        proc.kill()
        await asyncio.to_thread(proc.wait)
