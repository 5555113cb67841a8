from __future__ import annotations

import subprocess
import sys

import pytest

from monitor.config import load_config
from pydantic import ValidationError
from monitor.errors import ConfigError


def test_defaults_need_no_file_and_bind_loopback():
    c = load_config(environ={})
    assert (c.receivers.http.host, c.receivers.http.port) == ("127.0.0.1", 4318)
    assert (c.receivers.grpc.host, c.receivers.grpc.port) == ("127.0.0.1", 4317)
    assert c.admin.port == 9464
    assert c.receivers.http.max_request_bytes == 64 * 1024 * 1024


def test_env_overrides_file_values(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("receivers:\n  http:\n    port: 5000\nassembly:\n  mapping:\n    labels: {route: http.route}\n")
    c = load_config(f, environ={"RAG_MONITOR_RECEIVERS__HTTP__PORT": "6000",
                                "RAG_MONITOR_ASSEMBLY__MAPPING__QUESTION": "[app.q, app.question]"})
    assert c.receivers.http.port == 6000
    assert c.assembly.mapping.question == ["app.q", "app.question"]
    assert c.assembly.mapping.labels == {"route": "http.route"}


@pytest.mark.parametrize("yaml_text,key", [
    ("receivers:\n  htp: {}\n", "receivers.htp"),
    ("assembly:\n  decision_wait_seconds: -1\n", "assembly.decision_wait_seconds"),
    ("receivers:\n  http:\n    port: 70000\n", "receivers.http.port"),
    ("admin:\n  port: 4318\n", "admin.port"),
])
def test_invalid_keys_are_named(tmp_path, yaml_text, key):
    f = tmp_path / "c.yaml"
    f.write_text(yaml_text)
    with pytest.raises(ConfigError) as err:
        load_config(f, environ={})
    assert key in str(err.value)


def test_env_errors_name_the_variable():
    with pytest.raises(ConfigError) as err:
        load_config(environ={"RAG_MONITOR_ASSEMBLY__MAX_PENDING_TRACES": "lots"})
    assert "assembly.max_pending_traces" in str(err.value)
    assert "RAG_MONITOR_ASSEMBLY__MAX_PENDING_TRACES" in str(err.value)


def test_secrets_are_redacted(tmp_path):
    c = load_config(environ={"RAG_MONITOR_RECEIVERS__HTTP__BEARER_TOKEN": "hunter2"})
    assert c.receivers.http.bearer_token.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(c) and "hunter2" not in c.model_dump_json()


def test_validate_command_exit_codes(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("recievers: {}\n")
    r = subprocess.run([sys.executable, "-m", "monitor.cli", "validate", "-c", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "recievers" in r.stderr and "unknown key" in r.stderr
    good = tmp_path / "good.yaml"
    good.write_text("forward:\n  endpoint: http://collector:4318\n")
    r = subprocess.run([sys.executable, "-m", "monitor.cli", "validate", "-c", str(good)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "monitor.cli", "validate", "-c", str(tmp_path / "missing.yaml")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_every_yaml_example_in_the_readme_and_the_docs_is_a_valid_config(tmp_path):
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    # The config examples of the README and of the site's guides (docs/fleet.md and docs/store.md
    # show fragments of chart values and compose files, not sidecar configs).
    pages = [root / "README.md", root / "docs" / "configuration.md", *sorted((root / "docs" / "concepts").glob("*.md")),
             *sorted((root / "docs" / "guides").glob("*.md"))]
    readme = "".join(p.read_text() for p in pages)
    blocks = re.findall(r"```yaml\n(.*?)```", readme, re.S)
    assert len(blocks) >= 3
    # A guide may show an app's manifest too: it says so on its first line.
    blocks = [b for b in blocks if "not a rag-monitor config" not in b.partition("\n")[0]]
    for i, block in enumerate(blocks):
        f = tmp_path / f"block{i}.yaml"
        f.write_text(block)
        load_config(f, environ={})


def test_receivers_on_the_network_need_a_token_or_an_explicit_opt_out():
    from monitor.config import MonitorConfig

    with pytest.raises(ValidationError, match="receivers.http.host='0.0.0.0'.*bearer_token"):
        MonitorConfig.model_validate({"receivers": {"http": {"host": "0.0.0.0"}}})
    with pytest.raises(ValidationError, match="receivers.grpc.host"):
        MonitorConfig.model_validate({"receivers": {"grpc": {"host": "10.1.2.3"}}})
    assert MonitorConfig.model_validate({"receivers": {"http": {"host": "0.0.0.0", "bearer_token": "t0ken"}}})
    assert MonitorConfig.model_validate({"receivers": {"http": {"host": "0.0.0.0"}, "allow_unauthenticated": True}})
    assert MonitorConfig.model_validate({"receivers": {"http": {"host": "::1"}, "grpc": {"host": "localhost"}}})
