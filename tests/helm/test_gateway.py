"""Gateway mode and fleet settings: an OpenTelemetry Collector routes each trace to one replica
(loadbalancing exporter, routing_key traceID, k8s resolver on the replicas' headless Service,
with the RBAC that resolver needs), and the replicas get the fleet's Redis and store from
existing Secrets, with the store path injected only when no store URL is set (every mode)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config import load_config
from tests.support.helm import CHART_DIR, ChartRenderError, render_chart, render_templates

GATEWAY = CHART_DIR / "ci" / "gateway-values.yaml"
FLEET = {"fleet": {"redis": {"existingSecret": "redis"}}}
STAND_INS = {"RAG_MONITOR_FLEET__REDIS_URL": "redis://redis.example:6379/0",
             "RAG_MONITOR_EXPORTERS__STORE__URL": "postgresql://ragmon@postgres.example:5432/ragmon"}


def _named(manifests: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, got {[(m['kind'], m['metadata']['name']) for m in manifests]}"
    return found[0]


def _kinds(manifests: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((m["kind"], m["metadata"]["name"]) for m in manifests)


def _pod(manifests: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return _named(manifests, "Deployment", name)["spec"]["template"]


def _collector_config(manifests: list[dict[str, Any]], name: str = "rm-rag-monitor-gateway") -> dict[str, Any]:
    return yaml.safe_load(_named(manifests, "ConfigMap", name)["data"]["collector.yaml"])


def _monitor_config_text(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    return yaml.safe_load(_named(manifests, "ConfigMap", "rm-rag-monitor")["data"]["config.yaml"])


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def _secret_refs(container: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {name: e["valueFrom"]["secretKeyRef"] for name, e in _env(container).items()
            if "secretKeyRef" in e.get("valueFrom", {})}


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


@pytest.fixture(scope="module")
def gateway() -> list[dict[str, Any]]:
    return render_chart(values_files=[GATEWAY])


def test_gateway_renders_the_collector_next_to_the_replicas(gateway: list[dict[str, Any]]) -> None:
    assert _kinds(gateway) == [
        ("ConfigMap", "rm-rag-monitor"), ("ConfigMap", "rm-rag-monitor-gateway"),
        ("Deployment", "rm-rag-monitor"), ("Deployment", "rm-rag-monitor-gateway"),
        ("HorizontalPodAutoscaler", "rm-rag-monitor"),
        ("PodDisruptionBudget", "rm-rag-monitor"), ("PodDisruptionBudget", "rm-rag-monitor-gateway"),
        ("PrometheusRule", "rm-rag-monitor"),
        ("Role", "rm-rag-monitor-gateway"), ("RoleBinding", "rm-rag-monitor-gateway"),
        ("Service", "rm-rag-monitor"), ("Service", "rm-rag-monitor-gateway"), ("Service", "rm-rag-monitor-headless"),
        ("ServiceAccount", "rm-rag-monitor"), ("ServiceAccount", "rm-rag-monitor-gateway"),
        ("ServiceMonitor", "rm-rag-monitor"),
    ]
    # The replicas scale as in standalone mode: the HPA owns their count.
    assert "replicas" not in _named(gateway, "Deployment", "rm-rag-monitor")["spec"]
    assert _named(gateway, "Deployment", "rm-rag-monitor-gateway")["spec"]["replicas"] == 3


def test_collector_routes_by_trace_id_to_the_headless_service(gateway: list[dict[str, Any]]) -> None:
    config = _collector_config(gateway)
    lb = config["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    headless = _named(gateway, "Service", "rm-rag-monitor-headless")
    assert headless["spec"]["clusterIP"] == "None"
    assert lb["resolver"] == {"k8s": {"service": "rm-rag-monitor-headless.default", "ports": [4317]}}
    # The resolver's port is the replicas' OTLP/gRPC receiver (the k8s resolver dials pod IPs).
    replica = _pod(gateway, "rm-rag-monitor")["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in replica["ports"]}["otlp-grpc"] == 4317
    assert {p["name"]: p["port"] for p in headless["spec"]["ports"]}["otlp-grpc"] == 4317
    # Traces and log records (GenAI content events) both go through it; the scenario adds a backend.
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["exporters"] == ["loadbalancing", "otlp/tempo"]
    assert pipelines["logs"]["exporters"] == ["loadbalancing"]
    for pipeline in pipelines.values():
        assert pipeline["receivers"] == ["otlp"]
        assert pipeline["processors"][0] == "memory_limiter"
        assert set(pipeline["processors"]) <= config["processors"].keys()
        assert set(pipeline["exporters"]) <= config["exporters"].keys()
    assert set(config["service"]["extensions"]) == config["extensions"].keys()


def test_headless_service_selects_the_replicas_only(gateway: list[dict[str, Any]]) -> None:
    replicas = _pod(gateway, "rm-rag-monitor")["metadata"]["labels"]
    collectors = _pod(gateway, "rm-rag-monitor-gateway")["metadata"]["labels"]
    for name in ("rm-rag-monitor", "rm-rag-monitor-headless"):
        selector = _named(gateway, "Service", name)["spec"]["selector"]
        assert _selects(selector, replicas) and not _selects(selector, collectors), name
    gateway_selector = _named(gateway, "Service", "rm-rag-monitor-gateway")["spec"]["selector"]
    assert _selects(gateway_selector, collectors) and not _selects(gateway_selector, replicas)
    # The two Deployments never claim each other's pods.
    for deployment, other in (("rm-rag-monitor", collectors), ("rm-rag-monitor-gateway", replicas)):
        assert not _selects(_named(gateway, "Deployment", deployment)["spec"]["selector"]["matchLabels"], other)
    # The collector Service is where apps send OTLP.
    ports = {p["name"]: p["port"] for p in _named(gateway, "Service", "rm-rag-monitor-gateway")["spec"]["ports"]}
    assert (ports["otlp-grpc"], ports["otlp-http"]) == (4317, 4318)


def test_collector_has_rbac_to_watch_the_endpoints(gateway: list[dict[str, Any]]) -> None:
    role = _named(gateway, "Role", "rm-rag-monitor-gateway")
    granted = {(group, resource): set(rule["verbs"])
               for rule in role["rules"] for group in rule["apiGroups"] for resource in rule["resources"]}
    assert granted == {("", "endpoints"): {"get", "list", "watch"},
                       ("discovery.k8s.io", "endpointslices"): {"get", "list", "watch"}}
    binding = _named(gateway, "RoleBinding", "rm-rag-monitor-gateway")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rm-rag-monitor-gateway"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rm-rag-monitor-gateway", "namespace": "default"}]
    collector_pod = _pod(gateway, "rm-rag-monitor-gateway")["spec"]
    assert collector_pod["serviceAccountName"] == "rm-rag-monitor-gateway"
    assert collector_pod["automountServiceAccountToken"] is True
    # The replicas still never talk to the API server.
    assert _pod(gateway, "rm-rag-monitor")["spec"]["automountServiceAccountToken"] is False


def test_collector_forwards_the_receivers_token_and_requires_it(gateway: list[dict[str, Any]]) -> None:
    config = _collector_config(gateway)
    (collector,) = _pod(gateway, "rm-rag-monitor-gateway")["spec"]["containers"]
    replica = _pod(gateway, "rm-rag-monitor")["spec"]["containers"][0]
    token_ref = _secret_refs(replica)["RAG_MONITOR_RECEIVERS__GRPC__BEARER_TOKEN"]
    assert token_ref == {"name": "rag-monitor-ingest", "key": "bearer"}
    assert _secret_refs(collector)["OTLP_BEARER_TOKEN"] == token_ref
    otlp = config["exporters"]["loadbalancing"]["protocol"]["otlp"]
    assert otlp["headers"] == {"authorization": "Bearer ${env:OTLP_BEARER_TOKEN}"}
    for protocol in ("grpc", "http"):
        assert config["receivers"]["otlp"]["protocols"][protocol]["auth"] == {"authenticator": "bearertokenauth"}
    assert config["extensions"]["bearertokenauth"]["token"] == "${env:OTLP_BEARER_TOKEN}"
    # Every ${env:...} the config uses is set in the container.
    used = set(re.findall(r"\$\{env:([A-Z_]+)\}", _named(gateway, "ConfigMap", "rm-rag-monitor-gateway")["data"]["collector.yaml"]))
    assert used and used <= _env(collector).keys()


def test_collector_can_accept_otlp_without_a_token() -> None:
    manifests = render_chart({"mode": "gateway", **FLEET, "gateway": {"collector": {"requireToken": False}}})
    config = _collector_config(manifests)
    assert "bearertokenauth" not in config["extensions"] and "bearertokenauth" not in config["service"]["extensions"]
    assert "auth" not in config["receivers"]["otlp"]["protocols"]["grpc"]
    # The replicas still demand theirs.
    assert config["exporters"]["loadbalancing"]["protocol"]["otlp"]["headers"]["authorization"].startswith("Bearer ")


def test_collector_pod_is_hardened_and_pinned(gateway: list[dict[str, Any]]) -> None:
    pod = _pod(gateway, "rm-rag-monitor-gateway")
    (container,) = pod["spec"]["containers"]
    image, _, tag = container["image"].rpartition(":")
    assert image == "otel/opentelemetry-collector-contrib" and re.fullmatch(r"\d+\.\d+\.\d+", tag)
    assert container["args"] == ["--config=/etc/otelcol/collector.yaml"]
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert container["readinessProbe"]["httpGet"]["port"] == "health"
    health = _collector_config(gateway)["extensions"]["health_check"]["endpoint"]
    assert health.endswith(":" + str({p["name"]: p["containerPort"] for p in container["ports"]}["health"]))
    assert pod["metadata"]["annotations"]["checksum/collector-config"]


def test_replicas_get_the_fleet_settings_from_the_secrets(gateway: list[dict[str, Any]], tmp_path: Path) -> None:
    pod = _pod(gateway, "rm-rag-monitor")
    replica = pod["spec"]["containers"][0]
    refs = _secret_refs(replica)
    assert refs["RAG_MONITOR_FLEET__REDIS_URL"] == {"name": "rag-monitor-redis", "key": "url"}
    assert refs["RAG_MONITOR_EXPORTERS__STORE__URL"] == {"name": "rag-monitor-postgres", "key": "url"}
    assert refs["PGPASSWORD"] == {"name": "rag-monitor-postgres", "key": "password"}
    # The Redis password is a mounted file the config names (never an env value, never the ConfigMap).
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts = {m["name"]: m for m in replica["volumeMounts"]}
    assert volumes["rag-monitor-redis-password"]["secret"] == {
        "secretName": "rag-monitor-redis", "items": [{"key": "password", "path": "password"}]}
    assert mounts["rag-monitor-redis-password"]["readOnly"] is True
    config_text = _monitor_config_text(gateway)
    assert config_text["fleet"]["redis_password_file"] == mounts["rag-monitor-redis-password"]["mountPath"] + "/password"
    store = config_text.get("exporters", {}).get("store", {})
    assert "redis_url" not in config_text["fleet"] and "url" not in store
    # No store path next to the URL: the config model refuses both.
    assert "path" not in store

    # The config the replica loads, with the Secrets' values in its environment.
    path = tmp_path / "config.yaml"
    path.write_text(_named(gateway, "ConfigMap", "rm-rag-monitor")["data"]["config.yaml"], encoding="utf-8")
    env = {name: STAND_INS.get(name, "secret") for name in _env(replica)}
    config = load_config(path, environ=env)
    assert config.fleet.enabled and config.fleet.url() == STAND_INS["RAG_MONITOR_FLEET__REDIS_URL"]
    assert config.fleet.on_redis_failure == "closed" and config.fleet.key_prefix == "shop"
    # The HPA may grow the fleet to maxReplicas: the conservative share of the budget at start.
    assert config.fleet.replicas_hint == 8
    assert config.exporters.store.dialect == "postgresql"


@pytest.mark.parametrize("mode", ["standalone", "sidecar", "gateway"])
def test_store_path_is_injected_only_without_a_store_url(mode: str) -> None:
    base = {"mode": mode, **FLEET}
    plain = _monitor_config_text(render_chart(base))
    assert plain["exporters"]["store"]["path"] == "/var/lib/rag-monitor/results.sqlite3"
    with_url = _monitor_config_text(render_chart({**base, "store": {"existingSecret": "pg"}}))
    assert "store" not in with_url.get("exporters", {})
    # The user's other store settings stay, still without a path.
    tuned = _monitor_config_text(render_chart({**base, "store": {"existingSecret": "pg"},
                                               "config": {"exporters": {"store": {"max_age_hours": 24}}}}))
    assert tuned["exporters"]["store"] == {"max_age_hours": 24}


def test_replicas_hint_follows_the_replica_count_unless_set() -> None:
    assert _monitor_config_text(render_chart({**FLEET, "replicaCount": 4}))["fleet"] == {"replicas_hint": 4}
    hpa = {**FLEET, "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 9}}
    assert _monitor_config_text(render_chart(hpa))["fleet"] == {"replicas_hint": 9}
    mine = _monitor_config_text(render_chart({**hpa, "config": {"fleet": {"replicas_hint": 3}}}))
    assert mine["fleet"] == {"replicas_hint": 3}
    # A sidecar's fleet is its app's pods, which this chart cannot count; fleet off: nothing added.
    assert "fleet" not in _monitor_config_text(render_chart({"mode": "sidecar", **FLEET}))
    assert "fleet" not in _monitor_config_text(render_chart({"replicaCount": 4}))


def test_fleet_in_standalone_mode_without_the_gateway() -> None:
    manifests = render_chart({**FLEET, "replicaCount": 3, "store": {"existingSecret": "pg", "secretKey": "dsn"}})
    assert not [m for m in manifests if m["metadata"]["name"].endswith("-gateway")]
    refs = _secret_refs(_pod(manifests, "rm-rag-monitor")["spec"]["containers"][0])
    assert refs["RAG_MONITOR_FLEET__REDIS_URL"] == {"name": "redis", "key": "redis-url"}
    assert refs["RAG_MONITOR_EXPORTERS__STORE__URL"] == {"name": "pg", "key": "dsn"}
    assert "PGPASSWORD" not in refs


def test_fleet_off_by_default_adds_nothing() -> None:
    manifests = render_chart()
    replica = _pod(manifests, "rm-rag-monitor")["spec"]["containers"][0]
    assert not {"RAG_MONITOR_FLEET__REDIS_URL", "RAG_MONITOR_EXPORTERS__STORE__URL", "PGPASSWORD"} & _env(replica).keys()
    assert "rag-monitor-redis-password" not in {v["name"] for v in _pod(manifests, "rm-rag-monitor")["spec"]["volumes"]}


@pytest.mark.parametrize(("values", "message"), [
    ({"mode": "gateway"}, "mode: gateway needs fleet.redis.existingSecret"),
    ({"mode": "gateway", "store": {"existingSecret": "pg"}}, "a fleet without Redis is not a fleet"),
    ({"store": {"existingSecret": "pg"}, "config": {"exporters": {"store": {"path": "/var/lib/rag-monitor/x.db"}}}},
     "remove config.exporters.store.path (url and path exclude each other)"),
    ({"fleet": {"redis": {"passwordSecret": "redis"}}}, "fleet.redis.passwordSecret needs fleet.redis.existingSecret"),
    ({"config": {"fleet": {"redis_password_file": "/run/redis"}}},
     "config.fleet.redis_password_file needs fleet.redis.existingSecret"),
    ({"fleet": {"redis": {"existingSecret": "redis", "passwordSecret": "redis"}},
      "config": {"fleet": {"redis_password_file": "/run/redis"}}}, "not both"),
    ({"store": {"passwordSecret": "pg"}}, "store.passwordSecret needs store.existingSecret"),
])
def test_fleet_rules_fail_the_render_with_a_message(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ChartRenderError) as caught:
        render_chart(values)
    assert message in str(caught.value)


def test_notes_send_apps_to_the_collector() -> None:
    notes = render_templates({"mode": "gateway", **FLEET})["rag-monitor/templates/NOTES.txt"]
    assert "rm-rag-monitor-gateway.default.svc:4317" in notes and "Authorization: Bearer" in notes
    assert "each replica keeps its results in its own SQLite file" in notes
    notes = render_templates(values_files=[GATEWAY])["rag-monitor/templates/NOTES.txt"]
    assert "every replica's /api and page show the fleet" in notes
