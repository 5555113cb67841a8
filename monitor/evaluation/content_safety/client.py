"""The Azure AI Content Safety client: ``text:analyze`` and ``text:detectGroundedness``.

``text:analyze`` goes through the official ``azure-ai-contentsafety`` SDK (an optional extra:
``pip install 'rag-monitor[azure]'``). Groundedness detection is a preview API the SDK has no
method for, so it is sent as a plain HTTP request through the same SDK client's pipeline
(``send_request``: same endpoint, key header and transport). The SDK's own retries and HTTP
logging are off: retries, timeouts, budgets and counting are :mod:`monitor.evaluation.content_safety.calls`.

Limits the service documents and this client respects: ``text:analyze`` takes at most 10,000
characters per request; groundedness detection at most 7,500 characters of text and of query and
55,000 characters of grounding sources per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from monitor.evaluation.content_safety.calls import AttemptFailed, ServiceCalls, ServiceFailure
from monitor.evaluation.content_safety.config import ContentSafetyConfig
from monitor.judge.clock import Clock
from monitor.judge.retry import retry_after_seconds
from monitor.judge.telemetry import JudgeTelemetry
from monitor.judge.types import JUDGE_OUTCOMES
from monitor.model import JudgeUsage

if TYPE_CHECKING:
    from azure.ai.contentsafety.aio import ContentSafetyClient as SdkClient

__all__ = ["ContentSafetyClient", "Analysis", "GroundednessVerdict", "ANALYZE_MAX_CHARS",
           "GROUNDEDNESS_TEXT_MAX_CHARS", "GROUNDEDNESS_SOURCES_MAX_CHARS", "INSTALL_HINT"]

log = logging.getLogger(__name__)

ANALYZE_MAX_CHARS = 10_000
GROUNDEDNESS_TEXT_MAX_CHARS = 7_500
GROUNDEDNESS_SOURCES_MAX_CHARS = 55_000
INSTALL_HINT = "the azure_content_safety backend needs the azure extra: pip install 'rag-monitor[azure]'"
_ANALYZE = "content_safety_analyze"
_GROUNDEDNESS = "content_safety_groundedness"


def _known(outcome: str) -> str:
    # The judge's outcome set grows (auth_error, not_found, request_rejected); report the most
    # precise name the running version knows rather than fail on an unknown one.
    return outcome if outcome in JUDGE_OUTCOMES else "server_error"


_PERMANENT = {401: "auth_error", 403: "auth_error", 404: "not_found"}


@dataclass(frozen=True, slots=True)
class Analysis:
    """``text:analyze``: severity per requested category (``Hate``, ``Sexual``…)."""

    severities: Mapping[str, int]
    usage: JudgeUsage


@dataclass(frozen=True, slots=True)
class GroundednessVerdict:
    """``text:detectGroundedness``: whether and how much of the text is ungrounded."""

    ungrounded_detected: bool
    ungrounded_percentage: float
    ungrounded: tuple[tuple[str, str | None], ...]
    """(sentence, reason or None) per ungrounded span the service reported."""
    usage: JudgeUsage


def _status_failure(status: int, message: str, raw_headers: Mapping[str, str]) -> ServiceFailure:
    text = f"content safety answered HTTP {status}: {message[:200]}"
    headers = {k.lower(): v for k, v in raw_headers.items()}  # retry_after_seconds reads lowercase names
    if status == 429:
        return ServiceFailure("rate_limited", text, True, False, retry_after_seconds(headers))
    if status >= 500 or status == 408:
        return ServiceFailure("server_error", text, True, True, retry_after_seconds(headers))
    return ServiceFailure(_known(_PERMANENT.get(status, "request_rejected")), text, False, False)


def _sdk_failure(exc: Exception) -> ServiceFailure:
    from azure.core.exceptions import HttpResponseError, ServiceRequestError, ServiceResponseError

    if isinstance(exc, HttpResponseError) and exc.status_code is not None:
        response: Any = exc.response  # azure-core's typing of it omits the headers it carries
        headers = dict(response.headers) if response is not None else {}
        return _status_failure(exc.status_code, exc.message or str(exc), headers)
    if isinstance(exc, (ServiceRequestError, ServiceResponseError, OSError)):
        return ServiceFailure("connection_error", f"content safety connection failed: {str(exc)[:200]}", True, True)
    if isinstance(exc, (ValueError, KeyError, TypeError)):  # the SDK could not read the body
        return ServiceFailure("parse_error", f"content safety reply unreadable: {str(exc)[:200]}", False, True)
    return ServiceFailure("server_error", f"{type(exc).__name__}: {str(exc)[:200]}", False, True)


def _severities(raw: Any, categories: Sequence[str]) -> dict[str, int]:
    """Validate ``categoriesAnalysis``: each requested category once, an integer 0-7."""
    if not isinstance(raw, list):
        raise AttemptFailed(ServiceFailure("parse_error", "content safety reply has no categoriesAnalysis", False, True))
    found: dict[str, int] = {}
    for item in raw:
        category, severity = item.get("category"), item.get("severity")
        if category not in categories:
            continue
        if isinstance(severity, bool) or not isinstance(severity, int):
            raise AttemptFailed(ServiceFailure("parse_error", f"{category}: severity is not an integer", False, False))
        if not 0 <= severity <= 7:
            raise AttemptFailed(ServiceFailure("out_of_range", f"{category}: severity {severity} outside 0-7", False, False))
        found[str(category)] = severity
    missing = [c for c in categories if c not in found]
    if missing:
        raise AttemptFailed(ServiceFailure("parse_error", f"content safety reply lacks {', '.join(missing)}", False, False))
    return found


def _groundedness(body: Any) -> tuple[bool, float, tuple[tuple[str, str | None], ...]]:
    def bad(outcome: str, message: str) -> AttemptFailed:
        return AttemptFailed(ServiceFailure(outcome, f"groundedness reply: {message}", False, False))

    if not isinstance(body, Mapping):
        raise bad("parse_error", "not a JSON object")
    detected, share = body.get("ungroundedDetected"), body.get("ungroundedPercentage")
    if not isinstance(detected, bool):
        raise bad("parse_error", "ungroundedDetected is not a boolean")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share):
        raise bad("parse_error", "ungroundedPercentage is not a number")
    if not 0.0 <= share <= 1.0:
        raise bad("out_of_range", f"ungroundedPercentage {share} outside 0-1")
    details = body.get("ungroundedDetails") or []
    if not isinstance(details, list):
        raise bad("parse_error", "ungroundedDetails is not a list")
    spans = tuple((str(d.get("text", "")), d.get("reason") if isinstance(d.get("reason"), str) else None)
                  for d in details if isinstance(d, Mapping))
    return detected, float(share), spans


class ContentSafetyClient:
    """Azure AI Content Safety for the severity metrics and groundedness. Construction has no
    side effects; :meth:`start` imports the SDK and creates its client (no network I/O)."""

    def __init__(self, config: ContentSafetyConfig, *, telemetry: JudgeTelemetry | None = None,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self._config = config
        self._calls = ServiceCalls("content safety", config, telemetry=telemetry, clock=clock, rng=rng)
        self._environ = environ
        self._sdk: SdkClient | None = None
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def config(self) -> ContentSafetyConfig:
        return self._config

    @property
    def circuit_state(self) -> str:
        return self._calls.circuit_state

    async def start(self) -> None:
        """Create the SDK client. Raises ValueError naming the field for a missing key or SDK."""
        if self._sdk is not None:
            return
        try:
            from azure.ai.contentsafety.aio import ContentSafetyClient as Sdk
            from azure.core.credentials import AzureKeyCredential
            from azure.core.pipeline.policies import SansIOHTTPPolicy
        except ImportError:
            raise ValueError(f"evaluation.content_safety: {INSTALL_HINT}") from None
        key = self._config.resolve_api_key(self._environ)
        self._calls.closing.clear()
        # retry_total=0: retries are ours. The no-op logging policy replaces the SDK's per-request
        # INFO lines (one per evaluation would flood a sidecar's log).
        self._sdk = Sdk(self._config.endpoint, AzureKeyCredential(key.get_secret_value()),
                        api_version=self._config.api_version, retry_total=0,
                        http_logging_policy=SansIOHTTPPolicy(), connection_timeout=self._config.timeout_seconds,
                        read_timeout=self._config.timeout_seconds)

    async def shutdown(self, deadline: float) -> None:
        """Refuse new calls, cut waits, let in-flight ones finish until ``deadline``, close."""
        self._calls.closing.set()
        remaining = deadline - asyncio.get_running_loop().time()
        if self._active and remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), remaining)
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            await sdk.close()

    async def __aenter__(self) -> "ContentSafetyClient":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown(asyncio.get_running_loop().time())

    def _client(self) -> "SdkClient":
        if self._sdk is None:
            raise AttemptFailed(ServiceFailure("connection_error", "content safety client is not started", False, False))
        return self._sdk

    async def _tracked(self, operation: str, attempt: Any) -> Any:
        self._active += 1
        self._idle.clear()
        try:
            return await self._calls.run(operation, attempt)
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    async def analyze_text(self, text: str, categories: Sequence[str]) -> Analysis:
        """Severities of ``categories`` in ``text`` (at most 10,000 characters). Raises JudgeError."""
        if len(text) > ANALYZE_MAX_CHARS:
            raise ValueError(f"text:analyze takes at most {ANALYZE_MAX_CHARS} characters")
        from azure.ai.contentsafety.models import AnalyzeTextOptions

        options = AnalyzeTextOptions(text=text, categories=list(categories), output_type=self._config.output_type)

        async def attempt(timeout: float) -> dict[str, int]:
            try:
                result = await self._client().analyze_text(options)
            except AttemptFailed:
                raise
            except Exception as exc:  # noqa: BLE001 - classified once, here
                raise AttemptFailed(_sdk_failure(exc)) from None
            raw = [dict(item) for item in (result.get("categoriesAnalysis") or [])]
            return _severities(raw, categories)

        severities, usage = await self._tracked(_ANALYZE, attempt)
        return Analysis(severities, usage)

    def _groundedness_body(self, text: str, sources: Sequence[str], query: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {"domain": self._config.groundedness_domain,
                                "task": "QnA" if query else "Summarization",
                                "text": text, "groundingSources": list(sources),
                                "reasoning": self._config.groundedness_reasoning}
        if query:
            body["qna"] = {"query": query}
        if self._config.groundedness_reasoning:
            body["llmResource"] = {"resourceType": "AzureOpenAI",
                                   "azureOpenAIEndpoint": self._config.reasoning_openai_endpoint,
                                   "azureOpenAIDeploymentName": self._config.reasoning_openai_deployment}
        return body

    async def detect_groundedness(self, text: str, sources: Sequence[str], query: str | None) -> GroundednessVerdict:
        """Groundedness detection of ``text`` against ``sources`` (QnA task when ``query`` is
        given, else Summarization). Raises JudgeError."""
        from azure.core.rest import HttpRequest

        request = HttpRequest("POST", "/text:detectGroundedness",
                              params={"api-version": self._config.groundedness_api_version},
                              json=self._groundedness_body(text, sources, query))

        async def attempt(timeout: float) -> tuple[bool, float, tuple[tuple[str, str | None], ...]]:
            try:
                response = await self._client().send_request(request)
                await response.read()
            except AttemptFailed:
                raise
            except Exception as exc:  # noqa: BLE001 - classified once, here
                raise AttemptFailed(_sdk_failure(exc)) from None
            if response.status_code != 200:
                raise AttemptFailed(_status_failure(response.status_code, response.text(), dict(response.headers)))
            try:
                body = response.json()
            except ValueError:
                raise AttemptFailed(ServiceFailure("parse_error", "groundedness reply is not JSON", False, True)) from None
            return _groundedness(body)

        (detected, share, spans), usage = await self._tracked(_GROUNDEDNESS, attempt)
        return GroundednessVerdict(detected, share, spans, usage)
