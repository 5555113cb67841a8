"""The judge client: one JSON-producing chat call, budgeted, retried, timed out and counted.

A metric evaluator builds a :class:`~monitor.judge.types.JudgeRequest` and awaits
:meth:`JudgeClient.complete_json`; it gets the validated object or a ``JudgeError`` whose
``outcome`` says why not. One call runs, within ``deadline_seconds``:

    circuit breaker → concurrency slot → request/token budget → HTTP attempt → parse + schema
          ↑_____________ backoff (full jitter, ≥ Retry-After), only for 429/5xx/timeouts/connection

The ``openai`` package does the HTTP (``AsyncOpenAI``, or ``AsyncAzureOpenAI`` for Azure) over its
aiohttp transport; its own retries are off and its timeouts are ours. Structured output starts as
``json_schema`` and, when the server rejects that ``response_format``, falls back to
``json_object`` and then to none, remembered for the client's lifetime.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from dataclasses import dataclass
from typing import Any, AsyncIterator, Mapping

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from monitor.judge.breaker import Admission, CircuitBreaker
from monitor.judge.budget import JudgeBudget, Permit, estimate_prompt_tokens
from monitor.judge.clock import Clock, LoopClock
from monitor.judge.config import JudgeConfig
from monitor.judge.reply_parsing import check_schema, extract_json_object
from monitor.judge.retry import AttemptFailure, Backoff, classify_failure
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry
from monitor.judge.types import JUDGE_OUTCOMES, JudgeError, JudgeReply, JudgeRequest
from monitor.model import JudgeUsage

__all__ = ["JudgeClient"]

log = logging.getLogger(__name__)

# Servers without auth (vLLM, Ollama) ignore the key, but the openai client insists on one.
_NO_KEY = "EMPTY"
# Each mode falls back to the next when the server rejects its response_format.
_FALLBACK = {"json_schema": "json_object", "json_object": "none"}


class _AttemptFailed(Exception):
    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass
class _Call:
    """Book-keeping of one ``complete_json`` call across its attempts."""

    request: JudgeRequest
    started: float
    deadline: float
    attempts: int = 0
    format: str = ""
    """Structured-output mode of the latest attempt."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last_error: JudgeError | None = None

    def usage(self, now: float) -> JudgeUsage:
        return JudgeUsage(self.prompt_tokens, self.completion_tokens, max(0.0, now - self.started),
                          self.attempts)


class JudgeClient:
    """An OpenAI-compatible LLM judge implementing the :class:`~monitor.judge.types.Judge`
    protocol. Construction has no side effects; :meth:`start` creates the HTTP client."""

    def __init__(self, config: JudgeConfig, *, telemetry: JudgeTelemetry | None = None,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 environ: Mapping[str, str] | None = None, budget_window_seconds: float = 60.0) -> None:
        if not config.enabled:
            raise ValueError("judge: set judge.model and judge.base_url (or judge.azure)")
        self._config = config
        self._telemetry = telemetry or NullJudgeTelemetry()
        self._clock = clock or LoopClock()
        self._environ = environ
        self._budget = JudgeBudget(
            requests_per_minute=config.requests_per_minute, tokens_per_minute=config.tokens_per_minute,
            on_exhausted=config.on_budget_exhausted, max_wait_seconds=config.max_budget_wait_seconds,
            clock=self._clock, telemetry=self._telemetry, window_seconds=budget_window_seconds)
        self._breaker = CircuitBreaker(config.circuit_breaker.failure_threshold,
                                       config.circuit_breaker.open_seconds, self._clock, self._telemetry)
        self._backoff = Backoff(config.backoff_initial_seconds, config.backoff_max_seconds, rng)
        self._format = "json_schema" if config.structured_output == "auto" else config.structured_output
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self._closing = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._active = 0
        self._openai: openai.AsyncOpenAI | None = None

    @property
    def structured_output(self) -> str:
        """The ``response_format`` mode in use now (after any fallback)."""
        return self._format

    @property
    def circuit_state(self) -> str:
        """``closed`` | ``open`` | ``half_open``."""
        return self._breaker.state

    async def start(self) -> None:
        """Create the HTTP client (no network I/O). Raises ``ValueError`` for an unreadable
        key file. Safe to call again, also after :meth:`shutdown`."""
        if self._openai is not None:
            return
        self._closing.clear()
        self._openai = self._make_openai()

    async def aclose(self) -> None:
        """Shut down at once: cut waits and close the HTTP client under in-flight attempts."""
        await self.shutdown(asyncio.get_running_loop().time())

    async def __aenter__(self) -> JudgeClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        target = self._config.azure.endpoint if self._config.azure else self._config.base_url
        return (f"JudgeClient(model={self._config.effective_model!r}, endpoint={target!r}, "
                f"structured_output={self._format!r}, circuit={self._breaker.state!r})")

    async def shutdown(self, deadline: float) -> None:
        """Refuse new calls, cut budget and backoff waits short, let in-flight attempts finish
        until ``deadline`` (a ``loop.time()`` value), then close the HTTP client. Safe twice
        and without :meth:`start`."""
        self._closing.set()
        remaining = deadline - asyncio.get_running_loop().time()
        if self._active and remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), remaining)
        client, self._openai = self._openai, None
        if client is not None:
            await client.close()

    def report_invalid(self, metric: str, outcome: str) -> None:
        """Count an ``ok`` reply that the metric's parser rejected (``parse_error`` or
        ``out_of_range``)."""
        if outcome not in JUDGE_OUTCOMES or outcome == "ok":
            raise ValueError(f"not a judge failure outcome: {outcome!r}")
        self._telemetry.reply_rejected(metric, outcome)

    async def complete_json(self, request: JudgeRequest) -> JudgeReply:
        """Ask the judge and return the reply object validated against ``request.json_schema``.
        Raises ``JudgeError`` (outcome in ``JUDGE_OUTCOMES``, usage attached); never outlives
        ``deadline_seconds``."""
        now = self._clock.now()
        call = _Call(request, now, now + self._config.deadline_seconds)
        outcome: str | None = "ok"
        self._enter()
        try:
            return await self._run(call)
        except JudgeError as err:
            outcome = err.outcome
            err.usage = call.usage(self._clock.now())
            raise
        except asyncio.CancelledError:
            outcome = None  # the caller gave up; nothing to count against the judge
            raise
        finally:
            self._leave()
            if outcome is not None:
                self._telemetry.call_finished(request.metric, outcome, self._clock.now() - call.started)

    async def _run(self, call: _Call) -> JudgeReply:
        """Attempts with backoff until success, a permanent failure, or no time left."""
        retries = 0
        while True:
            self._ensure_open(call)
            admission = self._breaker.allow()
            if admission is None:
                raise call.last_error or JudgeError("circuit_open", "judge circuit is open")
            try:
                return await self._attempt(call, admission)
            except _AttemptFailed as failed:
                failure = failed.failure
            if failure.format_rejected and self._fall_back(call):
                continue  # a capability probe, not a retry: resend at once in the simpler mode
            call.last_error = JudgeError(failure.outcome, failure.message)
            if not failure.retryable or retries >= self._config.max_retries:
                raise call.last_error
            delay = self._backoff.delay(retries, failure.retry_after)
            if self._clock.now() + delay >= call.deadline:
                raise call.last_error  # waiting would outlive the deadline: fail now
            retries += 1
            log.debug("judge %s: retry %d in %.2fs after %s", call.request.metric, retries, delay,
                      failure.outcome)
            if not await self._clock.sleep(delay, self._closing):
                raise call.last_error

    async def _attempt(self, call: _Call, admission: Admission) -> JudgeReply:
        """One HTTP attempt; the breaker hears how it went, whatever happens."""
        verdict = False
        try:
            # The budget is taken inside the slot so that a grant is followed by its send at
            # once; a grant that then queued for a slot would reach the server late and bunch
            # up with later grants in the server's window.
            async with self._slot(call):
                call.format = fmt = self._format
                estimate = estimate_prompt_tokens(call.request)
                permit = await self._budget.acquire(estimate + call.request.max_output_tokens,
                                                    call.deadline, self._closing)
                try:
                    self._ensure_open(call)
                    call.attempts += 1
                    completion = await self._send_counted(call, fmt, permit, estimate, admission)
                except _AttemptFailed:
                    verdict = True  # _send_counted already told the breaker
                    raise
                finally:
                    permit.finish()  # no-op after _send_counted's; frees the budget on cancel
                verdict = True
            return self._parse(call, completion)
        finally:
            if not verdict:
                self._breaker.release(admission)

    async def _send_counted(self, call: _Call, fmt: str, permit: Permit, estimate: int,
                            admission: Admission) -> ChatCompletion:
        """Send, settle the budget with the real usage, and tell the breaker how it went."""
        try:
            completion = await self._send(call, fmt)
        except (openai.OpenAIError, TimeoutError) as exc:
            failure = classify_failure(exc)
            # A refused or throttled request consumed nothing; otherwise assume the prompt was read.
            permit.finish(0 if failure.outcome in ("rate_limited", "connection_error") else estimate)
            if failure.retryable:
                self._breaker.failure(admission)
            else:
                self._breaker.success(admission)
            self._telemetry.attempt_failed(call.request.metric, failure.outcome)
            raise _AttemptFailed(failure) from None
        self._breaker.success(admission)
        prompt, completion_tokens = self._usage(completion, estimate)
        permit.finish(prompt + completion_tokens)
        call.prompt_tokens += prompt
        call.completion_tokens += completion_tokens
        self._telemetry.tokens(call.request.metric, "prompt", prompt)
        self._telemetry.tokens(call.request.metric, "completion", completion_tokens)
        return completion

    async def _send(self, call: _Call, fmt: str) -> ChatCompletion:
        client = self._openai
        if client is None:
            raise JudgeError("connection_error", "judge client is not started")
        remaining = call.deadline - self._clock.now()
        if remaining <= 0:
            raise TimeoutError
        timeout = min(self._config.timeout_seconds, remaining)
        extra: dict[str, Any] = {}
        if fmt != "none":
            extra["response_format"] = self._response_format(call.request, fmt)
        # The aiohttp transport only bounds each socket read; asyncio.timeout bounds the whole
        # attempt, so a server trickling bytes cannot hold a call past its timeout.
        body = {
            "model": self._config.effective_model or "",
            "messages": self._messages(call.request, fmt),
            "temperature": 0,
            "max_tokens": call.request.max_output_tokens,
            **extra,
        }
        async with asyncio.timeout(timeout):
            # The body is already plain JSON: posting it directly skips the openai package's
            # per-call parameter transformation, ~45% of its CPU per call (profiled), which capped
            # throughput at high concurrency. Same client, transport, auth and Azure routing.
            return await client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                     options={"timeout": timeout})

    @staticmethod
    def _messages(request: JudgeRequest, fmt: str) -> list[ChatCompletionMessageParam]:
        user = request.user
        if fmt != "json_schema":
            # Without a server-side schema the model only knows the shape from the prompt. Appended
            # to the user turn so the system prompt stays identical (prefix caching).
            user += ("\n\nReply with exactly one JSON object and nothing else, matching this JSON "
                     f"schema:\n{json.dumps(request.json_schema, sort_keys=True)}")
        return [{"role": "system", "content": request.system}, {"role": "user", "content": user}]

    @staticmethod
    def _response_format(request: JudgeRequest, fmt: str) -> dict[str, Any]:
        if fmt == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {
            "name": request.schema_name, "schema": dict(request.json_schema), "strict": True}}

    def _parse(self, call: _Call, completion: ChatCompletion) -> JudgeReply:
        """Exactly one JSON object that satisfies the schema, or ``parse_error``/``out_of_range``."""
        if not completion.choices:
            raise JudgeError("parse_error", "judge reply has no choices")
        choice = completion.choices[0]
        message = choice.message
        if message.refusal:
            raise JudgeError("parse_error", "judge refused to answer")
        if choice.finish_reason in ("length", "content_filter"):
            raise JudgeError("parse_error", f"judge reply cut short ({choice.finish_reason})")
        data = extract_json_object(message.content)
        check_schema(data, call.request.json_schema)
        usage = call.usage(self._clock.now())
        return JudgeReply(data=data, usage=usage, raw_text=message.content or "")

    @staticmethod
    def _usage(completion: ChatCompletion, estimate: int) -> tuple[int, int]:
        usage = completion.usage
        if usage is not None:
            return usage.prompt_tokens, usage.completion_tokens
        # Some OpenAI-compatible servers omit usage; estimate so budgets still move.
        text = completion.choices[0].message.content if completion.choices else None
        return estimate, len(text or "") // 4

    def _fall_back(self, call: _Call) -> bool:
        """Step down one structured-output mode after a rejection; False when there is none."""
        if self._config.structured_output != "auto":
            return False
        rejected = call.format
        if rejected not in _FALLBACK:
            return False
        # Concurrent calls may all be rejected in the same mode: step down once per mode.
        if self._format == rejected:
            self._format = _FALLBACK[rejected]
            log.info("judge rejected response_format %s; using %s from now on", rejected, self._format)
        return True

    @contextlib.asynccontextmanager
    async def _slot(self, call: _Call) -> AsyncIterator[None]:
        """One of ``max_concurrency`` in-flight slots, waited for until the deadline."""
        started = self._clock.now()
        busy = self._slots.locked()
        try:
            async with asyncio.timeout(max(0.0, call.deadline - started)):
                await self._slots.acquire()
        except TimeoutError:
            self._telemetry.budget_shed("concurrency")
            raise JudgeError("timeout", "no judge slot became free before the deadline") from None
        if busy:
            self._telemetry.budget_waited("concurrency", self._clock.now() - started)
        try:
            yield
        finally:
            self._slots.release()

    def _ensure_open(self, call: _Call) -> None:
        if self._closing.is_set() or self._openai is None:
            raise call.last_error or JudgeError("connection_error", "judge client is not running")

    def _enter(self) -> None:
        self._active += 1
        self._idle.clear()

    def _leave(self) -> None:
        self._active -= 1
        if self._active == 0:
            self._idle.set()

    def _make_openai(self) -> openai.AsyncOpenAI:
        config = self._config
        key = config.resolve_api_key(self._environ)
        if key is None:
            log.info("judge: no API key configured; fine for servers without auth")
        common: dict[str, Any] = {
            "api_key": key.get_secret_value() if key else _NO_KEY,
            "max_retries": 0,  # retries are ours: deadline-bound, breaker-aware, budgeted
            "timeout": config.timeout_seconds,
            "http_client": openai.DefaultAioHttpClient(timeout=config.timeout_seconds),
        }
        if config.azure is not None:
            return openai.AsyncAzureOpenAI(azure_endpoint=config.azure.endpoint,
                                           api_version=config.azure.api_version,
                                           azure_deployment=config.azure.deployment, **common)
        return openai.AsyncOpenAI(base_url=config.base_url, **common)
