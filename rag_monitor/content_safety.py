"""The public :class:`ContentSafety`: an Azure AI Content Safety resource shared by metrics.

Give it to the four severity metrics or to :class:`~rag_monitor.Groundedness` instead of a
judge (``Violence(content_safety=cs)``): the metric keeps its id, scale, labels and defect rule
and is scored by the service. Needs the ``azure`` extra (``pip install 'rag-monitor[azure]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Coroutine, Literal, Mapping, Sequence, TypeVar

from pydantic import ValidationError

from monitor.evaluation.content_safety.client import Analysis, ContentSafetyClient, GroundednessVerdict
from monitor.evaluation.content_safety.config import ContentSafetyConfig
from rag_monitor.judge import config_error_message
from rag_monitor.service import ServiceHandle

__all__ = ["ContentSafety"]

T = TypeVar("T")


class ContentSafety:
    """``ContentSafety(endpoint=..., api_key=...)``; the key may also come from
    ``api_key_file`` or ``AZURE_CONTENT_SAFETY_KEY``. Construction validates (errors name the
    field) and reads nothing; the client starts on first use. Close it like a :class:`Judge`."""

    def __init__(self, *, endpoint: str, api_key: str | None = None, api_key_file: str | Path | None = None,
                 output_type: Literal["EightSeverityLevels", "FourSeverityLevels"] = "EightSeverityLevels",
                 timeout_seconds: float = 10.0, deadline_seconds: float = 60.0, max_retries: int = 2,
                 max_concurrency: int = 4, requests_per_minute: int | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        fields: dict[str, Any] = {
            "endpoint": endpoint, "api_key": api_key, "api_key_file": api_key_file, "output_type": output_type,
            "timeout_seconds": timeout_seconds, "deadline_seconds": deadline_seconds, "max_retries": max_retries,
            "max_concurrency": max_concurrency, "requests_per_minute": requests_per_minute}
        self._init(self._validate(fields), environ)

    @staticmethod
    def _validate(fields: Mapping[str, Any]) -> ContentSafetyConfig:
        try:
            return ContentSafetyConfig.model_validate(fields)
        except ValidationError as exc:
            raise ValueError(config_error_message("content_safety", exc)) from None

    def _init(self, config: ContentSafetyConfig, environ: Mapping[str, str] | None) -> None:
        self.config = config
        self._service: ServiceHandle[ContentSafetyClient] = ServiceHandle(
            "rag-monitor-content-safety", lambda: ContentSafetyClient(config, environ=environ))

    @classmethod
    def from_config(cls, config: ContentSafetyConfig | Mapping[str, Any],
                    environ: Mapping[str, str] | None = None) -> "ContentSafety":
        """From the sidecar's ``evaluation.content_safety`` section (model or dict)."""
        if not isinstance(config, ContentSafetyConfig):
            config = cls._validate(config)
        service = cls.__new__(cls)
        service._init(config, environ)
        return service

    async def analyze_text(self, text: str, categories: Sequence[str]) -> Analysis:
        """``text:analyze`` on the service's loop (the evaluators' contract)."""
        return await self._service.call(lambda client: client.analyze_text(text, categories))

    async def detect_groundedness(self, text: str, sources: Sequence[str], query: str | None) -> GroundednessVerdict:
        """``text:detectGroundedness`` on the service's loop (the evaluators' contract)."""
        return await self._service.call(lambda client: client.detect_groundedness(text, sources, query))

    def run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the service's loop, blocking the caller (what sync ``score()`` uses)."""
        return self._service.run_blocking(coro)

    def close(self) -> None:
        """Finish in-flight calls, close the client. Safe twice."""
        self._service.close()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the caller's event loop."""
        await self._service.aclose()

    def __enter__(self) -> "ContentSafety":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> "ContentSafety":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ContentSafety(endpoint={self.config.endpoint!r})"
