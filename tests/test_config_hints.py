"""Configuration errors suggest the key that was meant, at the place it was misspelt."""

from __future__ import annotations

import pytest

from monitor.config import MonitorConfig, load_config
from monitor.config_hints import suggest_key, user_loc
from monitor.errors import ConfigError


def _error(text: str, tmp_path, environ: dict[str, str] | None = None) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=environ or {})
    return str(caught.value)


def test_each_misspelt_key_gets_the_closest_key_of_its_own_section(tmp_path):
    message = _error("receivers: {http: {prot: 4318}}\njudge: {modle: x}\nevaluaton: {}\n"
                     "sampling: {policies: [{type: rate_limit, conversations_per_second: 1, brust: 5}]}\n",
                     tmp_path)
    assert "receivers.http.prot: unknown key; did you mean 'port'?" in message
    assert "judge.modle: unknown key; did you mean 'model'?" in message
    assert "evaluaton: unknown key; did you mean 'evaluation'?" in message
    # The union tag pydantic inserts (policies.0.rate_limit.brust) is not what the user wrote.
    assert "sampling.policies.0.brust: unknown key; did you mean 'burst'?" in message


def test_nothing_close_means_no_guess_and_env_keys_keep_their_origin(tmp_path):
    message = _error("admin: {zzzz: 1}\n", tmp_path, {"RAG_MONITOR_ADMIN__PRT": "1"})
    assert "admin.zzzz: unknown key\n" in message + "\n"
    assert "admin.prt (from RAG_MONITOR_ADMIN__PRT): unknown key; did you mean 'port'?" in message


def test_suggestions_inside_lists_and_maps():
    assert suggest_key(MonitorConfig, ("sampling", "policies", 2, "composite", "policies", 0, "probabilistic",
                                       "rat")) == "rate"
    assert suggest_key(MonitorConfig, ("exporters", "store", "pth")) == "path"
    assert suggest_key(MonitorConfig, ("nosuch", "deeper", "key")) is None
    assert user_loc(MonitorConfig, ("sampling", "policies", 0, "probabilistic", "rate")) == "sampling.policies.0.rate"
