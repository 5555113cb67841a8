"""Render the Helm chart offline with Helm 4's engine (the ``helm-python-sdk`` package bundles
it as a compiled library: no ``helm`` binary, no cluster, no network).

``render_chart`` behaves like ``helm template -f file... --set ...``: values files merge in order,
then ``values``; the chart's values.schema.json is enforced; the result is the parsed manifests.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

__all__ = ["CHART_DIR", "KUBE_VERSIONS", "OPERATOR_KINDS", "ChartRenderError", "merge_values", "render_chart",
           "render_templates", "validate_manifest"]

CHART_DIR = Path(__file__).resolve().parents[2] / "helm" / "rag-monitor"
# The chart's kubeVersion floor and the version Helm 4.2 assumes offline (.Capabilities).
KUBE_VERSIONS = ("1.30", "1.36")
# Prometheus Operator kinds: kubernetes-validate has no schema for CRDs; their metadata is
# checked here and their spec by the tests that own them (promtool for the rules).
OPERATOR_KINDS = frozenset({"ServiceMonitor", "PodMonitor", "PrometheusRule"})


class ChartRenderError(Exception):
    """Helm refused the values (schema) or a template failed; the message is Helm's."""


def merge_values(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's merge of successive values sources: maps merge key by key, anything else
    (lists included) is replaced by the later source."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = value
    return out


def _load_values(values: Mapping[str, Any] | None, values_files: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in values_files:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ChartRenderError(f"{path}: a values file must hold a mapping")
        merged = merge_values(merged, loaded)
    return merge_values(merged, values or {})


def render_templates(values: Mapping[str, Any] | None = None, values_files: Iterable[str | os.PathLike[str]] = (),
                     release: str = "rm", namespace: str = "default",
                     chart: str | os.PathLike[str] = CHART_DIR) -> dict[str, str]:
    """Template path -> rendered text (NOTES.txt included), as Helm produced it."""
    import helm_python

    merged = _load_values(values, values_files)
    try:
        with helm_python.Chart.load(chart) as loaded:
            return loaded.render(merged, name=release, namespace=namespace, is_install=True)
    except helm_python.HelmError as exc:
        raise ChartRenderError(f"helm could not render {chart}: {exc.detail}") from None


def render_chart(values: Mapping[str, Any] | None = None, values_files: Iterable[str | os.PathLike[str]] = (),
                 release: str = "rm", namespace: str = "default",
                 chart: str | os.PathLike[str] = CHART_DIR) -> list[dict[str, Any]]:
    """The rendered manifests, parsed, in template-path order (NOTES.txt and empty documents
    left out). Raises :class:`ChartRenderError` with Helm's message on failure."""
    manifests: list[dict[str, Any]] = []
    for path, text in sorted(render_templates(values, values_files, release, namespace, chart).items()):
        if path.endswith("NOTES.txt"):
            continue
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise ChartRenderError(f"{path} rendered invalid YAML: {exc}\n{text}") from None
        for doc in documents:
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise ChartRenderError(f"{path} rendered a {type(doc).__name__}, not a manifest")
            manifests.append(doc)
    return manifests


def validate_manifest(manifest: Mapping[str, Any], kube_version: str) -> None:
    """``kubernetes-validate --strict`` on one manifest (schemas bundled in the package, no
    network): unknown fields and wrong types raise ``ValueError`` naming the object and path.
    Prometheus Operator objects get their ``metadata`` checked as Kubernetes ObjectMeta."""
    import kubernetes_validate

    doc = dict(manifest)
    if doc.get("kind") in OPERATOR_KINDS and str(doc.get("apiVersion", "")).startswith("monitoring.coreos.com/"):
        doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc.get("metadata")}
    name = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
    try:
        kubernetes_validate.validate(doc, kube_version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise ValueError(f"{name} is invalid for Kubernetes {kube_version} at '{where}': {exc.message}") from None
    except kubernetes_validate.SchemaNotFoundError as exc:
        raise ValueError(f"{name}: {exc.message}") from None
