"""Drive the sample app at a steady rate and ship its spans over OTLP/HTTP to any sidecar.

:func:`run_traffic` is the library entry point: the demo uses it, and so can a test that needs
realistic GenAI traffic against its own sidecar (e.g. the dashboard test)::

    stop = asyncio.Event()
    task = asyncio.create_task(run_traffic("http://127.0.0.1:4318", rate_per_second=20,
                                           stop=stop, regression_at=5.0, seed=1))
    ...                  # wait for what the test needs
    stop.set()
    stats = await task   # spans are flushed to the endpoint when this returns

The sidecar sees the full picture only with the demo's mapping (``monitor.demo.settings``):
the ``route`` label from ``http.route`` and the reference answer attribute for ``f1_score``.

Several conversations are open at once and turns interleave between them, like users of one
service. Content is reproducible from ``seed`` (trace ids are random, conversation ids carry a
per-run prefix so two runs never merge conversations in one sidecar).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Mapping, Protocol

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from monitor.demo.corpus import CONVERSATIONS
from monitor.demo.rag_app import MODELS, SERVICE_NAME, ConversationState, HandledTurn, LocalAnswerModel, SampleRagApp
from monitor.demo.retrieval import Retriever

__all__ = ["BEFORE", "AFTER", "SentTurn", "TrafficObserver", "TrafficStats", "run_traffic"]

BEFORE, AFTER = "before", "after"
_OPEN_CONVERSATIONS = 8
_EXPORT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class SentTurn:
    """One turn the app handled and whose spans it queued for export."""

    turn: HandledTurn
    phase: str  # BEFORE | AFTER the regression

    @property
    def trace_id(self) -> str:
        return self.turn.trace_id


class TrafficObserver(Protocol):
    """Told about each turn as it is sent (on the event loop; must not block)."""

    def turn_sent(self, turn: SentTurn) -> None: ...

    def regression_started(self, at_unix: float) -> None: ...


@dataclass(frozen=True, slots=True)
class TrafficStats:
    turns: int
    conversations: int
    turns_before_regression: int
    turns_after_regression: int
    variants: Mapping[str, int]  # answer | vague | rude | refusal | leak → turns
    jailbreak_attempts: int
    with_reference: int
    regression_started_at: float | None  # unix seconds
    flushed: bool  # every span was handed to the endpoint before returning


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), max(0.0, seconds))
    except TimeoutError:
        return stop.is_set()
    return True


def _provider(endpoint: str, headers: Mapping[str, str] | None, service_name: str,
              service_version: str) -> TracerProvider:
    # An own provider, never the global one: the demo runs inside the sidecar's process.
    provider = TracerProvider(sampler=ALWAYS_ON, resource=Resource.create({
        "service.name": service_name, "service.version": service_version, "deployment.environment.name": "demo"}))
    exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces", headers=dict(headers or {}),
                                timeout=_EXPORT_TIMEOUT_SECONDS)
    # A short export delay so turns reach the sidecar within a fraction of a second.
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=200))
    return provider


def _close(provider: TracerProvider) -> bool:
    flushed = provider.force_flush(int(_EXPORT_TIMEOUT_SECONDS * 1000) * 2)
    provider.shutdown()
    return flushed


@dataclass(slots=True)
class _Counts:
    phases: dict[str, int] = field(default_factory=lambda: {BEFORE: 0, AFTER: 0})
    variants: dict[str, int] = field(default_factory=dict)
    jailbreaks: int = 0
    references: int = 0
    regression_started_at: float | None = None

    def add(self, sent: SentTurn) -> None:
        self.phases[sent.phase] += 1
        self.variants[sent.turn.variant] = self.variants.get(sent.turn.variant, 0) + 1
        self.jailbreaks += sent.turn.jailbreak
        self.references += sent.turn.has_reference

    def stats(self, conversations: int, flushed: bool) -> TrafficStats:
        return TrafficStats(
            turns=self.phases[BEFORE] + self.phases[AFTER], conversations=conversations,
            turns_before_regression=self.phases[BEFORE], turns_after_regression=self.phases[AFTER],
            variants=dict(self.variants), jailbreak_attempts=self.jailbreaks, with_reference=self.references,
            regression_started_at=self.regression_started_at, flushed=flushed)


class _Sessions:
    """The open conversations; a finished one is replaced by a fresh scripted one."""

    def __init__(self, rng: random.Random, run_id: str) -> None:
        self._rng = rng
        self._run_id = run_id
        self._weights = [c.weight for c in CONVERSATIONS]
        self.started = 0
        self.open = [self._new() for _ in range(_OPEN_CONVERSATIONS)]

    def _new(self) -> ConversationState:
        self.started += 1
        script = self._rng.choices(CONVERSATIONS, self._weights)[0]
        return ConversationState(f"demo-{self._run_id}-{self.started:06d}", script, self._rng.choice(MODELS))

    def pick(self) -> ConversationState:
        return self._rng.choice(self.open)

    @property
    def begun(self) -> int:
        """Conversations with at least one turn (fresh ones wait in ``open`` unstarted)."""
        return self.started - sum(1 for c in self.open if c.next_turn == 0)

    def advance(self, conversation: ConversationState) -> None:
        if conversation.finished:
            self.open[self.open.index(conversation)] = self._new()


async def run_traffic(endpoint: str, *, rate_per_second: float, stop: asyncio.Event,
                      regression_at: float | None, seed: int, observer: TrafficObserver | None = None,
                      headers: Mapping[str, str] | None = None,
                      service_name: str = SERVICE_NAME, service_version: str = "2.3.0") -> TrafficStats:
    """Send turns to ``endpoint`` (an OTLP/HTTP base URL such as ``http://127.0.0.1:4318``) at
    ``rate_per_second`` until ``stop`` is set; ``regression_at`` seconds after the start the
    retriever starts returning wrong articles (None: never); ``service_version`` is the app's build
    (the ``service.version`` resource attribute). Flushes the spans before returning."""
    if not rate_per_second > 0:
        raise ValueError("rate_per_second must be positive")
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    retriever = Retriever()
    provider = _provider(endpoint, headers, service_name, service_version)
    app = SampleRagApp(provider.get_tracer("skylark.support", "2.3.0"), retriever, LocalAnswerModel(rng), rng)
    sessions = _Sessions(rng, uuid.uuid4().hex[:8])
    interval = 1.0 / rate_per_second
    counts = _Counts()
    started = next_at = loop.time()
    try:
        while not stop.is_set():
            if regression_at is not None and not retriever.regressed and loop.time() - started >= regression_at:
                retriever.regressed = True
                counts.regression_started_at = time.time()
                if observer is not None:
                    observer.regression_started(counts.regression_started_at)
            conversation = sessions.pick()
            sent = SentTurn(app.handle(conversation), AFTER if retriever.regressed else BEFORE)
            sessions.advance(conversation)
            counts.add(sent)
            if observer is not None:
                observer.turn_sent(sent)
            next_at += interval
            # After a stall (a suspended laptop, a busy loop) carry on at the rate, not in a burst.
            next_at = max(next_at, loop.time() - interval)
            if await _stopped_within(stop, next_at - loop.time()):
                break
    finally:
        flushed = await asyncio.to_thread(_close, provider)
    return counts.stats(sessions.begun, flushed)
