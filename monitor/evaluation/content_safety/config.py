"""The ``evaluation.content_safety`` config section: the Azure AI Content Safety resource.

Example (YAML)::

    evaluation:
      content_safety:
        endpoint: https://my-resource.cognitiveservices.azure.com
        api_key_file: /var/run/secrets/content-safety/key   # or AZURE_CONTENT_SAFETY_KEY
      metrics:
        - {id: violence, backend: azure_content_safety}
        - {id: groundedness, backend: azure_content_safety}

Every field is documented below; unknown keys are errors naming them. The key is a
``SecretStr`` (printed as ``**********``) and is resolved at start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Mapping
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from monitor.errors import SecretFileError
from monitor.judge.config import CircuitBreakerConfig

__all__ = ["ContentSafetyConfig", "KEY_ENV_VARS", "BACKEND", "SERVICE_METRICS"]

BACKEND = "azure_content_safety"
"""The ``backend`` value of a metric entry scored by the service."""
SERVICE_METRICS = ("hate_unfairness", "sexual", "violence", "self_harm", "groundedness")
"""The metrics the service can score."""

KEY_ENV_VARS = ("AZURE_CONTENT_SAFETY_KEY", "CONTENT_SAFETY_KEY")
"""Environment variables read for the key, in this order, when no key or key file is set."""


class ContentSafetyConfig(BaseModel):
    """An Azure AI Content Safety resource and how hard to use it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              hide_input_in_errors=True)

    endpoint: str
    """Resource endpoint, e.g. ``https://my-resource.cognitiveservices.azure.com``."""
    api_key: SecretStr | None = None
    """Resource key. Falls back to ``api_key_file``, then ``AZURE_CONTENT_SAFETY_KEY`` or
    ``CONTENT_SAFETY_KEY``."""
    api_key_file: Path | None = None
    """File holding the key (a mounted secret), read at start; surrounding whitespace ignored."""
    api_version: str = "2023-10-01"
    """API version of ``text:analyze`` (the SDK's GA version)."""
    groundedness_api_version: str = "2024-09-15-preview"
    """API version of ``text:detectGroundedness`` (a preview API)."""
    output_type: Literal["EightSeverityLevels", "FourSeverityLevels"] = "EightSeverityLevels"
    """``EightSeverityLevels`` gives 0-7 like the judge; ``FourSeverityLevels`` gives 0, 2, 4, 6."""
    groundedness_domain: Literal["Generic", "Medical"] = "Generic"
    """Domain sent to groundedness detection."""
    groundedness_reasoning: bool = False
    """Ask the service to explain each ungrounded sentence (needs your Azure OpenAI deployment
    below, costs extra and is slower)."""
    reasoning_openai_endpoint: str | None = None
    """Azure OpenAI endpoint the service uses for reasoning."""
    reasoning_openai_deployment: str | None = None
    """Azure OpenAI deployment the service uses for reasoning."""

    timeout_seconds: float = Field(default=10.0, gt=0)
    """Timeout of one HTTP attempt."""
    deadline_seconds: float = Field(default=60.0, gt=0)
    """Overall limit of one call, including budget waits, retries and backoff."""
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries after a 429, 5xx, timeout or connection error (the SDK's own retries are off)."""
    backoff_initial_seconds: float = Field(default=0.5, gt=0)
    """Upper bound of the first retry's jittered delay; doubles per retry."""
    backoff_max_seconds: float = Field(default=20.0, gt=0)
    """Cap of the jittered delay (a ``Retry-After`` may ask for longer)."""
    max_concurrency: int = Field(default=4, ge=1)
    """Requests in flight at once from this replica."""
    requests_per_minute: int | None = Field(default=None, ge=1)
    """Requests allowed in any 60-second window, per replica (match your pricing tier's limit)."""
    on_budget_exhausted: Literal["wait", "shed"] = "wait"
    """With no budget left: ``wait`` (up to ``max_budget_wait_seconds``) or ``shed`` at once."""
    max_budget_wait_seconds: float = Field(default=30.0, ge=0)
    """Longest wait for budget before a call is shed as ``budget_exhausted``."""
    circuit_breaker: CircuitBreakerConfig = Field(default_factory=CircuitBreakerConfig)
    """Stop calling a failing service for a while."""

    @field_validator("endpoint", "reasoning_openai_endpoint")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("expected an http(s) URL such as https://my-resource.cognitiveservices.azure.com")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check(self) -> "ContentSafetyConfig":
        if self.api_key is not None and self.api_key_file is not None:
            raise ValueError("set either content_safety.api_key or content_safety.api_key_file, not both")
        if self.backoff_max_seconds < self.backoff_initial_seconds:
            raise ValueError("content_safety.backoff_max_seconds must be >= backoff_initial_seconds")
        if self.groundedness_reasoning and not (self.reasoning_openai_endpoint and self.reasoning_openai_deployment):
            raise ValueError("content_safety.groundedness_reasoning needs reasoning_openai_endpoint "
                             "and reasoning_openai_deployment")
        return self

    def resolve_api_key(self, environ: Mapping[str, str] | None = None) -> SecretStr:
        """The key from ``api_key``, ``api_key_file`` or the environment. Raises ``ValueError``
        naming the field when there is none or the file cannot be read."""
        if self.api_key is not None:
            return self.api_key
        if self.api_key_file is not None:
            try:
                text = self.api_key_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise SecretFileError(f"content_safety.api_key_file: cannot read {self.api_key_file}: "
                                 f"{exc.strerror}") from None
            if not text:
                raise ValueError(f"content_safety.api_key_file: {self.api_key_file} is empty")
            return SecretStr(text)
        env = os.environ if environ is None else environ
        for name in KEY_ENV_VARS:
            if env.get(name):
                return SecretStr(env[name])
        raise ValueError(f"content_safety.api_key: no key (set api_key, api_key_file or {KEY_ENV_VARS[0]})")
