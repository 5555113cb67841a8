"""Sidecar mode as a user's chart uses it: examples/sidecar-app lists rag-monitor as a dependency
(copied into its charts/, as `helm dependency build` would) and includes the named templates."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from monitor.config import load_config
from tests.support.helm import CHART_DIR, KUBE_VERSIONS, ChartRenderError, render_chart, validate_manifest

EXAMPLE = CHART_DIR / "examples" / "sidecar-app"


@pytest.fixture
def app_chart(tmp_path: Path) -> Path:
    chart = tmp_path / "sidecar-app"
    shutil.copytree(EXAMPLE, chart)
    shutil.copytree(CHART_DIR, chart / "charts" / "rag-monitor",
                    ignore=shutil.ignore_patterns("examples", "hack", "ci", "__pycache__"))
    return chart


def _render(chart: Path, values: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    manifests = render_chart(values, release="shop", namespace="shop", chart=chart)
    assert sorted(m["kind"] for m in manifests) == ["ConfigMap", "Deployment"]
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    return deployment, config_map


def test_the_app_pod_gets_the_sidecar_container_volumes_and_labels(app_chart: Path, tmp_path: Path) -> None:
    deployment, config_map = _render(app_chart)
    for kube_version in KUBE_VERSIONS:
        validate_manifest(deployment, kube_version)
        validate_manifest(config_map, kube_version)
    pod = deployment["spec"]["template"]
    containers = {c["name"]: c for c in pod["spec"]["containers"]}
    assert list(containers) == ["app", "rag-monitor"]
    sidecar = containers["rag-monitor"]
    assert "restartPolicy" not in sidecar
    # Only the metrics port is declared: the receivers are on the pod's loopback.
    assert sidecar["ports"] == [{"name": "rag-mon-metrics", "containerPort": 9464, "protocol": "TCP"}]
    assert sidecar["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9464}
    assert sidecar["securityContext"]["readOnlyRootFilesystem"] is True
    assert sidecar["securityContext"]["runAsNonRoot"] is True
    assert {e["name"]: e.get("valueFrom") for e in sidecar["env"]}["RAG_MONITOR_JUDGE__API_KEY"] == {
        "secretKeyRef": {"name": "my-rag-app-judge", "key": "api-key"}}
    assert {e["name"]: e["value"] for e in containers["app"]["env"]}["OTEL_EXPORTER_OTLP_ENDPOINT"] == \
        "http://127.0.0.1:4318"

    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["rag-monitor-config"]["configMap"]["name"] == config_map["metadata"]["name"] == "shop-rag-monitor"
    assert {m["name"] for m in sidecar["volumeMounts"]} <= volumes.keys()
    assert pod["metadata"]["labels"]["rag-monitor.io/sidecar"] == "shop-rag-monitor"
    assert pod["metadata"]["annotations"]["checksum/rag-monitor-config"]

    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"], encoding="utf-8")
    config = load_config(path, environ={"RAG_MONITOR_JUDGE__API_KEY": "from-secret"})
    assert config.receivers.http.host == config.receivers.grpc.host == "127.0.0.1"
    assert config.receivers.http.bearer_token is None
    assert config.judge.enabled and config.judge.api_key is not None
    assert config.exporters.labels == ["route"]


def test_native_sidecar_is_a_restartable_init_container(app_chart: Path) -> None:
    deployment, _ = _render(app_chart, {"rag-monitor": {"sidecar": {"native": True}}})
    spec = deployment["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["app"]
    (init,) = spec["initContainers"]
    assert init["name"] == "rag-monitor" and init["restartPolicy"] == "Always"
    for kube_version in KUBE_VERSIONS:
        validate_manifest(deployment, kube_version)


def test_the_dependency_values_are_checked_by_the_chart_schema(app_chart: Path) -> None:
    with pytest.raises(ChartRenderError, match="additional properties 'api_key' not allowed"):
        _render(app_chart, {"rag-monitor": {"config": {"judge": {"api_key": "sk-plain"}}}})


def test_including_the_container_outside_sidecar_mode_fails_clearly(app_chart: Path) -> None:
    with pytest.raises(ChartRenderError, match="needs the rag-monitor dependency's values to set mode: sidecar"):
        render_chart({"rag-monitor": {"mode": "standalone"}}, chart=app_chart)


def test_a_fleet_of_sidecars_gets_redis_and_the_store_from_secrets(app_chart: Path, tmp_path: Path) -> None:
    deployment, config_map = _render(app_chart, {"rag-monitor": {
        "fleet": {"redis": {"existingSecret": "shop-redis", "passwordSecret": "shop-redis"}},
        "store": {"existingSecret": "shop-postgres"}}})
    for kube_version in KUBE_VERSIONS:
        validate_manifest(deployment, kube_version)
    pod = deployment["spec"]["template"]["spec"]
    (sidecar,) = [c for c in pod["containers"] if c["name"] == "rag-monitor"]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in sidecar["env"] if "valueFrom" in e}
    assert refs["RAG_MONITOR_FLEET__REDIS_URL"] == {"name": "shop-redis", "key": "redis-url"}
    assert refs["RAG_MONITOR_EXPORTERS__STORE__URL"] == {"name": "shop-postgres", "key": "url"}
    # The password Secret is a volume of the app's pod, mounted in the sidecar only.
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["rag-monitor-redis-password"]["secret"]["secretName"] == "shop-redis"
    (app,) = [c for c in pod["containers"] if c["name"] == "app"]
    assert "rag-monitor-redis-password" not in {m["name"] for m in app.get("volumeMounts", [])}

    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"], encoding="utf-8")
    config = load_config(path, environ={"RAG_MONITOR_FLEET__REDIS_URL": "redis://redis.shop:6379/0",
                                        "RAG_MONITOR_EXPORTERS__STORE__URL": "postgresql://ragmon@pg.shop/ragmon"})
    assert config.fleet.enabled and config.fleet.redis_password_file is not None
    # No replicas_hint from the chart: it cannot count the app's pods.
    assert config.fleet.replicas_hint == 1 and "replicas_hint" not in config.fleet.model_fields_set
    assert config.exporters.store.dialect == "postgresql" and "path" not in config.exporters.store.model_fields_set
