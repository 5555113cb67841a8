"""The ``openai`` client a judge client talks through, built from the ``judge`` config."""

from __future__ import annotations

import logging
from typing import Any, Mapping

import openai

from monitor.judge.config import JudgeConfig

__all__ = ["make_openai_client"]

log = logging.getLogger(__name__)

# Servers without auth (vLLM, Ollama) ignore the key, but the openai client insists on one.
_NO_KEY = "EMPTY"


def make_openai_client(config: JudgeConfig, environ: Mapping[str, str] | None) -> openai.AsyncOpenAI:
    """``AsyncOpenAI`` (or ``AsyncAzureOpenAI``) over the aiohttp transport, with the SDK's own
    retries off (ours are deadline-bound, breaker-aware and budgeted) and our timeout instead
    of its 10-minute default. Raises ``ValueError`` for an unreadable key file."""
    key = config.resolve_api_key(environ)
    if key is None:
        log.info("judge: no API key configured; fine for servers without auth")
    common: dict[str, Any] = {
        "api_key": key.get_secret_value() if key else _NO_KEY,
        "max_retries": 0,
        "timeout": config.timeout_seconds,
        "http_client": openai.DefaultAioHttpClient(timeout=config.timeout_seconds),
    }
    if config.azure is not None:
        return openai.AsyncAzureOpenAI(azure_endpoint=config.azure.endpoint,
                                       api_version=config.azure.api_version,
                                       azure_deployment=config.azure.deployment, **common)
    return openai.AsyncOpenAI(base_url=config.base_url, **common)
