"""The container recipe: the image's default configuration makes a published port reachable and
keeps the receivers behind a bearer token; compose.yaml wires an app to it. (No Docker daemon in
CI: the image's own configuration file runs here in process, bound to all interfaces, and is
reached over loopback.)"""

from __future__ import annotations

import io
import random
import re
import time
from pathlib import Path

import aiohttp
import pytest
import yaml
from opentelemetry.util.re import parse_env_headers

from monitor.config import load_config
from monitor.errors import ConfigError
from tests.support.otlp_payloads import rag_trace_spans, request
from tests.support.pipeline import running_sidecar

ROOT = Path(__file__).resolve().parents[1]
CONTAINER_CONFIG = ROOT / "monitor" / "container.yaml"
TOKEN = "c0ntainer-t0ken"


def _environ(**extra: str) -> dict[str, str]:
    # Ephemeral ports: the test must not need 4317/4318/9464 free on this machine.
    return {"RAG_MONITOR_RECEIVERS__HTTP__PORT": "0", "RAG_MONITOR_RECEIVERS__GRPC__PORT": "0",
            "RAG_MONITOR_ADMIN__PORT": "0", **extra}


def test_the_image_starts_with_the_container_config():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "COPY monitor/container.yaml /etc/rag-monitor/config.yaml" in dockerfile
    assert "RAG_MONITOR_CONFIG=/etc/rag-monitor/config.yaml" in dockerfile
    assert re.search(r'^CMD \["serve"\]$', dockerfile, re.M)
    exposed = set(re.search(r"^EXPOSE (.+)$", dockerfile, re.M).group(1).split())  # type: ignore[union-attr]
    raw = yaml.safe_load(CONTAINER_CONFIG.read_text())
    assert {str(raw["receivers"]["http"]["port"]), str(raw["receivers"]["grpc"]["port"]),
            str(raw["admin"]["port"])} == exposed
    assert {raw["receivers"]["http"]["host"], raw["receivers"]["grpc"]["host"], raw["admin"]["host"]} == {"0.0.0.0"}


def test_without_a_token_it_refuses_to_start_and_names_the_variable():
    with pytest.raises(ConfigError) as caught:
        load_config(CONTAINER_CONFIG, environ=_environ())
    assert "RAG_MONITOR_RECEIVERS__BEARER_TOKEN" in str(caught.value)
    assert load_config(CONTAINER_CONFIG, environ=_environ(RAG_MONITOR_RECEIVERS__ALLOW_UNAUTHENTICATED="true"))


async def test_with_one_token_both_receivers_listen_on_all_interfaces_behind_it(tmp_path):
    config = load_config(CONTAINER_CONFIG, environ=_environ(
        RAG_MONITOR_RECEIVERS__BEARER_TOKEN=TOKEN, RAG_MONITOR_EXPORTERS__STORE__PATH=str(tmp_path / "r.sqlite3")))
    assert config.receivers.grpc.bearer_token is not None
    assert config.receivers.grpc.bearer_token.get_secret_value() == TOKEN
    body = request(rag_trace_spans(random.Random(1), b"\x01" * 16, 4, time.time_ns())).SerializeToString()
    async with running_sidecar(config) as (sc, sink):
        assert config.receivers.http.host == "0.0.0.0"
        url = f"http://127.0.0.1:{sc.http.port}/v1/traces"
        headers = {"Content-Type": "application/x-protobuf"}
        async with aiohttp.ClientSession() as session:
            async with session.post(url, data=io.BytesIO(body), headers=headers) as r:
                assert r.status == 401
            async with session.post(url, data=io.BytesIO(body), headers={**headers, "Authorization": f"Bearer {TOKEN}"}) as r:
                assert r.status == 200
            async with session.get(f"http://127.0.0.1:{sc.admin.port}/readyz") as r:
                assert r.status == 200
        await sink.wait_turns(1)


def test_compose_file_wires_the_app_to_the_sidecar_with_the_token():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service = compose["services"]["rag-monitor"]
    assert service["build"] == "." and {p.split(":")[0] for p in service["ports"]} == {"4318", "4317", "9464"}
    # The service's variables, as compose would set them, make a valid configuration.
    resolved = {k: re.sub(r"\$\{RAG_MONITOR_TOKEN[^}]*\}", TOKEN, re.sub(r"\$\{[A-Z_]+:-\}", "", str(v)))
                for k, v in service["environment"].items()}
    env = {**_environ(), **{k: v for k, v in resolved.items() if k.startswith("RAG_MONITOR_")}}
    config = load_config(CONTAINER_CONFIG, environ=env)
    assert config.receivers.http.bearer_token.get_secret_value() == TOKEN  # type: ignore[union-attr]
    assert config.admin.bearer_token.get_secret_value() == TOKEN  # type: ignore[union-attr]
    assert not config.judge.enabled  # JUDGE_* unset: the judge tier is off, the local tier runs
    app = compose["services"]["app"]["environment"]
    assert app["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://rag-monitor:4318"
    headers = re.sub(r"\$\{RAG_MONITOR_TOKEN[^}]*\}", TOKEN, app["OTEL_EXPORTER_OTLP_HEADERS"])
    assert parse_env_headers(headers, liberal=True) == {"authorization": f"Bearer {TOKEN}"}
