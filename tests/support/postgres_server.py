"""A real PostgreSQL server for tests: ``initdb`` in a temporary directory, ``postgres`` on a free
127.0.0.1 port with its unix socket in that directory, trust authentication, stopped by PID.

PostgreSQL refuses to run as root: when the tests run as uid 0 the directory is given to the
``postgres`` user and both programs run as that user. The binaries are found by glob under
``/usr/lib/postgresql/*/bin`` (Debian's layout), not on ``PATH``. Readiness is read from the
server's log ("ready to accept connections"), not polled with sleeps.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

__all__ = ["PostgresServer", "find_binary", "postgres_server", "postgres_url"]

_USER = "ragmon"
_READY = b"ready to accept connections"


def find_binary(name: str) -> str:
    """The newest Debian PostgreSQL's ``name`` (initdb, postgres)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if not found:
        raise FileNotFoundError(f"no /usr/lib/postgresql/*/bin/{name}: install Debian's postgresql")
    return found[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One cluster in a temporary directory; :meth:`start` / :meth:`stop` may alternate (same
    port, same data), :meth:`close` removes everything."""

    def __init__(self) -> None:
        self._as_postgres = os.getuid() == 0
        # Under /tmp itself: pytest's tmp_path lives in a 0700 directory the postgres user cannot enter.
        self.root = Path(tempfile.mkdtemp(prefix="rag-monitor-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "run"
        self.socket_dir.mkdir()
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            for path in (self.root, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log = self.root / "postgres.log"
        self._run([find_binary("initdb"), "-D", str(self.data), "-U", _USER, "-A", "trust", "--no-sync",
                   "-E", "UTF8", "--locale=C.UTF-8"])

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(argv, capture_output=True, timeout=120, user="postgres" if self._as_postgres else None)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{_USER}@127.0.0.1:{self.port}/{dbname}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 60.0) -> None:
        """Start the server and return once it accepts connections."""
        if self.running:
            return
        argv = [find_binary("postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.socket_dir),
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
                "-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "logging_collector=off"]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   user="postgres" if self._as_postgres else None)
        assert process.stderr is not None
        seen = b""
        deadline = time.monotonic() + timeout
        while _READY not in seen:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([process.stderr], [], [], max(0.0, left))
            chunk = os.read(process.stderr.fileno(), 65536) if readable else b""
            if not chunk:  # exited, or the deadline passed
                process.kill()
                process.wait()
                raise RuntimeError(f"postgres did not start: {seen.decode(errors='replace')[-2000:]}")
            seen += chunk
        # Keep reading its log in the background, or a full pipe would block the server.
        self._process = process
        with open(self._log, "ab") as log:
            self._drain = subprocess.Popen(["cat"], stdin=process.stderr, stdout=log)

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT) of the server started here, by its PID."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGINT)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        self._drain.wait(timeout)
        if process.stderr is not None:
            process.stderr.close()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)


# ---------------------------------------------------------------------------------------------
# Pytest fixtures (import them into a test module): one server per session, a database per test.

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh database on the session's server (started again if a test stopped it)."""
    postgres_server.start()
    return postgres_server.create_database(f"test_{os.getpid()}_{next(_databases)}")
