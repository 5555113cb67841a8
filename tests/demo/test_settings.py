"""The demo's configuration: the user's config with explicit, reported changes."""

from __future__ import annotations

import pytest

from monitor.config import MonitorConfig, load_config
from monitor.demo.rag_app import REFERENCE_ATTRIBUTE
from monitor.demo.settings import demo_config
from monitor.errors import ConfigError


def test_defaults_get_every_demo_adjustment(tmp_path) -> None:
    config, notes = demo_config(load_config(None, {}), admin_port=0, scratch_dir=tmp_path)
    assert [(p.type, p.rules, p.policy_name) for p in config.sampling.policies] == [  # type: ignore[union-attr]
        ("always", [], "demo_every_turn")]
    assert config.exporters.labels == ["route", "model"]
    assert config.assembly.mapping.labels == {"route": "http.route"}
    assert config.assembly.mapping.ground_truth == [REFERENCE_ATTRIBUTE]
    assert config.assembly.decision_wait_seconds == 0.5
    assert config.exporters.store.path == str(tmp_path / "results.sqlite3")
    assert (config.receivers.http.port, config.receivers.grpc.port, config.admin.port) == (0, 0, 0)
    r = config.regressions
    assert (r.detector.step_seconds, r.refresh_seconds, r.settle_seconds) == (5.0, 1.0, 2.0)
    text = "\n".join(notes)
    for key in ("sampling.policies", "exporters.labels", "assembly.mapping.labels.route",
                "assembly.mapping.ground_truth", "assembly.decision_wait_seconds", "exporters.store.path",
                "receivers.*.port", "admin.port", "regressions.detector.step_seconds"):
        assert key in text


def test_what_the_user_set_is_kept(tmp_path) -> None:
    (tmp_path / "c.yaml").write_text(
        "receivers: {http: {port: 14318, enabled: false}, grpc: {port: 14317}}\n"
        "assembly: {decision_wait_seconds: 0.1, mapping: {labels: {route: app.route, tenant: app.tenant}}}\n"
        "exporters: {labels: [tenant], store: {path: /var/tmp/x.sqlite3}}\n"
        "admin: {port: 19464}\n"
        "regressions: {settle_seconds: 30, detector: {step_seconds: 60}}\n"
        "judge: {base_url: 'http://127.0.0.1:1/v1', model: m, api_key: sk-secret}\n")
    base = load_config(tmp_path / "c.yaml", {"RAG_MONITOR_SHUTDOWN_DEADLINE_SECONDS": "4"})
    config, notes = demo_config(base, admin_port=None, scratch_dir=tmp_path)
    assert config.receivers.http.port == 14318 and config.receivers.http.enabled
    assert config.receivers.grpc.port == 14317
    assert config.admin.port == 19464
    assert config.assembly.decision_wait_seconds == 0.1
    assert config.assembly.mapping.labels == {"route": "app.route", "tenant": "app.tenant"}
    assert config.exporters.labels == ["tenant", "route", "model"]
    assert config.exporters.store.path == "/var/tmp/x.sqlite3"
    assert config.shutdown_deadline_seconds == 4
    assert (config.regressions.detector.step_seconds, config.regressions.settle_seconds) == (60, 30)
    assert config.regressions.refresh_seconds == 1.0  # not set: the demo's
    assert config.judge.enabled and config.judge.api_key is not None
    assert config.judge.api_key.get_secret_value() == "sk-secret"
    assert "receivers.http.enabled = true" in "\n".join(notes)
    assert not any("sk-secret" in note for note in notes)


def test_a_clash_the_adjustments_create_is_a_config_error(tmp_path) -> None:
    base = MonitorConfig.model_validate({"receivers": {"http": {"port": 19000}}})
    with pytest.raises(ConfigError, match="admin.port"):
        demo_config(base, admin_port=19000, scratch_dir=tmp_path)
