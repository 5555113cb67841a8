"""The start-up summary: one line per stage, no secret in any of them."""

from __future__ import annotations

import logging

from monitor.config import MonitorConfig
from monitor.startup import HTTP_CLIENT_LOGGERS, quiet_http_client_logs, safe_url, startup_summary


def test_judge_line_names_model_and_url_without_credentials():
    config = MonitorConfig.model_validate({
        "judge": {"base_url": "https://bob:hunter2@llm.internal:8443/v1?api-key=s3cret#x", "model": "gpt-4o-mini",
                  "tokens_per_minute": 50000, "api_key": "sk-never-shown"},
        "forward": {"endpoint": "http://user:pw@collector:4318"}})
    lines = startup_summary(config, http_port=4318, grpc_port=4317, admin_port=9464).lines
    assert lines["judge"] == "gpt-4o-mini at https://llm.internal:8443/v1 (max 4 in flight, 50000 tokens/min)"
    assert lines["forward"] == "http://collector:4318"
    text = "\n".join(lines.values())
    for secret in ("hunter2", "s3cret", "sk-never-shown", "pw@"):
        assert secret not in text
    assert "/v1/metrics acknowledged and forwarded" in lines["receivers"]


def test_defaults_say_judge_off_and_what_runs_instead():
    lines = startup_summary(MonitorConfig(), http_port=4318, grpc_port=4317, admin_port=9464).lines
    assert list(lines) == ["receivers", "forward", "judge", "metrics", "sampling", "outputs"]
    assert lines["judge"] == "off (set judge.model and judge.base_url): only local metrics run"
    assert lines["metrics"].startswith("local: f1_score, local_lexical_groundedness")
    assert "judge (off): groundedness" in lines["metrics"]
    assert lines["sampling"].startswith("always (error exists | jailbreak_attempt == True), else rate_limit")
    assert "OTLP/HTTP on 127.0.0.1:4318" in lines["receivers"] and "no token (loopback)" in lines["receivers"]
    assert "status page http://127.0.0.1:9464/" in lines["outputs"] and "store rag-monitor.sqlite3" in lines["outputs"]


def test_safe_url_keeps_scheme_host_port_path():
    assert safe_url("https://a:b@h.example/x/v1?k=v") == "https://h.example/x/v1"


def test_http_client_request_logs_only_at_debug():
    quiet_http_client_logs("INFO")
    assert all(logging.getLogger(n).level == logging.WARNING for n in HTTP_CLIENT_LOGGERS)
    quiet_http_client_logs("DEBUG")
    assert all(logging.getLogger(n).level == logging.DEBUG for n in HTTP_CLIENT_LOGGERS)
    for name in HTTP_CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
