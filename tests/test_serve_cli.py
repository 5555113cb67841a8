"""``rag-monitor serve`` as a process: ready, graceful SIGTERM, exit codes."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys

import aiohttp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def start(config: dict, tmp_path) -> asyncio.subprocess.Process:
    f = tmp_path / "c.yaml"
    f.write_text(json.dumps(config))
    # cwd: the embedded default store path is relative (rag-monitor.sqlite3).
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "monitor.cli", "serve", "-c", str(f),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                cwd=tmp_path)


async def wait_ready(port: int, proc: asyncio.subprocess.Process) -> None:
    async with aiohttp.ClientSession() as s:
        for _ in range(300):
            assert proc.returncode is None
            try:
                async with s.get(f"http://127.0.0.1:{port}/readyz") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError("not ready")


async def test_serve_starts_and_stops_on_sigterm(tmp_path):
    admin = free_port()
    proc = await start({"receivers": {"http": {"port": free_port()}, "grpc": {"port": free_port()}},
                        "admin": {"port": admin}}, tmp_path)
    await wait_ready(admin, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, err.decode()
    assert "stopped" in err.decode()


async def test_port_in_use_is_a_runtime_failure(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = await start({"receivers": {"http": {"port": port}, "grpc": {"port": free_port()}},
                            "admin": {"port": free_port()}}, tmp_path)
        _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1
    assert "cannot start" in err.decode()


async def test_an_unreadable_secret_file_is_a_config_error_naming_the_key(tmp_path):
    config = {"fleet": {"redis_url": "redis://127.0.0.1:1/0", "redis_password_file": str(tmp_path / "missing")},
              "receivers": {"http": {"port": 0}, "grpc": {"enabled": False}}, "admin": {"port": 0},
              "exporters": {"store": {"enabled": False}}}
    proc = await start(config, tmp_path)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert b"fleet.redis_password_file: cannot read" in err and b"Traceback" not in err
