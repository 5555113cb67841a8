"""A real Prometheus server (Debian package ``prometheus``) on 127.0.0.1 for tests.

Started with a temporary config that scrapes the given targets every second, exemplar storage
on, TSDB in a temporary directory. ``query`` runs PromQL over the HTTP API; ``wait_for`` polls a
query until a predicate holds (scrapes are asynchronous, so tests wait for data, not for time).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import aiohttp
import yaml

from tests.support.daemon import free_port, stop, wait_ready

__all__ = ["PrometheusServer", "prometheus_binary", "QueryError"]


class QueryError(Exception):
    pass


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


class PrometheusServer:
    def __init__(self, workdir: Path, targets: Sequence[str], *, scrape_interval: str = "1s",
                 rule_files: Sequence[Path] = (), evaluation_interval: str = "1s",
                 alertmanagers: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.alertmanagers = list(alertmanagers)  # host:port of Alertmanagers to send alerts to
        self.targets = list(targets)
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        self.rule_files = [str(p) for p in rule_files]
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._session: aiohttp.ClientSession | None = None
        self.log_path = workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> PrometheusServer:
        binary = prometheus_binary()
        if binary is None:
            raise RuntimeError("prometheus is not installed (Debian package 'prometheus'; .ci/run installs it)")
        config = {
            "global": {"scrape_interval": self.scrape_interval, "scrape_timeout": self.scrape_interval,
                       "evaluation_interval": self.evaluation_interval},
            "rule_files": self.rule_files,
            "scrape_configs": [{"job_name": "rag-monitor", "static_configs": [{"targets": self.targets}]}],
        }
        if self.alertmanagers:
            config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": self.alertmanagers}]}]}
        self.workdir.mkdir(parents=True, exist_ok=True)
        cfg_path = self.workdir / "prometheus.yml"
        cfg_path.write_text(yaml.safe_dump(config))
        self.port = free_port()
        log = self.log_path.open("wb")
        self._proc = subprocess.Popen(
            [binary, f"--config.file={cfg_path}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--enable-feature=exemplar-storage",
             "--storage.tsdb.retention.time=1h"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self._session = aiohttp.ClientSession()
        await wait_ready(self._proc, self._session, self.url, self.log_path, "prometheus")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
        await stop(self._proc)

    async def api(self, path: str, **params: str) -> Any:
        assert self._session is not None
        async with self._session.get(f"{self.url}/api/v1/{path}", params=params) as r:
            body = await r.json()
        if body.get("status") != "success":
            raise QueryError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    async def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; returns the vector (``[{"metric": {...}, "value": [t, "v"]}, …]``)."""
        data = await self.api("query", query=expr)
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    async def value(self, expr: str) -> float | None:
        result = await self.query(expr)
        if not result:
            return None
        if len(result) != 1:
            raise QueryError(f"{expr}: {len(result)} series, expected one")
        return float(result[0]["value"][1])

    async def by(self, expr: str, label: str) -> dict[str, float]:
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in await self.query(expr)}

    async def wait_for(self, expr: str, ok: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0
                       ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        last: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            last = await self.query(expr)
            if ok(last):
                return last
            await asyncio.sleep(0.25)
        raise AssertionError(f"{expr}: condition not met in {timeout}s; last result {last}")

    async def exemplars(self, expr: str, start: float, end: float) -> list[dict[str, Any]]:
        return await self.api("query_exemplars", query=expr, start=str(start), end=str(end))
