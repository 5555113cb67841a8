"""Configuration of the judge client (the ``judge:`` section of the YAML file).

Every field is documented below (the docstrings become the field descriptions). With neither a
``model`` nor an endpoint configured the judge tier is off (:attr:`JudgeConfig.enabled`) and only
the local tier runs. The API key is a ``SecretStr``: it prints as ``**********`` in reprs,
validation errors and logs; resolve it with :meth:`JudgeConfig.resolve_api_key` at start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from monitor.errors import SecretFileError

__all__ = ["JudgeConfig", "AzureConfig", "CircuitBreakerConfig"]

_STRICT = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class AzureConfig(BaseModel):
    """Azure OpenAI endpoint; when present the client is ``AsyncAzureOpenAI``."""

    model_config = _STRICT

    endpoint: str
    """Resource endpoint, e.g. ``https://my-resource.openai.azure.com``."""
    api_version: str = "2024-10-21"
    """Azure OpenAI REST API version (``api-version`` query parameter)."""
    deployment: str | None = None
    """Deployment name; also used as the model when ``judge.model`` is not set."""


class CircuitBreakerConfig(BaseModel):
    """When to stop calling a judge that keeps failing, and when to try again."""

    model_config = _STRICT

    failure_threshold: int = Field(default=5, ge=1)
    """Consecutive failed attempts (timeout, 429, 5xx, connection error) that open the circuit."""
    open_seconds: float = Field(default=30.0, gt=0)
    """How long an open circuit refuses calls before letting one probe through (half-open)."""


class JudgeConfig(BaseModel):
    """The LLM judge: endpoint, credentials, timeouts, retries, budgets and output format."""

    # A model-level validation error would otherwise echo the whole input dict, key included.
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              hide_input_in_errors=True)

    base_url: str | None = None
    """OpenAI-compatible base URL ending in ``/v1`` (OpenAI, vLLM, Ollama, LiteLLM proxy…)."""
    model: str | None = None
    """Judge model name sent in each request."""
    api_key: SecretStr | None = None
    """API key. Falls back to ``api_key_file``, then ``AZURE_OPENAI_API_KEY`` (Azure) or
    ``OPENAI_API_KEY``. Local servers without auth need none."""
    api_key_file: Path | None = None
    """File holding the API key (a mounted secret), read at start; surrounding whitespace is
    ignored."""
    azure: AzureConfig | None = None
    """Azure OpenAI settings; set instead of ``base_url``."""

    timeout_seconds: float = Field(default=30.0, gt=0)
    """Timeout of one HTTP attempt (the openai client's 10-minute default is far too long)."""
    deadline_seconds: float = Field(default=90.0, gt=0)
    """Overall limit of one evaluation call, including budget waits, retries and backoff."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries after a 5xx, timeout or connection error (the openai client's own retries are
    off). A 429 is not an error to give up on: the client pauses and the call retries when its
    turn comes, bounded only by ``deadline_seconds``."""
    backoff_initial_seconds: float = Field(default=0.5, gt=0)
    """Upper bound of the first retry's jittered delay; doubles per retry. Also the first step
    of the client-wide pause after a 429 without ``Retry-After``, doubling per consecutive 429."""
    backoff_max_seconds: float = Field(default=20.0, gt=0)
    """Cap of the jittered delay (a server's ``Retry-After`` may ask for longer)."""

    max_concurrency: int = Field(default=4, ge=1)
    """Judge requests in flight at once from this replica: the ceiling of the congestion window,
    which halves on a 429 and grows back by one per window of successful replies."""
    requests_per_minute: int | None = Field(default=None, ge=1)
    """Requests allowed in any 60-second window, per replica; unset = unlimited."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Tokens (prompt + reply) allowed in any 60-second window, per replica; unset = unlimited."""
    on_budget_exhausted: Literal["wait", "shed"] = "wait"
    """With no budget left: ``wait`` (until the call's deadline, or ``max_budget_wait_seconds``
    when set) or ``shed`` at once. Either way a call that cannot be served is counted
    ``budget_exhausted``."""
    max_budget_wait_seconds: float | None = Field(default=None, ge=0)
    """In ``wait`` mode, the longest wait for budget; unset = until ``deadline_seconds``."""
    circuit_breaker: CircuitBreakerConfig = Field(default_factory=CircuitBreakerConfig)
    """Stop calling a failing judge for a while."""

    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    """``auto`` tries ``json_schema``, falls back to ``json_object`` then plain text when the
    server rejects the ``response_format``; the other values pin one mode."""
    reasoning_model: bool | None = None
    """Send reasoning-model parameters (``max_completion_tokens``, no ``temperature``): true for
    OpenAI o-series/gpt-5 style models. Unset = decided from the model name (``o1``, ``o3-mini``,
    ``gpt-5``…) and switched on when the server answers ``max_tokens``/``temperature`` with a 400."""
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    """``reasoning_effort`` sent to reasoning models; unset = the model's default."""
    reasoning_extra_output_tokens: int = Field(default=2048, ge=0)
    """Added to each metric's reply limit for reasoning models, whose hidden reasoning tokens
    count against ``max_completion_tokens`` (and against ``tokens_per_minute``)."""

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: object) -> object:
        if isinstance(data, Mapping) and "combine_metrics" in data:
            # It was accepted and read nowhere; one switch is enough.
            raise ValueError("judge.combine_metrics was removed: the switch is evaluation.combine_metrics")
        return data

    @model_validator(mode="after")
    def _check(self) -> JudgeConfig:
        if self.base_url and self.azure:
            raise ValueError("set either judge.base_url or judge.azure, not both")
        if self.api_key is not None and self.api_key_file is not None:
            raise ValueError("set either judge.api_key or judge.api_key_file, not both")
        if self.backoff_max_seconds < self.backoff_initial_seconds:
            raise ValueError("judge.backoff_max_seconds must be >= judge.backoff_initial_seconds")
        return self

    @property
    def effective_model(self) -> str | None:
        """The model to request: ``model``, else the Azure deployment."""
        if self.model:
            return self.model
        return self.azure.deployment if self.azure else None

    @property
    def enabled(self) -> bool:
        """True when a model and an endpoint are configured (otherwise the judge tier is off)."""
        return bool(self.effective_model) and bool(self.base_url or self.azure)

    def resolve_api_key(self, environ: Mapping[str, str] | None = None) -> SecretStr | None:
        """The key from ``api_key``, ``api_key_file`` or the environment, in that order.
        Raises ``ValueError`` naming ``judge.api_key_file`` when the file cannot be read."""
        if self.api_key is not None:
            return self.api_key
        if self.api_key_file is not None:
            try:
                text = self.api_key_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise SecretFileError(f"judge.api_key_file: cannot read {self.api_key_file}: {exc.strerror}") from None
            return SecretStr(text) if text else None
        env = os.environ if environ is None else environ
        name = "AZURE_OPENAI_API_KEY" if self.azure else "OPENAI_API_KEY"
        value = env.get(name)
        return SecretStr(value) if value else None
