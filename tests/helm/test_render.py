"""The chart renders for its default values and every ``ci/*.yaml`` scenario; every manifest
passes ``kubernetes-validate --strict``; the workload is hardened as the issue asks; the
ConfigMap is a config rag-monitor itself accepts, with the secrets the env vars supply."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config import load_config
from tests.support.helm import (CHART_DIR, KUBE_VERSIONS, ChartRenderError, render_chart, render_templates,
                                validate_manifest)

SCENARIOS = {"default": None, **{p.name: p for p in sorted((CHART_DIR / "ci").glob("*.yaml"))}}
# What the Secrets behind URL-valued env vars hold (a URL the config model accepts).
SECRET_STAND_INS = {"RAG_MONITOR_FLEET__REDIS_URL": "redis://redis.example:6379/0",
                    "RAG_MONITOR_EXPORTERS__STORE__URL": "postgresql://ragmon@postgres.example:5432/ragmon"}


def _scenario(name: str) -> list[dict[str, Any]]:
    path = SCENARIOS[name]
    return render_chart(values_files=[path] if path else ())


def _one(manifests: list[dict[str, Any]], kind: str, name_suffix: str = "") -> dict[str, Any]:
    found = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"].endswith(name_suffix)]
    assert len(found) == 1, f"expected one {kind}*{name_suffix}, got {[m['metadata']['name'] for m in found]}"
    return found[0]


def _container(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    pod = _one(manifests, "Deployment", "rag-monitor")["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "rag-monitor"]
    return container


def _config(manifests: list[dict[str, Any]], tmp_path: Path, env: dict[str, str]) -> Any:
    """Load the rendered config file the way the container does (-c file + env)."""
    cm = _one(manifests, "ConfigMap", "rag-monitor")
    path = tmp_path / "config.yaml"
    path.write_text(cm["data"]["config.yaml"], encoding="utf-8")
    return load_config(path, environ=env)


def _secret_env(container: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})}


def test_scenarios_are_found() -> None:
    assert {"standalone-full-values.yaml", "sidecar-values.yaml", "gateway-values.yaml"} <= SCENARIOS.keys()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_manifest_passes_strict_kubernetes_validation(scenario: str, kube_version: str) -> None:
    manifests = _scenario(scenario)
    assert manifests
    for manifest in manifests:
        validate_manifest(manifest, kube_version)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_helm_lint_reports_no_warning(scenario: str) -> None:
    import helm_python

    path = SCENARIOS[scenario]
    values = yaml.safe_load(path.read_text(encoding="utf-8")) if path else None
    report = helm_python.lint(CHART_DIR, values, strict=True, kube_version="v" + KUBE_VERSIONS[0] + ".0")
    # Severity 1 is informational ("icon is recommended"); 2 warning, 3 error.
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []


def test_strict_validation_catches_a_misspelt_field() -> None:
    deployment = _one(render_chart(), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(ValueError, match="readinesProbe"):
        validate_manifest(deployment, KUBE_VERSIONS[0])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_config_map_is_a_config_rag_monitor_accepts(scenario: str, tmp_path: Path) -> None:
    manifests = _scenario(scenario)
    # Env vars with literal values as the pod gets them; secret refs get stand-in values.
    env = {}
    pods = [m["spec"]["template"]["spec"] for m in manifests if m["kind"] == "Deployment"]
    containers = [c for pod in pods for c in pod["containers"] if c["name"] == "rag-monitor"]
    for container in containers:
        for e in container.get("env", []):
            env[e["name"]] = e.get("value", SECRET_STAND_INS.get(e["name"], f"secret-from-{e['name']}"))
    config = _config(manifests, tmp_path, env)
    if containers:  # standalone, gateway: the bearer token env vars land on both receivers
        assert config.receivers.http.bearer_token is not None
        assert config.receivers.grpc.bearer_token is not None
        assert config.receivers.http.host == config.receivers.grpc.host == "0.0.0.0"
    else:
        assert config.receivers.http.host == config.receivers.grpc.host == "127.0.0.1"
    assert config.admin.host == "0.0.0.0"
    if "RAG_MONITOR_EXPORTERS__STORE__URL" in env:  # url and path exclude each other
        assert config.exporters.store.url is not None and "path" not in config.exporters.store.model_fields_set
    else:
        assert config.exporters.store.path.startswith("/var/lib/rag-monitor/")
    assert config.fleet.enabled == ("RAG_MONITOR_FLEET__REDIS_URL" in env)


def test_default_standalone_workload_is_hardened() -> None:
    manifests = render_chart()
    assert {m["kind"] for m in manifests} == {"ConfigMap", "Deployment", "Secret", "Service", "ServiceAccount"}
    deployment = _one(manifests, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = _container(manifests)

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is False
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["runAsNonRoot"] is True
    assert sc["capabilities"]["drop"] == ["ALL"]

    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9464}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9464}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "otlp-grpc": 4317, "otlp-http": 4318, "metrics": 9464}
    assert container["args"] == ["serve", "-c", "/etc/rag-monitor/config.yaml"]
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]

    # The writable paths are volumes; the store lives on one of them.
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/var/lib/rag-monitor"]["name"]]
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    assert mounts["/etc/rag-monitor"]["readOnly"] is True
    assert volumes[mounts["/etc/rag-monitor"]["name"]]["configMap"]["name"] == "rm-rag-monitor"

    # Longer than the default shutdown deadline (10 s), so the drain can finish.
    assert pod["terminationGracePeriodSeconds"] > 10
    assert deployment["spec"]["replicas"] == 1


def test_service_exposes_otlp_and_metrics() -> None:
    service = _one(render_chart(), "Service")
    assert {p["name"]: (p["port"], p["targetPort"]) for p in service["spec"]["ports"]} == {
        "otlp-grpc": (4317, "otlp-grpc"), "otlp-http": (4318, "otlp-http"), "metrics": (9464, "metrics")}
    deployment = _one(render_chart(), "Deployment")
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_receiver_token_comes_from_the_generated_secret_by_default() -> None:
    manifests = render_chart()
    secret = _one(manifests, "Secret")
    refs = _secret_env(_container(manifests))
    for name in ("RAG_MONITOR_RECEIVERS__HTTP__BEARER_TOKEN", "RAG_MONITOR_RECEIVERS__GRPC__BEARER_TOKEN"):
        assert refs[name] == {"name": secret["metadata"]["name"], "key": "token"}
    assert secret["data"]["token"]
    # No judge key and no admin token unless a Secret is named.
    assert "RAG_MONITOR_JUDGE__API_KEY" not in refs and "RAG_MONITOR_ADMIN__BEARER_TOKEN" not in refs


def test_secrets_come_only_from_the_referenced_secrets() -> None:
    manifests = render_chart({"dashboards": {"enabled": False}},
                             values_files=[CHART_DIR / "ci" / "standalone-full-values.yaml"])
    container = _container(manifests)
    assert _secret_env(container) == {
        "RAG_MONITOR_RECEIVERS__HTTP__BEARER_TOKEN": {"name": "rag-monitor-ingest", "key": "bearer"},
        "RAG_MONITOR_RECEIVERS__GRPC__BEARER_TOKEN": {"name": "rag-monitor-ingest", "key": "bearer"},
        "RAG_MONITOR_ADMIN__BEARER_TOKEN": {"name": "rag-monitor-admin", "key": "token"},
        "RAG_MONITOR_JUDGE__API_KEY": {"name": "openai", "key": "api-key"},
    }
    # An existing Secret named: the chart creates none, and no secret text is in any manifest.
    assert not [m for m in manifests if m["kind"] == "Secret"]
    config_text = _one(manifests, "ConfigMap", "rag-monitor")["data"]["config.yaml"]
    assert "api_key" not in config_text and "bearer_token" not in config_text


def test_grace_period_exceeds_the_configured_shutdown_deadline() -> None:
    pod = _one(render_chart({"config": {"shutdown_deadline_seconds": 25}, "terminationGracePeriodSeconds": 40}),
               "Deployment")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 40
    with pytest.raises(ChartRenderError, match="terminationGracePeriodSeconds .* must exceed config.shutdown_deadline_seconds"):
        render_chart({"config": {"shutdown_deadline_seconds": 30}})


def test_autoscaling_without_targets_leaves_the_kubernetes_default() -> None:
    hpa = _one(render_chart({"autoscaling": {"enabled": True, "targetCPUUtilizationPercentage": 0}}),
               "HorizontalPodAutoscaler")
    assert "metrics" not in hpa["spec"]


def test_autoscaling_pdb_and_headless_service() -> None:
    manifests = render_chart({"autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 5},
                              "podDisruptionBudget": {"enabled": True}, "service": {"headless": True}})
    hpa = _one(manifests, "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "rm-rag-monitor"
    assert "replicas" not in _one(manifests, "Deployment")["spec"]  # the HPA owns it
    assert _one(manifests, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    headless = _one(manifests, "Service", "-headless")
    assert headless["spec"]["clusterIP"] == "None"
    assert {p["name"] for p in headless["spec"]["ports"]} == {"otlp-grpc", "otlp-http"}
    monitor = _one(render_chart({"serviceMonitor": {"enabled": True}, "service": {"headless": True}}), "ServiceMonitor")
    # Scrape the main Service only, or every pod would be scraped twice.
    assert {"key": "rag-monitor.io/headless", "operator": "DoesNotExist"} in monitor["spec"]["selector"]["matchExpressions"]


def test_service_monitor_keeps_the_metrics_service_label() -> None:
    monitor = _one(render_chart({"serviceMonitor": {"enabled": True, "interval": "15s"}}), "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint == {"port": "metrics", "path": "/metrics", "interval": "15s", "honorLabels": True}
    assert monitor["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "rag-monitor",
                                                          "app.kubernetes.io/instance": "rm"}


def test_sidecar_mode_renders_no_workload_of_its_own() -> None:
    manifests = render_chart(values_files=[CHART_DIR / "ci" / "sidecar-values.yaml"])
    assert {m["kind"] for m in manifests} == {"ConfigMap", "PodMonitor", "PrometheusRule"}
    pod_monitor = _one(manifests, "PodMonitor")
    assert pod_monitor["spec"]["selector"]["matchLabels"] == {"rag-monitor.io/sidecar": "rm-rag-monitor"}
    assert pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] == "rag-mon-metrics"


def test_dashboard_config_map_is_labelled_for_the_grafana_sidecar(tmp_path: Path) -> None:
    # A copy of the chart with a stand-in dashboard, so this holds whatever dashboards/ holds.
    chart = tmp_path / "rag-monitor"
    shutil.copytree(CHART_DIR, chart, ignore=shutil.ignore_patterns("examples", "hack", "ci", "dashboards"))
    (chart / "dashboards").mkdir()
    (chart / "dashboards" / "rag-monitor.json").write_text('{"title": "rag-monitor", "panels": []}\n')
    manifests = render_chart({"dashboards": {"enabled": True, "namespace": "monitoring"}}, chart=chart)
    cm = _one(manifests, "ConfigMap", "-dashboards")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["data"] == {"rag-monitor.json": '{"title": "rag-monitor", "panels": []}'}
    relabelled = render_chart({"dashboards": {"enabled": True, "labels": {"dashboards": "rag"}}}, chart=chart)
    assert _one(relabelled, "ConfigMap", "-dashboards")["metadata"]["labels"]["dashboards"] == "rag"
    (chart / "dashboards" / "rag-monitor.json").unlink()
    with pytest.raises(ChartRenderError, match="no dashboards/\\*.json"):
        render_chart({"dashboards": {"enabled": True}}, chart=chart)


def test_the_shipped_dashboard_is_what_the_config_map_holds() -> None:
    cm = _one(render_chart({"dashboards": {"enabled": True}}), "ConfigMap", "-dashboards")
    for path in (CHART_DIR / "dashboards").glob("*.json"):
        assert cm["data"][path.name] == path.read_text(encoding="utf-8").rstrip("\n")


def test_notes_tell_how_to_send_spans() -> None:
    notes = render_templates()["rag-monitor/templates/NOTES.txt"]
    assert "rm-rag-monitor.default.svc:4317" in notes and "Authorization: Bearer" in notes
    sidecar_notes = render_templates({"mode": "sidecar"})["rag-monitor/templates/NOTES.txt"]
    assert 'include "rag-monitor.sidecar.container"' in sidecar_notes
