from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from monitor.judge.config import JudgeConfig

SECRET = "sk-live-0123456789abcdef"


def test_disabled_without_model_or_endpoint() -> None:
    assert not JudgeConfig().enabled
    assert not JudgeConfig(model="m").enabled
    assert not JudgeConfig(base_url="http://127.0.0.1:8000/v1").enabled
    assert JudgeConfig(model="m", base_url="http://127.0.0.1:8000/v1").enabled
    azure = JudgeConfig(azure={"endpoint": "https://r.openai.azure.com", "deployment": "gpt-4o"})
    assert azure.enabled and azure.effective_model == "gpt-4o"


def test_defaults_suit_a_sidecar() -> None:
    config = JudgeConfig()
    assert config.timeout_seconds == 30 and config.deadline_seconds == 90
    assert config.structured_output == "auto" and config.on_budget_exhausted == "wait"


def test_unknown_keys_are_errors_that_name_the_key() -> None:
    with pytest.raises(ValidationError, match="max_retry"):
        JudgeConfig(max_retry=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="threshold"):
        JudgeConfig(circuit_breaker={"threshold": 3})


def test_key_never_printed() -> None:
    config = JudgeConfig(model="m", base_url="http://127.0.0.1/v1", api_key=SECRET)
    assert SECRET not in repr(config)
    assert SECRET not in str(config)
    assert SECRET not in repr(config.model_dump())
    # Model-level errors would echo the whole input; they must not.
    with pytest.raises(ValidationError) as info:
        JudgeConfig(model="m", base_url="http://x/v1", azure={"endpoint": "https://a"}, api_key=SECRET)
    assert SECRET not in str(info.value)


def test_key_resolution_order(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(f"  {SECRET}\n")
    base = {"model": "m", "base_url": "http://127.0.0.1/v1"}
    env = {"OPENAI_API_KEY": "from-env", "AZURE_OPENAI_API_KEY": "from-azure-env"}
    assert JudgeConfig(**base, api_key="inline").resolve_api_key(env).get_secret_value() == "inline"
    assert JudgeConfig(**base, api_key_file=key_file).resolve_api_key(env).get_secret_value() == SECRET
    assert JudgeConfig(**base).resolve_api_key(env).get_secret_value() == "from-env"
    azure = JudgeConfig(azure={"endpoint": "https://a", "deployment": "d"})
    assert azure.resolve_api_key(env).get_secret_value() == "from-azure-env"
    assert JudgeConfig(**base).resolve_api_key({}) is None
    with pytest.raises(ValueError, match="judge.api_key_file"):
        JudgeConfig(**base, api_key_file=tmp_path / "missing").resolve_api_key({})


def test_conflicting_settings_are_rejected() -> None:
    with pytest.raises(ValidationError, match="api_key_file"):
        JudgeConfig(api_key="a", api_key_file="/run/secrets/key")
    with pytest.raises(ValidationError):
        JudgeConfig(timeout_seconds=0)
    with pytest.raises(ValidationError):
        JudgeConfig(on_budget_exhausted="drop")


def test_combine_metrics_has_one_switch_and_it_is_not_here() -> None:
    with pytest.raises(ValidationError, match="evaluation.combine_metrics"):
        JudgeConfig(combine_metrics=True)  # type: ignore[call-arg]


def test_removed_judge_combine_metrics_is_named_when_loading_a_file(tmp_path: Path) -> None:
    from monitor.config import load_config
    from monitor.errors import ConfigError

    path = tmp_path / "config.yaml"
    path.write_text("judge:\n  model: m\n  base_url: http://127.0.0.1:1/v1\n  combine_metrics: true\n")
    with pytest.raises(ConfigError, match="evaluation.combine_metrics"):
        load_config(path, environ={})


def test_reasoning_settings_are_validated() -> None:
    assert JudgeConfig().reasoning_model is None
    assert JudgeConfig().max_budget_wait_seconds is None  # wait mode waits until the deadline
    with pytest.raises(ValidationError, match="reasoning_effort"):
        JudgeConfig(reasoning_effort="extreme")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="reasoning_extra_output_tokens"):
        JudgeConfig(reasoning_extra_output_tokens=-1)
