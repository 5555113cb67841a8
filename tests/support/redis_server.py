"""A real Redis server (Debian package ``redis-server``) on 127.0.0.1 for tests.

Started in a temporary directory on a free port, without persistence; :meth:`RedisServer.stop`
and :meth:`RedisServer.start` again on the same port let a test take Redis away mid-run. Stopped
by PID (SIGTERM, then SIGKILL after 10 s).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.support.daemon import free_port, stop

__all__ = ["RedisServer", "redis_binary"]


def redis_binary() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    def __init__(self, workdir: Path, password: str | None = None) -> None:
        self.workdir = workdir
        self.password = password
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        binary = redis_binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian package 'redis-server'; .ci/run installs it)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir), "--daemonize", "no", "--protected-mode", "yes"]
        if self.password:
            args += ["--requirepass", self.password]
        log = self.log_path.open("ab")
        self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 20
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log_path.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    reply = s.recv(64)
                if reply.startswith((b"+PONG", b"-NOAUTH")):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server not ready after 20 s")
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        await stop(self._proc)
        self._proc = None

    async def __aenter__(self) -> RedisServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
