"""The chart's review token: from an existing Secret as RAG_MONITOR_ADMIN__REVIEW_TOKEN, never as
a plain config value, and none unless a Secret is named."""

from __future__ import annotations

import pytest

from tests.support.helm import ChartRenderError, render_chart


def _review_env(manifests: list[dict]) -> list[dict]:
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "rag-monitor"]
    return [e for e in container.get("env", []) if e["name"] == "RAG_MONITOR_ADMIN__REVIEW_TOKEN"]


def test_the_review_token_comes_from_the_named_secret_only() -> None:
    assert _review_env(render_chart()) == []
    (env,) = _review_env(render_chart({"reviewAuth": {"existingSecret": "rag-monitor-review", "secretKey": "w"}}))
    assert env["valueFrom"]["secretKeyRef"] == {"name": "rag-monitor-review", "key": "w"}


def test_a_plain_review_token_in_the_config_is_refused_by_the_schema() -> None:
    with pytest.raises(ChartRenderError, match="review_token"):
        render_chart({"config": {"admin": {"review_token": "in-the-clear"}}})
