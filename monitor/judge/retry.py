"""Failure classification and backoff for judge attempts.

Errors are classified once, here, into a ``JUDGE_OUTCOMES`` value and a retryable flag. Only
429, 5xx (and 408), timeouts and connection errors are retried; other 4xx are permanent (a bad
key or model name does not get better by asking again). A 400/422 that names the
``response_format`` is flagged so the client can fall back to a simpler structured-output mode.

Hand-written rather than ``tenacity``: the policy is a dozen lines, and the parts that matter here
— honouring ``Retry-After``/``retry-after-ms``, one overall deadline, a sleep cut short by
shutdown — would all be custom hooks anyway.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from typing import Mapping

import aiohttp
import openai

__all__ = ["AttemptFailure", "classify_failure", "retry_after_seconds", "Backoff"]

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")


@dataclass(frozen=True, slots=True)
class AttemptFailure:
    """How one HTTP attempt failed."""

    outcome: str
    message: str
    retryable: bool
    retry_after: float | None = None
    format_rejected: bool = False


def classify_failure(exc: BaseException) -> AttemptFailure:
    """Map an exception from the openai client (or our own attempt timeout) to an outcome."""
    if isinstance(exc, openai.APIStatusError):
        return _classify_status(exc)
    if isinstance(exc, (openai.APIConnectionError, TimeoutError)):
        return _classify_transport(exc)
    if isinstance(exc, openai.APIResponseValidationError):
        return AttemptFailure("parse_error", "judge response did not match the chat schema", False)
    # Anything else from the SDK is unexpected but must still land as a counted outcome.
    return AttemptFailure("server_error", f"{type(exc).__name__}: {exc}", False)


def _classify_status(exc: openai.APIStatusError) -> AttemptFailure:
    code = exc.status_code
    message = f"judge answered HTTP {code}: {_short(exc.message)}"
    if code == 429:
        return AttemptFailure("rate_limited", message, True, retry_after_seconds(exc.response.headers))
    if code == 408:
        return AttemptFailure("timeout", message, True)
    if code >= 500:
        return AttemptFailure("server_error", message, True, retry_after_seconds(exc.response.headers))
    text = f"{exc.message} {exc.body}".lower()
    rejected = code in (400, 422) and any(word in text for word in _FORMAT_WORDS)
    return AttemptFailure("server_error", message, False, format_rejected=rejected)


def _classify_transport(exc: BaseException) -> AttemptFailure:
    # The aiohttp transport reports refused and dropped connections as ConnectTimeout, so the
    # openai error type alone cannot tell a timeout from a dead server: look at the root cause.
    chain = _causes(exc)
    if any(isinstance(e, TimeoutError) for e in chain):
        return AttemptFailure("timeout", "judge request timed out", True)
    if any(isinstance(e, (OSError, aiohttp.ClientConnectionError)) for e in chain):
        return AttemptFailure("connection_error", f"judge connection failed: {_short(str(chain[-1]))}", True)
    if isinstance(exc, openai.APITimeoutError):
        return AttemptFailure("timeout", "judge request timed out", True)
    return AttemptFailure("connection_error", "judge connection failed", True)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def retry_after_seconds(headers: Mapping[str, str], wall_now: float | None = None) -> float | None:
    """Server-requested delay from ``retry-after-ms`` (preferred: finer) or ``Retry-After``
    (seconds or an HTTP date); None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = time.time() if wall_now is None else wall_now
    return max(0.0, moment.timestamp() - now)


class Backoff:
    """Exponential backoff with full jitter, never shorter than the server's ``Retry-After``."""

    def __init__(self, initial_seconds: float, max_seconds: float, rng: random.Random | None = None) -> None:
        self._initial = initial_seconds
        self._max = max_seconds
        self._rng = rng or random.Random()

    def delay(self, retry_index: int, retry_after: float | None) -> float:
        """Delay before retry number ``retry_index`` (0-based)."""
        # Full jitter (AWS architecture blog): spreads synchronised clients across the window.
        ceiling = min(self._max, self._initial * (2 ** min(retry_index, 30)))
        jittered = self._rng.uniform(0.0, ceiling)
        return jittered if retry_after is None else max(retry_after, jittered)
