"""The chart's rendered config, with the environment its pod gets, starts the real sidecar: the
probe paths answer, and the receivers demand the bearer token from the Secret (standalone)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import load_config
from tests.support.helm import render_chart

TOKEN = "token-from-the-secret"


async def test_rendered_standalone_config_serves_probes_and_requires_the_token(tmp_path: Path) -> None:
    manifests = render_chart()
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"], encoding="utf-8")

    env = {e["name"]: e.get("value", TOKEN) for e in container["env"]}
    # Tests bind loopback and ephemeral ports, and write the store under tmp_path.
    env |= {"RAG_MONITOR_RECEIVERS__HTTP__HOST": "127.0.0.1", "RAG_MONITOR_RECEIVERS__HTTP__PORT": "0",
            "RAG_MONITOR_RECEIVERS__GRPC__HOST": "127.0.0.1", "RAG_MONITOR_RECEIVERS__GRPC__PORT": "0",
            "RAG_MONITOR_ADMIN__HOST": "127.0.0.1", "RAG_MONITOR_ADMIN__PORT": "0",
            "RAG_MONITOR_EXPORTERS__STORE__PATH": str(tmp_path / "results.sqlite3")}
    config = load_config(path, environ=env)

    sidecar = Sidecar(config, registry=CollectorRegistry())
    await sidecar.start()
    try:
        assert sidecar.admin and sidecar.http
        admin = f"http://127.0.0.1:{sidecar.admin.port}"
        probes = {p: container[p]["httpGet"]["path"] for p in ("livenessProbe", "readinessProbe")}
        otlp = f"http://127.0.0.1:{sidecar.http.port}/v1/traces"
        headers = {"Content-Type": "application/x-protobuf"}
        async with aiohttp.ClientSession() as session:
            for probe, probe_path in probes.items():
                async with session.get(admin + probe_path) as response:
                    assert response.status == 200, probe
            async with session.post(otlp, data=b"", headers=headers) as response:
                assert response.status == 401
            async with session.post(otlp, data=b"", headers=headers | {"Authorization": f"Bearer {TOKEN}"}) as response:
                assert response.status == 200
    finally:
        await sidecar.shutdown()
