"""The exporters section of the config: errors name the key."""

from __future__ import annotations

import pytest

from exporters.config import parse_duration
from monitor.config import load_config
from monitor.errors import ConfigError


def _load(**env: str):
    return load_config(environ={f"RAG_MONITOR_{k}": v for k, v in env.items()})


def test_defaults() -> None:
    cfg = _load()
    assert cfg.exporters.window_seconds() == (("5m", 300.0), ("1h", 3600.0))
    assert cfg.exporters.labels == [] and cfg.exporters.store.enabled
    assert not cfg.exporters.otlp_metrics.enabled and cfg.exporters.jsonl.path is None


@pytest.mark.parametrize(("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("2d", 172800)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("env", "message"), [
    ({"EXPORTERS__DEFECT_RATE_WINDOWS": "[5m, 5min]"}, "exporters.defect_rate_windows"),
    ({"EXPORTERS__DEFECT_RATE_WINDOWS": "[5m, 300s]"}, "listed twice"),
    ({"EXPORTERS__DEFECT_RATE_WINDOWS": "[1s, 7d]"}, "ratio"),
    ({"EXPORTERS__LABELS": "[trace_id]"}, "cannot be a label"),
    ({"EXPORTERS__LABELS": "[route-name]"}, "not a valid Prometheus label name"),
    ({"EXPORTERS__LABELS": "[route]"}, "exporters.labels: 'route' has no source"),
    ({"EXPORTERS__MAX_LABEL_VALUES": "0"}, "exporters.max_label_values"),
    ({"EXPORTERS__STORE__MAX_AGE_HOURS": "-1"}, "exporters.store.max_age_hours"),
    ({"EXPORTERS__OTLP_METRICS__PROTOCOL": "http/json"}, "exporters.otlp_metrics.protocol"),
    ({"ADMIN__BEARER_TOKN": "x"}, "admin.bearer_tokn"),
])
def test_errors_name_the_field(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(**env)
    assert message in str(err.value)


def test_mapped_label_is_accepted_and_secret_is_hidden() -> None:
    cfg = _load(ASSEMBLY__MAPPING__LABELS="{route: http.route}", EXPORTERS__LABELS="[route, model]",
                ADMIN__BEARER_TOKEN="s3cret-token")
    assert cfg.exporters.labels == ["route", "model"]
    assert "s3cret-token" not in repr(cfg)
