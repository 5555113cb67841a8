"""values.schema.json: generated from the config model (never drifts), closed at every level,
and Helm rejects unknown, mistyped and secret-in-plain-text values with a message naming them."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType
from typing import Any, Iterator

import pytest
import yaml

from tests.support.helm import CHART_DIR, ChartRenderError, render_chart


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_schema", CHART_DIR / "hack" / "gen_schema.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _value_shapes(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema that describes a value (not the predicates under `not` and `if`)."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key not in ("not", "if"):
                yield from _value_shapes(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _value_shapes(value, f"{path}/{i}")


def test_checked_in_schema_is_the_generated_one() -> None:
    generated = _load_generator().render()
    assert (CHART_DIR / "values.schema.json").read_text(encoding="utf-8") == generated, (
        "values.schema.json is stale: run .venv/bin/python helm/rag-monitor/hack/gen_schema.py")


def test_every_object_with_named_properties_is_closed() -> None:
    schema = json.loads((CHART_DIR / "values.schema.json").read_text(encoding="utf-8"))
    open_objects = [
        path for path, node in _value_shapes(schema)
        if "properties" in node and "additionalProperties" not in node and "unevaluatedProperties" not in node
        # Shared alert fields, pulled in by allOf into objects closed with unevaluatedProperties.
        and path != "#/$defs/alert.common"
        # A tagged union's own `properties` only pins the tag; each branch it refers to is closed.
        and not ("allOf" in node and all("then" in branch for branch in node["allOf"]))
    ]
    assert open_objects == []


def test_config_schema_follows_the_model() -> None:
    schema = json.loads((CHART_DIR / "values.schema.json").read_text(encoding="utf-8"))
    defs = schema["$defs"]
    top = set(defs["config"]["properties"])
    from monitor.config import MonitorConfig

    assert top == set(MonitorConfig.model_fields)
    # Secrets and the chart-owned listen addresses are not settable through `config`.
    assert "api_key" not in defs["config.JudgeConfig"]["properties"]
    assert "api_key_file" in defs["config.JudgeConfig"]["properties"]
    for name in ("config.HttpReceiverConfig", "config.GrpcReceiverConfig", "config.AdminConfig"):
        assert not {"bearer_token", "host", "port"} & set(defs[name]["properties"]), name
    # URLs that may carry a password come from Secrets (fleet.redis, store); the rest of the
    # fleet and store settings are plain config.
    assert "redis_url" not in defs["config.FleetConfig"]["properties"]
    assert {"on_redis_failure", "redis_password_file", "replicas_hint"} <= set(defs["config.FleetConfig"]["properties"])
    assert "url" not in defs["config.StoreConfig"]["properties"]
    assert "path" in defs["config.StoreConfig"]["properties"]


@pytest.mark.parametrize(("values", "message"), [
    ({"replicas": 2}, "additional properties 'replicas' not allowed"),
    ({"replicaCount": "two"}, "at '/replicaCount': got string, want integer"),
    ({"mode": "daemonset"}, "at '/mode'"),
    ({"image": {"repo": "x"}}, "additional properties 'repo' not allowed"),
    ({"ports": {"metrics": 70000}}, "at '/ports/metrics': maximum"),
    # The judge key only from a Secret: a plain value is an unknown key.
    ({"config": {"judge": {"api_key": "sk-plain"}}}, "at '/config/judge': additional properties 'api_key' not allowed"),
    ({"config": {"receivers": {"http": {"bearer_token": "t"}}}},
     "at '/config/receivers/http': additional properties 'bearer_token' not allowed"),
    ({"config": {"admin": {"bearer_token": "t"}}}, "additional properties 'bearer_token' not allowed"),
    ({"judgeApiKey": {"value": "sk-plain"}}, "at '/judgeApiKey': additional properties 'value' not allowed"),
    ({"extraEnv": [{"name": "OPENAI_API_KEY", "value": "sk-plain"}]}, "at '/extraEnv/0': 'not' failed"),
    ({"extraEnv": [{"name": "RAG_MONITOR_JUDGE__API_KEY", "value": "sk-plain"}]}, "at '/extraEnv/0': 'not' failed"),
    # The fleet's Redis and store URLs (they may carry a password) only from Secrets too.
    ({"config": {"fleet": {"redis_url": "redis://:pw@redis:6379/0"}}},
     "at '/config/fleet': additional properties 'redis_url' not allowed"),
    ({"config": {"exporters": {"store": {"url": "postgresql://u:pw@pg/db"}}}},
     "at '/config/exporters/store': additional properties 'url' not allowed"),
    ({"extraEnv": [{"name": "RAG_MONITOR_FLEET__REDIS_URL", "value": "redis://:pw@redis:6379/0"}]}, "'not' failed"),
    ({"extraEnv": [{"name": "RAG_MONITOR_EXPORTERS__STORE__URL", "value": "postgresql://u:pw@pg/db"}]}, "'not' failed"),
    ({"extraEnv": [{"name": "PGPASSWORD", "value": "pw"}]}, "'not' failed"),
    ({"fleet": {"redisUrl": "redis://redis:6379/0"}}, "at '/fleet': additional properties 'redisUrl' not allowed"),
    ({"fleet": {"redis": {"existingSecret": "Redis_Secret"}}}, "at '/fleet/redis/existingSecret'"),
    ({"store": {"url": "postgresql://pg/db"}}, "at '/store': additional properties 'url' not allowed"),
    ({"config": {"fleet": {"on_redis_failure": "open"}}}, "at '/config/fleet/on_redis_failure'"),
    # Gateway values.
    ({"gateway": {"collector": {"replicas": 2}}}, "at '/gateway/collector': additional properties 'replicas' not allowed"),
    ({"gateway": {"collector": {"image": {"tag": ""}}}}, "at '/gateway/collector/image/tag'"),
    ({"gateway": {"collector": {"securityContext": {"readOnlyRootFilesytem": True}}}}, "'readOnlyRootFilesytem' not allowed"),
    # The config model's own rules: unknown keys, types, ranges, enums, tagged unions.
    ({"config": {"receivers": {"http": {"max_request_bytez": 1}}}}, "additional properties 'max_request_bytez' not allowed"),
    ({"config": {"judge": {"timeout_seconds": "soon"}}}, "at '/config/judge/timeout_seconds'"),
    ({"config": {"log_level": "TRACE"}}, "at '/config/log_level'"),
    ({"config": {"judge": {"on_budget_exhausted": "drop"}}}, "at '/config/judge/on_budget_exhausted'"),
    ({"config": {"sampling": {"policies": [{"type": "probabilistic", "rate": 1.5}]}}},
     "at '/config/sampling/policies/0/rate': maximum: got 1.5, want 1"),
    ({"config": {"sampling": {"policies": [{"type": "coin_flip"}]}}}, "at '/config/sampling/policies/0/type'"),
    # Kubernetes types are checked as Kubernetes would.
    ({"securityContext": {"readOnlyRootFilesytem": True}}, "additional properties 'readOnlyRootFilesytem' not allowed"),
    ({"resources": {"limit": {"memory": "1Gi"}}}, "additional properties 'limit' not allowed"),
    ({"tolerations": [{"key": "a", "effect": "NoSchedule", "operator": "Equal", "valu": "b"}]}, "'valu' not allowed"),
    # Alert parameters.
    ({"alerts": {"judgeErrors": {"threshold": 5}}}, "at '/alerts/judgeErrors/threshold': maximum"),
    ({"alerts": {"judgeErrors": {"windw": "5m"}}}, "at '/alerts/judgeErrors/windw'"),
    ({"alerts": {"spansDropped": {"window": "15 minutes"}}}, "at '/alerts/spansDropped/window'"),
    ({"alerts": {"seriesSelector": "{job=\"x\"}"}}, "at '/alerts/seriesSelector'"),
])
def test_invalid_values_are_rejected_with_a_message(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ChartRenderError) as caught:
        render_chart(values)
    assert "values don't meet the specifications of the schema" in str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize(("values", "message"), [
    ({"config": {"shutdown_deadline_seconds": 30}, "terminationGracePeriodSeconds": 30},
     "terminationGracePeriodSeconds (30) must exceed config.shutdown_deadline_seconds (30)"),
    ({"podDisruptionBudget": {"enabled": True, "minAvailable": 1, "maxUnavailable": 1}},
     "set minAvailable or maxUnavailable, not both"),
    ({"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 2}},
     "autoscaling.minReplicas must not exceed autoscaling.maxReplicas"),
    ({"mode": "sidecar", "autoscaling": {"enabled": True}}, "apply to mode: standalone and gateway only"),
    ({"ports": {"otlpGrpc": 9464}}, "must differ"),
    ({"mode": "gateway"}, "mode: gateway needs fleet.redis.existingSecret"),
])
def test_cross_field_rules_fail_the_render_with_a_message(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ChartRenderError) as caught:
        render_chart(values)
    assert message in str(caught.value)


def test_secret_references_and_config_pass() -> None:
    manifests = render_chart({
        "judgeApiKey": {"secretName": "openai", "secretKey": "key"},
        "extraEnv": [{"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "openai", "key": "k"}}},
                     {"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
        "config": {"judge": {"api_key_file": "/var/run/secrets/judge/key", "model": "m",
                             "base_url": "http://judge:8000/v1"},
                   "sampling": {"policies": [{"type": "composite", "mode": "all_of", "policies": [
                       {"type": "probabilistic", "rate": 0.5}, {"type": "rate_limit", "conversations_per_second": 2}]}]}},
        "global": {"imageRegistry": "ignored"},
    })
    # Accepted by the schema, and carried into the pod as references, never as secret values.
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "rag-monitor"]
    env = {e["name"]: e for e in container["env"]}
    assert env["OPENAI_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "openai", "key": "k"}}
    assert env["HTTPS_PROXY"]["value"] == "http://proxy:3128"
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"].endswith("rag-monitor")]
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert config["judge"] == {"api_key_file": "/var/run/secrets/judge/key", "model": "m",
                               "base_url": "http://judge:8000/v1"}
    assert config["sampling"]["policies"][0]["mode"] == "all_of"
