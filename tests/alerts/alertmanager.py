"""A real Alertmanager (Debian package ``prometheus-alertmanager``) and a webhook receiver, both on
127.0.0.1 for tests.

``AlertmanagerServer`` runs the binary with a given config (clustering off, storage in a
temporary directory). ``WebhookReceiver`` is an aiohttp server that records every notification
Alertmanager posts to it, by path; tests wait on it for a predicate instead of sleeping.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import aiohttp
import yaml
from aiohttp import web

from tests.support.daemon import free_port, stop, wait_ready

__all__ = ["AlertmanagerServer", "Notification", "WebhookReceiver", "alertmanager_binary"]


def alertmanager_binary() -> str | None:
    return shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


@dataclass(frozen=True, slots=True)
class Notification:
    """One webhook POST: the path it was sent to and Alertmanager's JSON body (version 4)."""

    path: str
    body: Mapping[str, Any]

    def alerts(self) -> list[Mapping[str, Any]]:
        alerts: list[Mapping[str, Any]] = list(self.body.get("alerts", []))
        return alerts


class WebhookReceiver:
    """Records Alertmanager's webhook notifications; use as ``async with``."""

    def __init__(self) -> None:
        self.notifications: list[Notification] = []
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> WebhookReceiver:
        app = web.Application()
        app.router.add_post("/{receiver}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        self.notifications.append(Notification(request.path, await request.json()))
        self._changed.set()
        return web.Response(status=200)

    def firing(self) -> list[tuple[str, Mapping[str, Any]]]:
        """(path, alert) of every firing alert received so far."""
        return [(n.path, a) for n in self.notifications for a in n.alerts() if a.get("status") == "firing"]

    async def wait_for(self, ok: Callable[[list[tuple[str, Mapping[str, Any]]]], bool], timeout: float
                       ) -> list[tuple[str, Mapping[str, Any]]]:
        """Wait until ``ok(self.firing())`` holds; AssertionError with what arrived after ``timeout``."""
        async def _wait() -> None:
            while not ok(self.firing()):
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(_wait(), timeout)
        except TimeoutError:
            names = [(path, a["labels"].get("alertname"), a["labels"].get("metric")) for path, a in self.firing()]
            raise AssertionError(f"webhook: condition not met in {timeout}s; received {names}") from None
        return self.firing()


class AlertmanagerServer:
    """The Alertmanager binary with ``config`` (a parsed alertmanager.yml); ``address`` is the
    host:port Prometheus sends alerts to."""

    def __init__(self, workdir: Path, config: Mapping[str, Any]) -> None:
        self.workdir = workdir
        self.config = config
        self.port = 0
        self.log_path = workdir / "alertmanager.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> AlertmanagerServer:
        binary = alertmanager_binary()
        if binary is None:
            raise RuntimeError("alertmanager is not installed (Debian package 'prometheus-alertmanager')")
        self.workdir.mkdir(parents=True, exist_ok=True)
        config_path = self.workdir / "alertmanager.yml"
        config_path.write_text(yaml.safe_dump(dict(self.config), sort_keys=False), encoding="utf-8")
        self.port = free_port()
        with self.log_path.open("wb") as log:
            # --cluster.listen-address= switches the gossip cluster off (it would bind :9094).
            self._proc = subprocess.Popen(
                [binary, f"--config.file={config_path}", f"--storage.path={self.workdir / 'data'}",
                 f"--web.listen-address={self.address}", "--cluster.listen-address="],
                stdout=log, stderr=subprocess.STDOUT)
        assert self._proc is not None
        async with aiohttp.ClientSession() as session:
            await wait_ready(self._proc, session, f"http://{self.address}", self.log_path, "alertmanager")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await stop(self._proc)

