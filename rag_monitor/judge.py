"""The public :class:`Judge`: the sidecar's judge client, configured once and shared.

It is the same :class:`~monitor.judge.client.JudgeClient` the sidecar runs — timeouts, retries
with backoff, request/token budgets, concurrency cap, circuit breaker, structured-output
fallback — so a metric scored in a notebook behaves exactly like one scored online.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Coroutine, Literal, Mapping, TypeVar

from pydantic import SecretStr, ValidationError

from monitor.config import load_config
from monitor.errors import ConfigError
from monitor.judge.client import JudgeClient
from monitor.judge.config import JudgeConfig
from monitor.judge.telemetry import RecordingJudgeTelemetry
from monitor.judge.types import JudgeReply, JudgeRequest
from rag_monitor.service import ServiceHandle

__all__ = ["Judge", "JudgeStats", "config_error_message"]

T = TypeVar("T")


def config_error_message(section: str, exc: ValidationError) -> str:
    """A pydantic error as ``section.field: message`` lines (input values never echoed)."""
    parts = []
    for err in exc.errors():
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        if err["loc"]:
            parts.append(f"{'.'.join(str(p) for p in (section, *err['loc']))}: {message}")
        else:  # a model-level check: its message starts with the key it names
            parts.append(f"{section}.{message}" if ":" in message.split(" ", 1)[0] else f"{section}: {message}")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class JudgeStats:
    """What a judge has done so far: calls by outcome and tokens spent."""

    calls: Mapping[str, int]
    """One outcome per call (``ok``, ``parse_error``, ``timeout``, ``rate_limited``…)."""
    prompt_tokens: int
    completion_tokens: int


class Judge:
    """An OpenAI-compatible LLM judge shared by every metric that is given it.

    ``Judge(base_url="http://localhost:8000/v1", model="gpt-4o-mini")`` or
    :meth:`from_env` / :meth:`from_config`. Construction only validates (errors name the
    field); the HTTP client starts on the first call. Close it with :meth:`close` (or use it as a
    context manager, ``with`` or ``async with``); in-flight calls finish first.
    """

    def __init__(self, *, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 timeout_seconds: float = 30.0, deadline_seconds: float = 90.0, max_retries: int = 2,
                 max_concurrency: int = 4, requests_per_minute: int | None = None,
                 tokens_per_minute: int | None = None,
                 structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto") -> None:
        fields: dict[str, Any] = {
            "base_url": base_url, "model": model, "api_key": api_key, "timeout_seconds": timeout_seconds,
            "deadline_seconds": deadline_seconds, "max_retries": max_retries, "max_concurrency": max_concurrency,
            "requests_per_minute": requests_per_minute, "tokens_per_minute": tokens_per_minute,
            "structured_output": structured_output}
        try:
            config = JudgeConfig.model_validate(fields)
        except ValidationError as exc:
            raise ValueError(config_error_message("judge", exc)) from None
        self._init(config)

    def _init(self, config: JudgeConfig) -> None:
        if not config.enabled:
            raise ValueError("judge: set both model and base_url (or judge.azure with a deployment)")
        self.config = config
        self._telemetry = RecordingJudgeTelemetry()
        self._service: ServiceHandle[JudgeClient] = ServiceHandle(
            "rag-monitor-judge", lambda: JudgeClient(config, telemetry=self._telemetry))

    @classmethod
    def from_config(cls, config: JudgeConfig | Mapping[str, Any]) -> "Judge":
        """A judge from the sidecar's ``judge:`` section (a :class:`JudgeConfig` or its dict),
        for settings the constructor does not list (Azure OpenAI, key files, circuit breaker)."""
        if not isinstance(config, JudgeConfig):
            try:
                config = JudgeConfig.model_validate(config)
            except ValidationError as exc:
                raise ValueError(config_error_message("judge", exc)) from None
        judge = cls.__new__(cls)
        judge._init(config)
        return judge

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Judge":
        """The judge the sidecar would use: ``RAG_MONITOR_CONFIG`` (a YAML file) and the
        ``RAG_MONITOR_JUDGE__*`` variables (``…__BASE_URL``, ``…__MODEL``, ``…__API_KEY``);
        ``OPENAI_BASE_URL`` stands in for a missing base URL, ``OPENAI_API_KEY`` for a key."""
        env = os.environ if environ is None else environ
        try:
            config = load_config(None, env).judge
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        if not config.base_url and not config.azure and env.get("OPENAI_BASE_URL"):
            config = config.model_copy(update={"base_url": env["OPENAI_BASE_URL"]})
        if config.api_key is None and config.api_key_file is None:
            key = config.resolve_api_key(env)  # the sidecar reads os.environ at start; pin it now
            if key is not None:
                config = config.model_copy(update={"api_key": SecretStr(key.get_secret_value())})
        if not config.enabled:
            raise ValueError("judge: set RAG_MONITOR_JUDGE__MODEL and RAG_MONITOR_JUDGE__BASE_URL "
                             "(or OPENAI_BASE_URL)")
        return cls.from_config(config)

    async def complete_json(self, request: JudgeRequest) -> JudgeReply:
        """The :class:`~monitor.judge.types.Judge` contract, callable from any loop or thread."""
        return await self._service.call(lambda client: client.complete_json(request))

    def run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the judge's loop, blocking the caller (what sync ``score()`` uses)."""
        return self._service.run_blocking(coro)

    def stats(self) -> JudgeStats:
        """Calls by outcome and tokens so far (a snapshot taken on the judge's loop)."""

        def snapshot() -> JudgeStats:
            tokens: Counter[str] = Counter()
            for (_, kind), count in self._telemetry.token_counts.items():
                tokens[kind] += count
            return JudgeStats(dict(self._telemetry.effective_outcomes()), tokens["prompt"], tokens["completion"])

        return self._service.query(snapshot)

    def close(self) -> None:
        """Finish in-flight calls (a few seconds at most), close the client. Safe twice."""
        self._service.close()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the caller's event loop."""
        await self._service.aclose()

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> "Judge":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        target = self.config.azure.endpoint if self.config.azure else self.config.base_url
        return f"Judge(model={self.config.effective_model!r}, endpoint={target!r})"
