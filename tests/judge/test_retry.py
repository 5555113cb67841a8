from __future__ import annotations

import random

import httpx2
import openai
import pytest

from monitor.judge.retry import Backoff, classify_failure, retry_after_seconds

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def status_error(code: int, headers: dict[str, str] | None = None, message: str = "x") -> openai.APIStatusError:
    response = httpx2.Response(code, headers=headers or {}, request=REQUEST)
    cls = {400: openai.BadRequestError, 429: openai.RateLimitError}.get(code, openai.APIStatusError)
    return cls(message, response=response, body={"error": {"message": message}})


@pytest.mark.parametrize("code, outcome, retryable, outage", [
    (429, "rate_limited", True, False),  # a rate limit is not an outage
    (500, "server_error", True, True), (503, "server_error", True, True), (408, "timeout", True, True),
    (401, "auth_error", False, False), (403, "auth_error", False, False), (404, "not_found", False, False),
    (400, "request_rejected", False, False), (413, "request_rejected", False, False),
])
def test_status_classification(code: int, outcome: str, retryable: bool, outage: bool) -> None:
    failure = classify_failure(status_error(code))
    assert (failure.outcome, failure.retryable, failure.outage) == (outcome, retryable, outage)
    assert not failure.format_rejected and not failure.params_rejected
    assert failure.reached


def test_response_format_rejection_is_flagged() -> None:
    failure = classify_failure(status_error(400, message="'response_format' json_schema is not supported"))
    assert failure.format_rejected and not failure.retryable
    assert not classify_failure(status_error(400, message="context length exceeded")).format_rejected


@pytest.mark.parametrize("message, param", [
    ("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
     "instead.", "max_tokens"),
    ("Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is "
     "supported.", "temperature"),
])
def test_reasoning_parameter_rejection_is_flagged(message: str, param: str) -> None:
    response = httpx2.Response(400, request=REQUEST)
    body = {"message": message, "type": "invalid_request_error", "param": param, "code": "unsupported_parameter"}
    failure = classify_failure(openai.BadRequestError(message, response=response, body=body))
    assert failure.params_rejected and failure.outcome == "request_rejected"


def test_timeouts_and_connection_errors() -> None:
    assert classify_failure(TimeoutError()).outcome == "timeout"
    assert classify_failure(openai.APITimeoutError(request=REQUEST)).outcome == "timeout"
    refused = openai.APITimeoutError(request=REQUEST)
    refused.__cause__ = ConnectionRefusedError(111, "refused")  # how the aiohttp transport reports it
    assert classify_failure(refused).outcome == "connection_error"
    assert not classify_failure(refused).reached  # refused: the budget is refunded
    assert all(classify_failure(e).outage for e in (TimeoutError(), refused))
    assert classify_failure(openai.APIConnectionError(request=REQUEST)).outcome == "connection_error"


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after": "0.5", "retry-after-ms": "120"}) == 0.12
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"},
                               wall_now=1445412480.0) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    assert classify_failure(status_error(429, {"retry-after": "3"})).retry_after == 3.0


def test_backoff_is_full_jitter_and_respects_retry_after() -> None:
    backoff = Backoff(0.5, 4.0, random.Random(7))
    delays = [backoff.delay(i, None) for i in range(8) for _ in range(50)]
    assert all(0 <= d <= 4.0 for d in delays)
    assert max(backoff.delay(0, None) for _ in range(50)) <= 0.5
    assert all(backoff.delay(3, 9.0) >= 9.0 for _ in range(20))
