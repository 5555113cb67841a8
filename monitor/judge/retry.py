"""Failure classification and backoff for judge attempts.

Errors are classified once, here, into a ``JUDGE_OUTCOMES`` value and three verdicts:

* ``retryable`` — 5xx (and 408), timeouts and connection errors are retried up to
  ``max_retries``; a 429 is *ridden out* instead (the client-wide throttle pauses everyone and
  the call waits its turn until its deadline, see :mod:`monitor.judge.throttle`); other 4xx are
  permanent (a bad key or model name does not get better by asking again).
* ``outage`` — whether the circuit breaker counts the attempt as a failure: the endpoint did not
  serve it (5xx, 408, timeout, connection error, a 200 that is not a chat completion). A 429 or a
  4xx is an answer from a working server — a rate limit or a configuration mistake, not an outage.
* ``reached`` — whether the request may have reached the server, so its budget reservation is
  kept (only a refused connection or a failed name lookup certainly did not).

A 400 whose error code is ``content_filter`` (Azure OpenAI's content filter on the prompt) is
``refused``: not retried, not an outage. A 400/422 that names the ``response_format`` is flagged so
the client can fall back to a simpler structured-output mode; one that rejects
``max_tokens``/``temperature`` (what OpenAI answers a reasoning model sent the classic parameters)
is flagged so it can switch to reasoning parameters.

Hand-written rather than ``tenacity``: the policy is a dozen lines, and the parts that matter here
— honouring ``Retry-After``/``retry-after-ms``, one overall deadline, a sleep cut short by
shutdown — would all be custom hooks anyway.
"""

from __future__ import annotations

import email.utils
import random
import socket
import time
from dataclasses import dataclass
from typing import Any, Mapping

import aiohttp
import openai

__all__ = ["AttemptFailure", "classify_failure", "retry_after_seconds", "Backoff"]

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")
# OpenAI's answer to a reasoning model sent max_tokens/temperature: param "max_tokens" or
# "temperature", code unsupported_parameter/unsupported_value, a message naming
# max_completion_tokens. Any one of them is enough.
_REASONING_PARAMS = ("max_tokens", "temperature")
_PERMANENT = {401: "auth_error", 403: "auth_error", 404: "not_found"}


@dataclass(frozen=True, slots=True)
class AttemptFailure:
    """How one HTTP attempt failed."""

    outcome: str
    message: str
    retryable: bool
    retry_after: float | None = None
    format_rejected: bool = False
    params_rejected: bool = False
    """The server refused ``max_tokens``/``temperature``: a reasoning model."""
    outage: bool = False
    """The circuit breaker counts this attempt as a failure of the endpoint."""
    reached: bool = True
    """The request may have reached the server (its budget reservation stays charged)."""


def classify_failure(exc: BaseException) -> AttemptFailure:
    """Map an exception from the openai client (or our own attempt timeout) to an outcome."""
    if isinstance(exc, openai.APIStatusError):
        return _classify_status(exc)
    if isinstance(exc, (openai.APIConnectionError, TimeoutError)):
        return _classify_transport(exc)
    if isinstance(exc, openai.APIResponseValidationError):
        return AttemptFailure("parse_error", "judge response did not match the chat schema", False, outage=True)
    # Anything else from the SDK is unexpected but must still land as a counted outcome.
    return AttemptFailure("server_error", f"{type(exc).__name__}: {exc}", False, outage=True)


def _classify_status(exc: openai.APIStatusError) -> AttemptFailure:
    code = exc.status_code
    message = f"judge answered HTTP {code}: {_short(exc.message)}"
    headers = exc.response.headers
    if code == 429:
        return AttemptFailure("rate_limited", message, True, retry_after_seconds(headers))
    if code == 408:
        return AttemptFailure("timeout", message, True, outage=True)
    if code >= 500:
        return AttemptFailure("server_error", message, True, retry_after_seconds(headers), outage=True)
    if code in _PERMANENT:
        return AttemptFailure(_PERMANENT[code], message, False)
    if code not in (400, 422):
        return AttemptFailure("request_rejected", message, False)
    error = _error_object(exc.body)
    if code == 400 and _content_filtered(error):
        # Azure OpenAI answers a prompt its content filter blocks with 400 code content_filter:
        # the server works and will say the same again, so neither retried nor an outage.
        return AttemptFailure("refused", f"judge provider's content filter blocked the prompt: {_short(exc.message)}",
                              False)
    text = f"{exc.message} {exc.body}".lower()
    return AttemptFailure(
        "request_rejected", message, False,
        format_rejected=any(word in text for word in _FORMAT_WORDS),
        params_rejected=(error.get("param") in _REASONING_PARAMS or "max_completion_tokens" in text))


def _content_filtered(error: Mapping[str, Any]) -> bool:
    """Azure's content-filter rejection: ``error.code`` ``content_filter`` (its inner error
    ``ResponsibleAIPolicyViolation``)."""
    inner = error.get("innererror")
    inner_code = inner.get("code") if isinstance(inner, Mapping) else None
    return error.get("code") == "content_filter" or inner_code == "ResponsibleAIPolicyViolation"


def _error_object(body: object) -> Mapping[str, Any]:
    """The ``error`` object of an OpenAI-style error body (the SDK passes it already unwrapped
    for some errors and wrapped for others)."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        return inner if isinstance(inner, Mapping) else body
    return {}


def _classify_transport(exc: BaseException) -> AttemptFailure:
    # The aiohttp transport reports refused and dropped connections as ConnectTimeout, so the
    # openai error type alone cannot tell a timeout from a dead server: look at the root cause.
    chain = _causes(exc)
    if any(isinstance(e, TimeoutError) for e in chain):
        return AttemptFailure("timeout", "judge request timed out", True, outage=True)
    never_sent = any(isinstance(e, (ConnectionRefusedError, socket.gaierror)) for e in chain)
    if any(isinstance(e, (OSError, aiohttp.ClientConnectionError)) for e in chain):
        return AttemptFailure("connection_error", f"judge connection failed: {_short(str(chain[-1]))}", True,
                              outage=True, reached=not never_sent)
    if isinstance(exc, openai.APITimeoutError):
        return AttemptFailure("timeout", "judge request timed out", True, outage=True)
    return AttemptFailure("connection_error", "judge connection failed", True, outage=True)


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
