"""Composition root: the only module that wires concrete stages together.

Start order is downstream-first (result store and sinks → OTLP exporters → admin → judge →
evaluation → conversations → assembler → forwarder → receivers), so nothing is accepted before
its consumer runs; shutdown is upstream-first under one deadline: stop listening, assemble what
is pending, close conversations, finish queued evaluations, close the judge client, flush the
exporters and the store.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from prometheus_client import CollectorRegistry, disable_created_metrics

from exporters.evaluation_metrics import PrometheusJudgeTelemetry, PrometheusResults, PrometheusSamplingTelemetry
from exporters.evaluation_events import EvaluationEvents
from exporters.jsonl_sink import JsonlSink
from exporters.labels import LabelFanOut, LabelPolicy
from exporters.otlp_metrics import OtlpMetrics, rolling_readings
from exporters.prometheus import PrometheusTelemetry, ScrapeTimeCollector
from exporters.store_factory import Store, build_store
from exporters.store_windows import StoreWindows
from exporters.jailbreak_rates import JailbreakCollector, JailbreakComparison
from exporters.release_metrics import ReleaseBoard, ReleaseCollector
from exporters.rolling import RollingCollector, RollingStats
from monitor.admin.review_api import ReviewApi
from monitor.admin.feedback_api import FeedbackApi
from monitor.admin.server import AdminServer
from monitor.evaluation.catalogue import metric_catalogue
from monitor.admin.diagnosis import Setting
from monitor.admin.health import PipelineStatus
from monitor.admin.pipeline import PipelineHealth
from monitor.admin.pipeline_watch import PipelineWatch
from monitor.assembly.assembler import Assembler
from monitor.assembly.conversations import ConversationSink, ConversationTracker
from monitor.assembly.turns import NO_TURN_REASONS, span_attributes_read
from monitor.config import MonitorConfig
from monitor.net.addresses import is_loopback
from monitor.evaluation.content_safety.backend import service_metric_ids
from monitor.evaluation.content_safety.client import ContentSafetyClient
from monitor.evaluation.content_safety.telemetry import ServiceTelemetry
from monitor.evaluation.judge_identity import JudgeIdentity
from monitor.feedback.review import ReviewDesign
from monitor.feedback.review_queue import ReviewQueue
from monitor.evaluation.registry import build_evaluators, prompt_versions
from monitor.evaluation.stage import EvaluationStage
from samplers.weight_gate import CellFactors, WeightGate
from monitor.feedback.metrics import AgreementBoard, AgreementCollector
from monitor.feedback.otlp import HumanVerdictTap
from monitor.feedback.stage import FeedbackStage, build_feedback
from monitor.fleet.decisions import FleetDecider
from monitor.fleet.judge_budget import FleetJudgeBudget
from monitor.fleet.link import FleetLink
from monitor.fleet.status import FleetCollector, fleet_document
from monitor.fleet.traffic import FleetTraffic
from monitor.interfaces import ResultConsumer
from monitor.judge.client import JudgeClient
from monitor.judge.clock import LoopClock
from monitor.judge.telemetry import TeeJudgeTelemetry
from monitor.model import Conversation, Turn
from monitor.receivers.forward import Forwarder
from monitor.receivers.ingest import Ingest
from monitor.receivers.otlp_grpc import OtlpGrpcReceiver
from monitor.receivers.otlp_http import OtlpHttpReceiver
from monitor.redaction import Redactor
from monitor.redaction.sinks import TextFreeResults
from monitor.regression import RegressionEngine
from monitor.regression_feed import RegressionFeed, engine_config

from monitor.startup import StartupSummary, startup_summary
from samplers.build import build_sampler
from samplers.config import walk_policies
from samplers.describe import describe_sampling
from samplers.stage import SamplingStage
from samplers.weighting import CellLedger

__all__ = ["Sidecar", "NullConversationSink", "FanOut", "freeze_startup_heap"]

log = logging.getLogger(__name__)


def freeze_startup_heap() -> None:
    """Move everything alive after start-up out of the garbage collector's sight.

    A full collection walks every tracked object (~120k after start: modules, protobuf
    classes, the metric registry) and holds the GIL for ~50 ms, in whichever thread triggers it;
    the scrape renderer allocates enough to trigger one every few scrapes, stalling the event
    loop (measured in benchmarks/scrape.py: loop-lag p99 50 ms without, 6–11 ms with). Call
    once per process after the sidecar has started; not from library code or tests.
    """
    gc.collect()
    gc.freeze()


class NullConversationSink:
    """Downstream of the tracker when no evaluation is wired: turns are only counted."""

    def turn_added(self, turn: Turn) -> None:
        pass

    def conversation_closed(self, conversation: Conversation) -> None:
        pass


class FanOut:
    """Hands every conversation event to several sinks (evaluation, plus a test's recorder)."""

    def __init__(self, sinks: Sequence[ConversationSink]) -> None:
        self._sinks = tuple(sinks)

    def turn_added(self, turn: Turn) -> None:
        for sink in self._sinks:
            sink.turn_added(turn)

    def conversation_closed(self, conversation: Conversation) -> None:
        for sink in self._sinks:
            sink.conversation_closed(conversation)


# How long past its own deadline a component's shutdown may run before it is cut off (a bug guard:
# components stop by themselves at their deadline).
_SHUTDOWN_GUARD_SECONDS = 2.0


class Sidecar:
    """The running pipeline. Construct, ``await start()``, ``await shutdown()``; restartable."""

    def __init__(self, config: MonitorConfig, sink: ConversationSink | None = None,
                 registry: CollectorRegistry | None = None,
                 result_consumers: Sequence[ResultConsumer] = ()) -> None:
        disable_created_metrics()  # *_created series double the series count for no dashboard use
        self.config = config
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.telemetry = PrometheusTelemetry(self.registry)
        self.judge_telemetry = PrometheusJudgeTelemetry(self.registry, self.telemetry)
        self.sampling_telemetry = PrometheusSamplingTelemetry(self.registry, self.telemetry)
        exp = config.exporters
        self.labels = LabelPolicy(exp.labels, exp.max_label_values, self.telemetry)
        self.results = PrometheusResults(self.registry, self.labels)
        # Label values are computed once per result (exporters.labels.LabelFanOut) for the
        # Prometheus series, the rolling windows and the OTLP metrics.
        self.rolling = RollingStats(exp.window_seconds())
        self.registry.register(RollingCollector(self.rolling))
        self.jailbreak = JailbreakComparison(exp.window_seconds())
        self.registry.register(JailbreakCollector(self.jailbreak))
        # Release comparisons: published by the feed (built with the store), read at scrape time.
        self.releases = ReleaseBoard()
        if config.regressions.enabled:
            self.registry.register(ReleaseCollector(self.releases))
        # Judge-vs-human agreement: published by the verdict join (built with the store), read at scrape time.
        self.agreement = AgreementBoard()
        self.registry.register(AgreementCollector(self.agreement))
        self.feedback: FeedbackStage | None = None
        self._extra_consumers = tuple(result_consumers)
        self._sink = sink or NullConversationSink()
        self._components: list[Any] = []
        self._executor: ThreadPoolExecutor | None = None
        self._started = False
        self.conversations: ConversationTracker | None = None
        self.assembler: Assembler | None = None
        self.http: OtlpHttpReceiver | None = None
        self.grpc: OtlpGrpcReceiver | None = None
        self.admin: AdminServer | None = None
        self.watch: PipelineWatch | None = None
        self.startup: StartupSummary | None = None
        self.forwarder: Forwarder | None = None
        self.judge: JudgeClient | None = None
        self.content_safety: ContentSafetyClient | None = None
        self.evaluation: EvaluationStage | None = None
        self.store: Store | None = None
        self.fleet_windows: StoreWindows | None = None
        self.regression_feed: RegressionFeed | None = None
        self.jsonl: JsonlSink | None = None
        self.otlp_metrics: OtlpMetrics | None = None
        self.evaluation_events: EvaluationEvents | None = None
        self.fleet: FleetLink | None = None
        self.fleet_traffic: FleetTraffic | None = None
        self.fleet_decider: FleetDecider | None = None
        self.weight_gate: WeightGate | None = None
        self._collector: ScrapeTimeCollector | None = None
        self._fleet_collector: FleetCollector | None = None

    def _build(self) -> list[Any]:
        cfg = self.config
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rag-monitor-decode")
        exp = cfg.exporters
        self.otlp_metrics = (OtlpMetrics(exp.otlp_metrics, self.labels,
                                         cfg.service_name, defect_rates=rolling_readings(self.rolling),
                                         registry_bridge=self.registry)
                             if exp.otlp_metrics.enabled else None)
        self.evaluation_events = (EvaluationEvents(exp.evaluation_events, cfg.service_name, self.telemetry)
                                  if exp.evaluation_events.enabled else None)
        judge_telemetry = (TeeJudgeTelemetry(self.judge_telemetry, self.otlp_metrics)
                           if self.otlp_metrics else self.judge_telemetry)
        self._build_fleet()
        fleet_budget = (FleetJudgeBudget(
            self.fleet, requests_per_minute=cfg.judge.requests_per_minute, tokens_per_minute=cfg.judge.tokens_per_minute,
            on_exhausted=cfg.judge.on_budget_exhausted, max_wait_seconds=cfg.judge.max_budget_wait_seconds,
            clock=LoopClock(), telemetry=judge_telemetry)
            if self.fleet is not None else None)  # without limits it still shares the 429 storm state
        self.judge = (JudgeClient(cfg.judge, telemetry=judge_telemetry, budget=fleet_budget)
                      if cfg.judge.enabled else None)
        self.content_safety = (ContentSafetyClient(cfg.evaluation.content_safety,
                                                   telemetry=ServiceTelemetry(judge_telemetry))
                               if cfg.evaluation.content_safety is not None and service_metric_ids(cfg.evaluation)
                               else None)
        # In a fleet the adaptive policies run on the wall clock, aligned with the other replicas.
        sampler = (build_sampler(cfg.sampling, time.time, self.sampling_telemetry, shared=self.fleet_traffic)
                   if self.fleet_traffic is not None else
                   build_sampler(cfg.sampling, time.monotonic, self.sampling_telemetry))
        ledger = CellLedger(cfg.sampling.weight_interval_seconds)
        sampling = SamplingStage(sampler, max_conversations=cfg.sampling.max_conversations,
                                 telemetry=self.sampling_telemetry, ledger=ledger)
        if self.fleet is not None and self.fleet_traffic is not None:
            # A decision outlives its conversation's idle timeout: later turns must find it.
            self.fleet_decider = FleetDecider(
                sampling, self.fleet, self.fleet_traffic, self.telemetry,
                ttl_seconds=max(3600.0, 2 * cfg.assembly.conversation_idle_seconds),
                max_pending=cfg.fleet.max_pending_decisions, max_pending_bytes=cfg.fleet.max_pending_bytes,
                max_batch_wait_seconds=cfg.fleet.max_batch_wait_seconds)
        self.store = (build_store(exp.store, self.telemetry, replica_id=cfg.fleet.replica())
                      if exp.store.enabled else None)
        if self.store is not None and exp.store.dialect == "postgresql":
            # The fleet's one store: every replica's API and page read the fleet's windows from it.
            self.fleet_windows = StoreWindows(self.store, RollingStats(exp.window_seconds()),
                                              service=lambda s: self.labels.admit("service", s, count=False))
        if cfg.regressions.enabled:
            # Fleet-wide: read from the store (every replica's rows with PostgreSQL), else the results.
            self.regression_feed = RegressionFeed(
                RegressionEngine(time.time, engine_config(cfg.regressions)), self.releases, cfg.regressions,
                source=self.store, service=lambda s: self.labels.admit("service", s, count=False),
                telemetry=self.telemetry)
        self.feedback = build_feedback(cfg.evaluation, cfg.judge, exp.store, cfg.review, self.telemetry,
                                       self.agreement)
        self.jsonl = JsonlSink(exp.jsonl, self.telemetry) if exp.jsonl.path else None
        sinks: tuple[ResultConsumer, ...] = tuple(c for c in (self.store, self.jsonl, self.evaluation_events)
                                                  if c is not None)
        keep_text = cfg.redaction.keep_text
        if not keep_text:  # scores, ids and labels only in the store, JSONL, events and API
            sinks = (TextFreeResults(sinks),)
        backlog = self.store if keep_text else None  # the durable backlog holds turn text
        # Redaction of each sampled turn, before the judge, the backlog and every sink see it.
        redact = Redactor(cfg.redaction, self.telemetry).redact_turn if cfg.redaction.enabled else None
        consumers: tuple[ResultConsumer, ...] = (LabelFanOut(self.labels, [c for c in (self.results, self.rolling, self.otlp_metrics)
                                               if c is not None]),
                     self.jailbreak, *sinks, self.feedback.join,
                     *((self.regression_feed,) if self.regression_feed is not None and self.store is None else ()),
                     *self._extra_consumers)
        # Results of a capped policy wait for their post-stratified weight (samplers.weighting).
        self.weight_gate = WeightGate(consumers, CellFactors(ledger, self.fleet_traffic), self.telemetry)
        evaluators = build_evaluators(cfg.evaluation, self.judge, content_safety=self.content_safety)
        judge = self.judge
        identity = (JudgeIdentity(lambda: judge.served_model, prompt_versions(evaluators))
                    if judge is not None else None)
        self.evaluation = EvaluationStage(
            sampling, evaluators,
            (self.weight_gate,), self.telemetry, cfg.evaluation.queue_size, cfg.evaluation.workers, backlog=backlog,
            max_queue_bytes=cfg.evaluation.max_queue_bytes, local_workers=cfg.evaluation.local_workers,
            local_queue_size=cfg.evaluation.local_queue_size, prepare=redact, fleet=self.fleet_decider,
            claim_interval=max(1.0, exp.store.lease_seconds / 3) if self.fleet_windows is not None else None,
            identity=identity)
        self.conversations = ConversationTracker(cfg.assembly, FanOut((self.evaluation, self._sink)),
                                                 self.telemetry)
        self.assembler = Assembler(cfg.assembly, self.conversations, self.telemetry)
        self.forwarder = Forwarder(cfg.forward, self.telemetry) if cfg.forward.endpoint else None
        # People's verdicts sent as evaluation events are taken out before assembly (monitor.feedback.otlp).
        tap = HumanVerdictTap(self.assembler, self.feedback.join, self.feedback.rules, self.telemetry)
        ingest = Ingest(tap, self.telemetry, self._executor, max_chars=cfg.assembly.max_attribute_chars,
                        selection=span_attributes_read(cfg.assembly.mapping))
        self.http = (OtlpHttpReceiver(cfg.receivers.http, ingest, self.telemetry, self.forwarder)
                     if cfg.receivers.http.enabled else None)
        self.grpc = (OtlpGrpcReceiver(cfg.receivers.grpc, ingest, self.telemetry, self.forwarder)
                     if cfg.receivers.grpc.enabled else None)
        setting = Setting(receiver=f"http://{cfg.receivers.http.host}:{cfg.receivers.http.port}",
                          judge_enabled=cfg.judge.enabled, sampling=describe_sampling(cfg.sampling),
                          no_turn_hints=NO_TURN_REASONS)
        health = PipelineHealth(self.registry, recent_seconds=min(sec for _, sec in self.rolling.windows))
        gate, decider = self.weight_gate, self.fleet_decider
        held = (lambda: gate.held)
        pending = (lambda: decider.pending if decider is not None else 0)
        link = self.fleet
        pipeline = PipelineStatus(health, setting, lambda: self.startup.lines if self.startup else {},
                                  fleet=(lambda: fleet_document(link, pending, held)) if link is not None else None)
        if link is not None:
            self._fleet_collector = FleetCollector(link, pending, held)
            self.registry.register(self._fleet_collector)
        # The review queue lists judged turns of the judge metrics (the store's, fleet-wide when
        # shared); the feedback join filters out the reviewed ones (``reviewed``).
        self.review_queue = (ReviewQueue(ReviewDesign(cfg.review), self.store, tuple(prompt_versions(evaluators)),
                                         reviewed=self.feedback.join,
                                         writable=cfg.admin.review_token is not None
                                         or cfg.admin.review_token_file is not None)
                             if self.store is not None else None)
        read_token = cfg.admin.bearer_token.get_secret_value() if cfg.admin.bearer_token is not None else None
        self.admin = AdminServer(cfg.admin, self.registry, self.ready,
                                 summary=self.fleet_windows.rolling if self.fleet_windows else self.rolling,
                                 store=self.store, telemetry=self.telemetry,
                                 catalogue=metric_catalogue(cfg.evaluation, cfg.judge.enabled), pipeline=pipeline,
                                 jailbreak=self.jailbreak,
                                 releases=self.releases if cfg.regressions.enabled else None,
                                 review=ReviewApi(self.review_queue, read_token=read_token, telemetry=self.telemetry),
                                 feedback=FeedbackApi(self.feedback.intake, read_token=read_token,
                                                      review_token=cfg.admin.resolve_review_token(),
                                                      telemetry=self.telemetry))
        self.watch = PipelineWatch(self.registry, setting)
        forwarder = self.forwarder
        evaluation = self.evaluation
        queues = {"evaluation": ((lambda: evaluation.queue_depth), cfg.evaluation.queue_size)}
        local_pool = evaluation.local_pool
        if local_pool:
            queues["local_workers"] = ((lambda: local_pool.queue_depth), cfg.evaluation.local_queue_size)
        if forwarder:
            queues["forward"] = ((lambda: forwarder.queue_depth), cfg.forward.max_queue_requests)
        store, jsonl = self.store, self.jsonl
        if store:
            queues["store"] = ((lambda: store.queue_depth), exp.store.queue_size)
        if jsonl:
            queues["jsonl"] = ((lambda: jsonl.queue_depth), exp.jsonl.queue_size)
        events = self.evaluation_events
        if events:
            queues["evaluation_events"] = ((lambda: events.queue_depth), events.queue_capacity)
        assembler, conversations = self.assembler, self.conversations
        self._collector = ScrapeTimeCollector(queues, lambda: assembler.pending_traces,
                                              lambda: assembler.pending_spans,
                                              lambda: conversations.open_conversations,
                                              lambda: assembler.pending_bytes)
        self.registry.register(self._collector)
        # Downstream first: the store before the admin server that queries it.
        return [c for c in (self.store, self.fleet_windows, self.feedback.join, self.regression_feed, self.jsonl,
                            self.otlp_metrics,
                            self.evaluation_events,
                            self.admin, self.watch,
                            self.fleet, self.fleet_traffic, self.judge, self.content_safety, self.weight_gate,
                            self.fleet_decider, self.evaluation, self.conversations, self.assembler,
                            self.forwarder, self.grpc, self.http) if c is not None]

    def _build_fleet(self) -> None:
        """Fleet mode (fleet.redis_url): the link to Redis and the fleet's traffic figures."""
        cfg = self.config
        if not cfg.fleet.enabled:
            return
        password = cfg.fleet.resolve_password()
        self.fleet = FleetLink(cfg.fleet, self.telemetry, password=password)
        horizon = max([getattr(p, "adjust_seconds", 0.0) for _, p in walk_policies(cfg.sampling.policies)] + [60.0])
        self.fleet_traffic = FleetTraffic(self.fleet, self.telemetry,
                                          interval_seconds=cfg.sampling.weight_interval_seconds,
                                          horizon_seconds=horizon)

    async def _refill_windows(self, store: Store) -> None:
        # After a restart the rolling windows would read "no data" for up to an hour; the
        # store has the last hour of scores.
        longest = max(sec for _, sec in self.rolling.windows)
        rows = await store.scores_since(time.time() - longest)
        admit = self.labels.admit
        used = self.rolling.replay((ts, metric, admit("service", service, count=False), outcome, weight, value)
                                   for ts, metric, service, outcome, weight, value in rows)
        if used:
            log.info("rolling windows refilled with %d stored scores", used)

    def ready(self) -> bool:
        return self._started

    async def start(self) -> None:
        if self._components:
            return
        components = self._build()
        started: list[Any] = []
        try:
            for c in components:
                await c.start()
                started.append(c)
                # This process's windows refill from its own file; a fleet's store holds every replica's
                # scores, which the fleet windows read (the Prometheus gauges stay per process).
                if self.store is not None and c is self.store and self.fleet_windows is None:
                    await self._refill_windows(self.store)
        except BaseException:
            self._components = started
            await self.shutdown()
            raise
        self._components = components
        self._started = True
        self.startup = startup_summary(self.config, http_port=self.http.port if self.http else None,
                                       grpc_port=self.grpc.port if self.grpc else None,
                                       admin_port=self.admin.port if self.admin else None)
        self.startup.log(log)
        self._warn_about_exposure()

    def _warn_about_exposure(self) -> None:
        cfg = self.config
        for name, r in (("http", cfg.receivers.http), ("grpc", cfg.receivers.grpc)):
            if r.enabled and not is_loopback(r.host) and r.bearer_token is None:
                log.warning("receivers.%s listens on %s without a bearer token (receivers.allow_unauthenticated): "
                            "anyone who can reach it can push spans", name, r.host)
        if not is_loopback(cfg.admin.host) and cfg.admin.bearer_token is None:
            log.warning("admin server listens on %s without a bearer token: /metrics is readable by anyone who can "
                        "reach it; /api and the status page's data stay refused to non-loopback clients",
                        cfg.admin.host)

    async def shutdown(self, timeout: float | None = None) -> None:
        """Stop upstream-first within ``timeout`` (default: ``shutdown_deadline_seconds``).

        One deadline, shared by design: the stages up to evaluation stop intake and drain until a
        reserve before it (what evaluation cannot finish stays in the backlog); the sinks after
        it (store, JSONL, OTLP, events, admin) flush in the reserve. Each component honours the
        deadline it is given; the guard here only catches a component that does not.
        """
        self._started = False
        components, self._components = self._components, []
        if not components and self._executor is None:
            return
        loop = asyncio.get_running_loop()
        total = self.config.shutdown_deadline_seconds if timeout is None else timeout
        deadline = loop.time() + total
        drain_deadline = deadline - min(2.0, 0.25 * total)
        sinks = {id(c) for c in (self.store, self.fleet_windows, self.jsonl, self.otlp_metrics, self.evaluation_events,
                                 self.admin)
                 if c is not None}
        for c in reversed(components):
            own = deadline if id(c) in sinks else drain_deadline
            try:
                await asyncio.wait_for(c.shutdown(own), max(0.0, own - loop.time()) + _SHUTDOWN_GUARD_SECONDS)
            except Exception:  # keep stopping the rest; report once
                log.exception("shutting down %s failed", type(c).__name__)
        if self._collector is not None:
            self.registry.unregister(self._collector)
            self._collector = None
        if self._fleet_collector is not None:
            self.registry.unregister(self._fleet_collector)
            self._fleet_collector = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
