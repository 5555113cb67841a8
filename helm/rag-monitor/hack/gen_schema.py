"""Write ``values.schema.json``: the chart's closed values schema with ``config`` validated by the
JSON schema pydantic generates from ``MonitorConfig``, so the chart cannot drift from the model.

Run with the project's venv from the repository root (``--check`` exits 1 when the checked-in
file is stale, which ``tests/helm/test_schema.py`` also asserts)::

    .venv/bin/python helm/rag-monitor/hack/gen_schema.py [--check]

What changes from the pydantic schema, and why:
- secrets (``judge.api_key``, the bearer tokens) are removed: they come only from Secrets
  (``judgeApiKey``, ``receiverAuth``, ``adminAuth``), so a plain value is an unknown key; so are
  ``fleet.redis_url`` and ``exporters.store.url``, which may carry a password: they come from
  the Secrets named by ``fleet.redis`` and ``store``;
- receiver/admin ``host`` and ``port`` are removed: the chart sets them from ``mode``/``ports``;
- ``$defs`` move to the document root under a ``config.`` prefix (Helm resolves ``$ref`` against
  the root of values.schema.json); titles and nested-object defaults are dropped;
- discriminated unions (``oneOf`` + the OpenAPI-only ``discriminator``) become if/then on the
  tag, so an error names the fields of the chosen type only.
Kubernetes types the values pass through (resources, securityContext, tolerations…) are copied,
descriptions stripped, from the strict schemas kubernetes-validate bundles for
``K8S_SCHEMA_VERSION``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parent.parent
REPO = CHART.parent.parent
BASE = CHART / "hack" / "values.schema.base.yaml"
OUTPUT = CHART / "values.schema.json"
K8S_SCHEMA_VERSION = "1.30.0"
K8S_PREFIX = "io.k8s."

# (path in MonitorConfig) fields the chart owns or that must come from a Secret.
REMOVED_CONFIG_FIELDS: tuple[tuple[str, ...], ...] = (
    ("judge", "api_key"),
    ("evaluation", "content_safety", "api_key"),
    ("receivers", "bearer_token"),
    ("receivers", "http", "bearer_token"),
    ("receivers", "http", "host"),
    ("receivers", "http", "port"),
    ("receivers", "grpc", "bearer_token"),
    ("receivers", "grpc", "host"),
    ("receivers", "grpc", "port"),
    ("admin", "bearer_token"),
    ("admin", "review_token"),
    ("admin", "host"),
    ("admin", "port"),
    ("fleet", "redis_url"),
    ("exporters", "store", "url"),
)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _model_for(schema: dict[str, Any], defs: dict[str, Any], key: str) -> dict[str, Any]:
    """The object schema a property points to (``$ref``, possibly inside ``anyOf`` with null)."""
    prop = schema["properties"][key]
    candidates = [prop, *prop.get("anyOf", []), *prop.get("allOf", [])]
    for candidate in candidates:
        if "$ref" in candidate:
            return defs[_ref_name(candidate["$ref"])]
    raise KeyError(f"{key} is not a nested model")


def _remove_field(root: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...]) -> None:
    node = root
    for key in path[:-1]:
        node = _model_for(node, defs, key)
    del node["properties"][path[-1]]
    if path[-1] in node.get("required", []):
        node["required"].remove(path[-1])


def _tagged_union(node: dict[str, Any], rename: dict[str, str]) -> dict[str, Any]:
    """A pydantic discriminated union as if/then on the tag: a bad policy is then reported
    against its own type only, not as "oneOf failed" with every other type's complaints."""
    tag = node["discriminator"]["propertyName"]
    mapping = node["discriminator"]["mapping"]
    return {
        "type": "object",
        "required": [tag],
        "properties": {tag: {"enum": sorted(mapping)}},
        "allOf": [
            {"if": {"properties": {tag: {"const": value}}},
             "then": {"$ref": "#/$defs/" + rename[_ref_name(ref)]}}
            for value, ref in sorted(mapping.items())
        ],
    }


def _clean(node: Any, rename: dict[str, str]) -> Any:
    """Drop titles and object defaults, rewrite tagged unions; point refs at the prefixed defs."""
    if isinstance(node, list):
        return [_clean(item, rename) for item in node]
    if not isinstance(node, dict):
        return node
    if "discriminator" in node and "oneOf" in node:
        return _tagged_union(node, rename)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "discriminator"):
            continue
        if key == "default" and (isinstance(value, dict) or (isinstance(value, list) and any(
                isinstance(v, dict) for v in value))):
            continue
        if key == "$ref":
            out[key] = "#/$defs/" + rename[_ref_name(value)]
            continue
        # "properties" maps field names to schemas: a field may itself be called "title".
        if key == "properties":
            out[key] = {name: _clean(sub, rename) for name, sub in value.items()}
            continue
        out[key] = _clean(value, rename)
    return out


def config_defs() -> dict[str, Any]:
    """``config`` plus its ``config.*`` definitions, from MonitorConfig."""
    sys.path.insert(0, str(REPO))
    from monitor.config import MonitorConfig

    root = MonitorConfig.model_json_schema()
    defs = root.pop("$defs")
    for path in REMOVED_CONFIG_FIELDS:
        _remove_field(root, defs, path)
    rename = {name: f"config.{name}" for name in defs}
    out = {"config": _clean(root, rename)}
    out["config"]["description"] = (
        "rag-monitor's configuration (monitor/config.py) minus secrets and listen addresses")
    for name, schema in defs.items():
        out[rename[name]] = _clean(schema, rename)
    return out


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_descriptions(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "description" and isinstance(value, str):
            continue
        if key == "properties":
            out[key] = {name: _strip_descriptions(sub) for name, sub in value.items()}
            continue
        out[key] = _strip_descriptions(value)
    return out


def _refs(node: Any) -> set[str]:
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found = {_ref_name(node["$ref"])} if isinstance(node.get("$ref"), str) else set()
    for value in node.values():
        found |= _refs(value)
    return found


def k8s_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """The Kubernetes definitions ``schema`` refers to, transitively."""
    from importlib.resources import files

    source = files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/v{K8S_SCHEMA_VERSION}-local-strict/_definitions.json")
    available = json.loads(source.read_text(encoding="utf-8"))["$defs"]
    wanted = [name for name in _refs(schema) if name.startswith(K8S_PREFIX)]
    out: dict[str, Any] = {}
    while wanted:
        name = wanted.pop()
        if name in out:
            continue
        out[name] = _strip_descriptions(available[name])
        wanted.extend(ref for ref in _refs(out[name]) if ref not in out)
    return out


def build_schema() -> dict[str, Any]:
    schema: dict[str, Any] = yaml.safe_load(BASE.read_text(encoding="utf-8"))
    schema["$defs"].update(config_defs())
    schema["$defs"].update(k8s_defs(schema))
    missing = _refs(schema) - schema["$defs"].keys()
    if missing:
        raise SystemExit(f"unresolved $ref: {sorted(missing)}")
    return schema


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if values.schema.json is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is stale: run {Path(__file__).relative_to(REPO)}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
