"""The judge client: one JSON-producing chat call, budgeted, throttled, retried, timed out, counted.

A metric evaluator builds a :class:`~monitor.judge.types.JudgeRequest` and awaits
:meth:`JudgeClient.complete_json`; it gets the validated object or a ``JudgeError`` whose
``outcome`` says why not. One call runs, within ``deadline_seconds``, attempts of this shape:

    storm gate → window slot (FIFO) → shared 429 pause → request/token budget → circuit breaker
      → HTTP send → classify: chat completion? → content is one JSON object? → schema? → ok
    then, by outcome: 429 → the storm gate shuts for everyone until the storm probe finds the
    rate limit over (:mod:`monitor.judge.storm_probe`), then this call goes again (until its deadline);
    5xx/timeout/connection → backoff (full jitter, ≥ Retry-After) up to ``max_retries``;
    anything else → final.

Breaker admission comes last, right before the send: a call that waited for a slot, the pause or
the budget must not fire into a circuit that opened meanwhile. The budget is charged for every
attempt that may have reached the server (see :mod:`monitor.judge.budget`).

The ``openai`` package does the HTTP (``AsyncOpenAI``, or ``AsyncAzureOpenAI`` for Azure) over its
aiohttp transport; its own retries are off and its timeouts are ours. The 200 body is read by
:mod:`monitor.judge.envelope`, not by the SDK's unvalidated models. Structured output starts as
``json_schema`` and, when the server rejects that ``response_format``, falls back to
``json_object`` and then to none; a server that rejects ``max_tokens``/``temperature`` switches the
client to reasoning-model parameters (:mod:`monitor.judge.request_body`). Both are remembered for
the client's lifetime.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass
from typing import Any, Mapping

import openai

from monitor.judge.breaker import Admission, CircuitBreaker
from monitor.judge.budget import Budget, BudgetPermit, JudgeBudget
from monitor.judge.clock import Clock, LoopClock
from monitor.judge.config import JudgeConfig
from monitor.judge.envelope import ChatReply, NotAChatCompletion, read_chat_completion
from monitor.judge.reply_parsing import extract_json_object
from monitor.judge.request_body import OutgoingRequest, RequestShaper
from monitor.judge.retry import AttemptFailure, Backoff, classify_failure
from monitor.judge.storm_probe import StormProbe
from monitor.judge.telemetry import JudgeTelemetry, NullJudgeTelemetry
from monitor.judge.throttle import RateLimitThrottle, Slot, ThrottleTimeout
from monitor.judge.transport import make_openai_client
from monitor.judge.types import JudgeError, JudgeReply, JudgeRequest, R
from monitor.model import JudgeUsage

try:  # the raw response class of the openai package's transport (httpx2 from openai 3.x on)
    from httpx2 import Response as _RawResponse
except ImportError:  # pragma: no cover - older openai releases
    from httpx import Response as _RawResponse  # type: ignore[assignment]

__all__ = ["JudgeClient"]

log = logging.getLogger(__name__)

# Share of timeout_seconds an attempt needs at least before the call's deadline.
_MIN_ATTEMPT_SHARE = 0.1
# Each mode falls back to the next when the server rejects its response_format.
_FALLBACK = {"json_schema": "json_object", "json_object": "none"}


class _StormBegan(Exception):
    """A 429 shut the storm gate while this attempt waited for budget: give the slot back and
    queue at the gate."""


class _AttemptFailed(Exception):
    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass
class _Call:
    """Book-keeping of one ``complete_json`` call across its attempts."""

    request: JudgeRequest[Any]
    started: float
    deadline: float
    attempts: int = 0
    sent: OutgoingRequest | None = None
    """The body of the latest attempt (its format and parameter family)."""
    format: str = ""
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
                 environ: Mapping[str, str] | None = None, budget_window_seconds: float = 60.0,
                 budget: Budget | None = None) -> None:
        if not config.enabled:
            raise ValueError("judge: set judge.model and judge.base_url (or judge.azure)")
        self._config = config
        self._telemetry = telemetry or NullJudgeTelemetry()
        self._clock = clock or LoopClock()
        self._environ = environ
        # The fleet's budget when one is given (fleet.redis_url), else this process's.
        self._budget: Budget = budget or JudgeBudget(
            requests_per_minute=config.requests_per_minute, tokens_per_minute=config.tokens_per_minute,
            on_exhausted=config.on_budget_exhausted, max_wait_seconds=config.max_budget_wait_seconds,
            clock=self._clock, telemetry=self._telemetry, window_seconds=budget_window_seconds)
        self._breaker = CircuitBreaker(config.circuit_breaker.failure_threshold,
                                       config.circuit_breaker.open_seconds, self._clock, self._telemetry)
        self._backoff = Backoff(config.backoff_initial_seconds, config.backoff_max_seconds, rng)
        self._throttle = RateLimitThrottle(
            config.max_concurrency, self._clock, pause_initial_seconds=config.backoff_initial_seconds,
            pause_max_seconds=config.backoff_max_seconds, rng=rng, telemetry=self._telemetry)
        self._shaper = RequestShaper(config)
        self._closing = asyncio.Event()
        self._probe = StormProbe(self._throttle, self._budget, self._clock, self._closing, self._telemetry,
                                 self._shaper.probe, self._send_probe, budget_wait_seconds=config.deadline_seconds)
        self._format: str = "json_schema" if config.structured_output == "auto" else config.structured_output
        self._idle = asyncio.Event()
        self._idle.set()
        self._active = 0
        self._openai: openai.AsyncOpenAI | None = None
        self._served_model: str | None = None

    @property
    def served_model(self) -> str:
        """The judge's identity on results (``judge_model``): the model the latest validated reply
        named, else the configured one. A provider that moves an alias to a new snapshot changes
        this without any configuration change. Calls in flight at the moment of such a change may
        be labelled with their neighbour's model: both are models that served."""
        return self._served_model or self._config.effective_model or ""

    @property
    def structured_output(self) -> str:
        """The ``response_format`` mode in use now (after any fallback)."""
        return self._format

    @property
    def reasoning_model(self) -> bool:
        """True while requests carry reasoning-model parameters."""
        return self._shaper.reasoning

    @property
    def circuit_state(self) -> str:
        """``closed`` | ``open`` | ``half_open``."""
        return self._breaker.state

    @property
    def throttle(self) -> RateLimitThrottle:
        """The shared 429 pause and congestion window (read-only use: status and tests)."""
        return self._throttle

    async def start(self) -> None:
        """Create the HTTP client (no network I/O). Raises ``ValueError`` for an unreadable
        key file. Safe to call again, also after :meth:`shutdown`."""
        if self._openai is not None:
            return
        self._closing.clear()
        self._throttle.reopen()
        self._openai = make_openai_client(self._config, self._environ)

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
        """Refuse new calls, cut budget, pause and backoff waits short, let in-flight attempts
        finish until ``deadline`` (a ``loop.time()`` value), then close the HTTP client. Safe
        twice and without :meth:`start`."""
        self._closing.set()
        self._throttle.close()  # calls queued for a slot or a storm's end stop now, not at their deadline
        await self._probe.stop()
        remaining = deadline - asyncio.get_running_loop().time()
        if self._active and remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), remaining)
        client, self._openai = self._openai, None
        if client is not None:
            await client.close()

    async def complete_json(self, request: JudgeRequest[R]) -> JudgeReply[R]:
        """Ask the judge and return the reply validated against ``request.reply``, the call counted
        with its final outcome. Raises ``JudgeError`` (outcome in ``JUDGE_OUTCOMES``, usage
        attached); never outlives ``deadline_seconds``."""
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

    async def _run(self, call: _Call) -> JudgeReply[Any]:
        """Attempts until success, a permanent failure, or no time left."""
        retries = 0
        while True:
            self._ensure_open(call)
            try:
                return await self._attempt(call)
            except _StormBegan:
                continue
            except _AttemptFailed as failed:
                failure = failed.failure
            if failure.format_rejected and self._fall_back(call):
                continue  # a capability probe, not a retry: resend at once in the simpler mode
            if failure.params_rejected and self._shaper.adopt_reasoning(self._sent_reasoning(call)):
                continue  # likewise: resend with reasoning-model parameters
            call.last_error = JudgeError(failure.outcome, failure.message)
            if failure.outcome == "rate_limited":
                continue  # ridden out: the shared pause spaces the next attempt, the deadline ends it
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

    async def _attempt(self, call: _Call) -> JudgeReply[Any]:
        """One HTTP attempt, holding a window slot throughout."""
        try:
            await self._throttle.wait_for_calm(self._last_start(call))
            slot = await self._throttle.acquire(call.deadline)
        except ThrottleTimeout as exc:
            if exc.reason == "closing":
                raise call.last_error or JudgeError("connection_error", "judge client is shutting down") from None
            if exc.reason == "rate_limit":
                raise call.last_error or JudgeError(
                    "rate_limited", "judge rate limited: no slot in the reduced window before the deadline") from None
            raise call.last_error or JudgeError("timeout", "no judge slot became free before the deadline") from None
        try:
            outgoing, permit, admission = await self._admit(call)
            call.attempts += 1
            call.sent = outgoing
            self._throttle.sending(slot)
            reply = await self._send_settled(call, outgoing, slot, permit, admission)
        finally:
            self._throttle.release(slot)
        return self._parse(call, reply)

    async def _admit(self, call: _Call) -> tuple[OutgoingRequest, BudgetPermit, Admission]:
        """Wait out the shared pause and the budget, then ask the breaker: in that order, so the
        grant is followed by the send at once and the breaker's verdict is fresh."""
        last_start = self._last_start(call)
        while True:
            try:
                resumed = await self._throttle.wait_for_pause(last_start, self._closing)
            except ThrottleTimeout:
                raise call.last_error or JudgeError(
                    "rate_limited", "judge rate limit pause lasts beyond the call's deadline") from None
            if not resumed:
                raise call.last_error or JudgeError("connection_error", "judge client is shutting down")
            self._ensure_open(call)
            call.format = self._format
            outgoing = self._shaper.build(call.request, call.format)
            permit = await self._budget.acquire(outgoing.reserved_tokens, call.deadline, self._closing)
            if self._throttle.storming:
                permit.cancel()  # a 429 arrived while this call waited for budget: to the gate
                raise _StormBegan
            if self._throttle.paused():
                permit.cancel()
                continue
            if self._clock.now() > last_start:
                permit.cancel()
                raise call.last_error or (
                    JudgeError("rate_limited", "judge rate limited: too little time left for an attempt")
                    if self._throttle.limiting else JudgeError("timeout", "too little time left for an attempt"))
            admission = self._breaker.allow()
            if admission is None:
                permit.cancel()
                raise call.last_error or JudgeError("circuit_open", "judge circuit is open")
            return outgoing, permit, admission

    def _last_start(self, call: _Call) -> float:
        # An attempt started with almost no time left would only turn a rate-limited call into a
        # "timeout": the last tenth of an attempt's timeout before the deadline is not used.
        return call.deadline - _MIN_ATTEMPT_SHARE * self._config.timeout_seconds

    async def _send_settled(self, call: _Call, outgoing: OutgoingRequest, slot: Slot, permit: BudgetPermit,
                            admission: Admission) -> ChatReply:
        """Send; then settle the budget, tell the breaker and the throttle, count the tokens."""
        try:
            reply = await self._send(call, outgoing)
        except (openai.OpenAIError, TimeoutError, NotAChatCompletion) as exc:
            failure = (AttemptFailure("parse_error", str(exc), False, outage=True)
                       if isinstance(exc, NotAChatCompletion) else classify_failure(exc))
            self._settle_failure(call, failure, slot, permit, admission)
            raise _AttemptFailed(failure) from None
        except BaseException:  # cancelled mid-flight: the server may have it; no verdict
            permit.finish()
            self._breaker.release(admission)
            raise
        self._breaker.success(admission)
        self._throttle.succeeded(slot)
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else outgoing.prompt_tokens
        # Some OpenAI-compatible servers omit usage; estimate so budgets still move.
        completion = (reply.completion_tokens if reply.completion_tokens is not None
                      else len(reply.content or "") // 4)
        permit.finish(prompt + completion)
        call.prompt_tokens += prompt
        call.completion_tokens += completion
        self._count_tokens(call.request, prompt, completion)
        return reply

    def _settle_failure(self, call: _Call, failure: AttemptFailure, slot: Slot, permit: BudgetPermit,
                        admission: Admission) -> None:
        permit.finish(None if failure.reached else 0)
        if failure.outcome == "rate_limited":
            until = self._throttle.rate_limited(slot, failure.retry_after)
            self._budget.rate_limited(until - self._clock.now())
            self._probe.ensure_running()
            log.debug("judge rate limited: pausing all calls for %.2fs, window %.1f",
                      until - self._clock.now(), self._throttle.window)
        if failure.outage:
            self._breaker.failure(admission)
        else:
            self._breaker.success(admission)
        if failure.outcome in ("auth_error", "not_found"):
            log.warning("judge %s (check judge.base_url, judge.model and the API key): %s",
                        failure.outcome, failure.message)
        self._telemetry.attempt_failed(call.request.metric, failure.outcome)

    async def _send_probe(self, outgoing: OutgoingRequest) -> AttemptFailure | None:
        """Post the storm probe; None for any answer but a 429 (see ``StormProbe``)."""
        client = self._openai
        if client is None:
            return None
        try:
            async with asyncio.timeout(self._config.timeout_seconds):
                response = await client.post("/chat/completions", body=outgoing.body, cast_to=_RawResponse,
                                             options={"timeout": self._config.timeout_seconds})
                await response.aread()
        except (openai.OpenAIError, TimeoutError) as exc:
            failure = classify_failure(exc)
            return failure if failure.outcome == "rate_limited" else None
        return None

    def _count_tokens(self, request: JudgeRequest, prompt: int, completion: int) -> None:
        """Split a shared call's tokens evenly across its metrics (remainders to the first), so
        the per-metric series sum to what the call used and every label is a real metric id."""
        owners = request.token_owners
        for kind, total in (("prompt", prompt), ("completion", completion)):
            share, extra = divmod(total, len(owners))
            for index, metric in enumerate(owners):
                self._telemetry.tokens(metric, kind, share + (1 if index < extra else 0), request.call)

    async def _send(self, call: _Call, outgoing: OutgoingRequest) -> ChatReply:
        client = self._openai
        if client is None:
            raise JudgeError("connection_error", "judge client is not started")
        remaining = call.deadline - self._clock.now()
        if remaining <= 0:
            raise TimeoutError
        timeout = min(self._config.timeout_seconds, remaining)
        # The aiohttp transport only bounds each socket read; asyncio.timeout bounds the whole
        # attempt, so a server trickling bytes cannot hold a call past its timeout.
        async with asyncio.timeout(timeout):
            # The body is already plain JSON: posting it directly skips the openai package's
            # per-call parameter transformation, ~45% of its CPU per call (profiled). Same client,
            # transport, auth and Azure routing; error statuses still raise the SDK's exceptions.
            response = await client.post("/chat/completions", body=outgoing.body, cast_to=_RawResponse,
                                         options={"timeout": timeout})
            body = await response.aread()
        return read_chat_completion(body, response.headers)

    def _parse(self, call: _Call, reply: ChatReply) -> JudgeReply[Any]:
        """Exactly one JSON object that validates against the request's reply declaration, or
        ``refused`` (a refusal or a content filter), or ``parse_error``/``out_of_range`` (the
        breaker already counted the server as working). Free text that fails the schema is a
        ``parse_error``, never ``refused``: only the provider's own signals count as a refusal."""
        if reply.refusal:
            # The judge declined to grade: an answer about the text, not a malformed reply. Its
            # wording is not kept: it may quote the text, and a score's reason outlives redaction.
            raise JudgeError("refused", "the judge refused to grade (message.refusal)")
        if reply.finish_reason == "content_filter":
            raise JudgeError("refused", "the judge provider's content filter blocked the reply (content_filter)")
        if reply.finish_reason == "length":
            hint = (" (reasoning models spend judge.reasoning_extra_output_tokens before answering)"
                    if self._shaper.reasoning else "")
            raise JudgeError("parse_error", f"judge reply cut short (length){hint}")
        data = extract_json_object(reply.content)
        value = call.request.reply.validate(data)
        if reply.model:
            self._served_model = reply.model
        return JudgeReply(value=value, data=data, usage=call.usage(self._clock.now()), raw_text=reply.content or "")

    @staticmethod
    def _sent_reasoning(call: _Call) -> bool:
        return call.sent is not None and "max_completion_tokens" in call.sent.body

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
