"""OTLP metrics push: the evaluation and judge instruments of ``exporters.spec``, sent to a collector.

The same instruments as the Prometheus endpoint, on a private ``MeterProvider`` (the global one
is never set) whose Resource carries the sidecar's own ``service.name``. Names are the Prometheus
names without ``_total`` (an OTel→Prometheus conversion adds it back to monotonic sums); units
are ``s`` for seconds and empty otherwise (``1`` would make the conversion append ``_ratio``).
A View per instrument keeps exactly its allow-listed attributes (``metric``, the label policy's
``service`` and allow-list, then ``outcome``…), so an attribute added by mistake later is dropped
at the SDK instead of becoming a time series; score and judge-latency histograms get the spec's
explicit buckets through the same Views. Score points carry an exemplar with the evaluated chat
span's trace and span ids.

Rolling defect rates come from an optional ``defect_rates`` reader, and the sidecar's
self-telemetry (spans received/dropped, queue depths, sampling decisions…) from an optional
Prometheus registry: both are read by observable instruments when the reader collects, on the
SDK's export thread, once per collection, so the event loop does nothing for them. Prometheus
counters become ObservableCounters (monotonic cumulative sums), gauges ObservableGauges;
histograms and summaries of that registry are not bridged; families registered after ``start``
are not seen. NaN readings ("no data") are left out of the push rather than sent as NaN.

Destination (``exporters.otlp_metrics`` and ``exporters.evaluation_events`` alike):

* ``endpoint`` is a base URL, like the collector's ``otlphttp`` exporter: for ``http/protobuf``
  the signal path (``/v1/metrics``, ``/v1/logs``) is appended unless the URL already ends with
  it; for ``grpc`` it is ``http://host:4317`` (plaintext), ``https://host:4317`` (TLS) or
  ``host:4317`` (TLS unless ``insecure: true``).
* Unset, it falls back to ``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`` (a full URL, used as is), then
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL, signal path appended for HTTP), then localhost.
* ``protocol`` unset: ``OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL``, ``OTEL_EXPORTER_OTLP_PROTOCOL``,
  else ``http/protobuf``; ``http/json`` is refused at construction.
* ``headers`` are added to the ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]HEADERS`` ones over HTTP (config
  wins on a clash); over gRPC the exporter uses them instead of the environment's when set.
* Temporality is cumulative unless ``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`` says
  otherwise; TLS files come from the standard ``OTEL_EXPORTER_OTLP_*CERTIFICATE`` variables.

A collector that is down never raises into the pipeline: the SDK retries within
``timeout_seconds`` and logs the failure itself (we add nothing).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Iterator, Mapping, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.metrics import CallbackOptions, Counter, Histogram, Observation, _Gauge
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from prometheus_client import CollectorRegistry

import monitor
from exporters.config import OtlpMetricsConfig
from exporters.labels import JUDGE_LABELS, LabelledResult, LabelPolicy
from exporters.spec import EVALUATION, JUDGE, ROLLING, Instrument
from monitor.model import EvaluationResult, ScoreStatus, Turn

if TYPE_CHECKING:
    from exporters.rolling import RollingStats

__all__ = ["OtlpMetrics", "Reading", "rolling_readings", "resolve_protocol", "http_endpoint", "grpc_metadata",
           "turn_context", "run_blocking", "sidecar_resource"]

log = logging.getLogger(__name__)

Reading = tuple[str, Mapping[str, str], float]  # (instrument name, attributes, value)
T = TypeVar("T")

_SCOPE = "rag-monitor"
_PROTOCOLS = ("http/protobuf", "grpc")
_OTEL_NAME = re.compile(r"^[A-Za-z][-_./A-Za-z0-9]{0,254}$")


# -- OTLP destination, shared with exporters.evaluation_events --------------------------------

def resolve_protocol(configured: str | None, signal: str) -> str:
    """The protocol from config, else the standard environment variables; ValueError if unsupported."""
    raw = (configured or os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
           or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
    protocol = raw.strip().lower()
    if protocol not in _PROTOCOLS:
        raise ValueError(f"OTLP protocol {raw!r} for {signal} is not supported: use http/protobuf or grpc")
    return protocol


def http_endpoint(base: str | None, signal: str) -> str | None:
    """Base URL → signal URL (``/v1/<signal>`` appended once); None leaves it to the environment."""
    if not base:
        return None
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"OTLP endpoint {base!r} for http/protobuf must start with http:// or https://")
    path = f"/v1/{signal}"
    trimmed = base.rstrip("/")
    return trimmed if trimmed.endswith(path) else trimmed + path


def grpc_metadata(headers: Mapping[str, str]) -> tuple[tuple[str, str], ...] | None:
    # gRPC refuses upper-case metadata keys, and HTTP header names are case-insensitive anyway.
    # None lets the exporter read OTEL_EXPORTER_OTLP_*HEADERS instead.
    return tuple((key.lower(), value) for key, value in headers.items()) or None


def sidecar_resource(service_name: str) -> Resource:
    """The sidecar's own Resource; OTEL_RESOURCE_ATTRIBUTES (e.g. k8s attributes) are merged in."""
    return Resource.create({"service.name": service_name, "service.version": monitor.__version__})


def _hex_id(text: str | None, digits: int) -> int:
    if not text or len(text) != digits:
        return 0
    try:
        return int(text, 16)
    except ValueError:
        return 0


def turn_context(turn: Turn, *, need_span: bool = False) -> Context | None:
    """A Context whose current span is the turn's chat span (sampled), so the SDK stamps its ids
    on a log record or an exemplar. None when the trace id is unusable (or the span id is, with
    ``need_span``)."""
    trace_id = _hex_id(turn.trace_id, 32)
    span_id = _hex_id(turn.chat_span_id, 16)
    if not trace_id or (need_span and not span_id):
        return None
    span = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return trace.set_span_in_context(NonRecordingSpan(span))


async def run_blocking(call: Callable[[], object], deadline: float, what: str) -> bool:
    """Run a blocking SDK call (flush, shutdown) in a daemon thread; wait until ``deadline``
    (``loop.time()``). Returns False if it was still running then. Its exception is logged.

    A daemon thread rather than the loop's executor: an export stuck on a dead collector must
    not hold up interpreter exit, which joins executor threads.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            log.warning("%s failed: %r", what, error)
        done.set_result(None)

    def target() -> None:
        error: BaseException | None = None
        try:
            call()
        except Exception as exc:  # reported on the loop; never raised into the pipeline
            error = exc
        try:
            loop.call_soon_threadsafe(settle, error)
        except RuntimeError:  # the loop closed while we were blocked
            pass

    threading.Thread(target=target, name=f"rag-monitor {what}", daemon=True).start()
    try:
        await asyncio.wait_for(asyncio.shield(done), max(0.0, deadline - loop.time()))
    except TimeoutError:
        log.warning("%s did not finish before the shutdown deadline; abandoned", what)
        return False
    return True


# -- observable readings ----------------------------------------------------------------------

class _PerCollection(Generic[T]):
    """One read shared by the callbacks of one collection (they run back to back on the
    reader's thread), instead of one read per instrument."""

    def __init__(self, read: Callable[[], T], empty: T, max_age: float, what: str) -> None:
        self._read, self._empty, self._max_age, self._what = read, empty, max_age, what
        self._value: T = empty
        self._at = -math.inf
        self._lock = threading.Lock()
        self._failed = False

    def get(self) -> T:
        with self._lock:
            now = time.monotonic()
            if now - self._at > self._max_age:
                try:
                    self._value = self._read()
                except Exception:
                    if not self._failed:  # once: a broken reader fails every collection
                        log.exception("reading %s for the OTLP push failed", self._what)
                    self._failed = True
                    self._value = self._empty
                self._at = now
            return self._value


def rolling_readings(rolling: RollingStats) -> Callable[[], list[Reading]]:
    """Adapts ``exporters.rolling.RollingStats`` to the ``defect_rates`` reader."""

    def read() -> list[Reading]:
        out: list[Reading] = []
        for metric, service, s in rolling.by_series():
            attrs = {"metric": metric, "service": service, "window": s.window}
            out += [("rag_monitor_defect_rate", attrs, s.defect_rate),
                    ("rag_monitor_defect_rate_lower", attrs, s.lower),
                    ("rag_monitor_defect_rate_upper", attrs, s.upper),
                    ("rag_monitor_window_evaluations", attrs, float(s.evaluations))]
        return out

    return read


@dataclass(frozen=True, slots=True)
class _Family:
    name: str
    kind: str  # counter | gauge
    help: str


def _bridgeable(registry: CollectorRegistry, skip: frozenset[str]) -> list[_Family]:
    return [_Family(fam.name, fam.type, fam.documentation) for fam in registry.collect()
            if fam.type in ("counter", "gauge") and fam.name not in skip and _OTEL_NAME.match(fam.name)]


_Samples = dict[str, list[tuple[dict[str, str], float]]]  # family name → (labels, value)


def _read_registry(registry: CollectorRegistry, families: Mapping[str, str]) -> _Samples:
    out: _Samples = {}
    for fam in registry.collect():
        kind = families.get(fam.name)
        if kind is None:
            continue
        sample_name = fam.name + "_total" if kind == "counter" else fam.name  # not _created
        out[fam.name] = [(dict(s.labels), float(s.value)) for s in fam.samples if s.name == sample_name]
    return out


# -- the component ----------------------------------------------------------------------------

def _otel_name(inst: Instrument) -> str:
    return inst.name.removesuffix("_total")


def _unit(inst: Instrument) -> str:
    return "s" if inst.unit == "seconds" or _otel_name(inst).endswith("_seconds") else ""


@dataclass(frozen=True, slots=True)
class _Instruments:
    evaluations: Counter
    weight: Counter
    score: Histogram
    judge_calls: Counter
    judge_rejected: Counter
    judge_attempts: Counter
    judge_tokens: Counter
    judge_duration: Histogram
    judge_circuit: _Gauge
    judge_shed: Counter
    judge_waited: Counter


class OtlpMetrics:
    """Component + ``ResultConsumer`` + ``monitor.judge.telemetry.JudgeTelemetry`` pushing over OTLP.

    ``consume_result`` and the judge methods only update in-memory instruments (cheap, on the
    event loop); before ``start`` and after ``shutdown`` they do nothing. ``defect_rates`` is read
    on the export thread and must be thread-safe (``rolling_readings(RollingStats)`` is).
    ``enabled`` is the composition root's to check: constructed, this component pushes.
    """

    def __init__(self, config: OtlpMetricsConfig, labels: LabelPolicy, service_name: str,
                 defect_rates: Callable[[], Iterable[Reading]] | None = None,
                 registry_bridge: CollectorRegistry | None = None) -> None:
        self._config = config
        self._policy = labels
        self._service_name = service_name
        self._defect_rates = defect_rates
        self._registry = registry_bridge
        self._protocol = resolve_protocol(config.protocol, "metrics")
        self._endpoint = http_endpoint(config.endpoint, "metrics") if self._protocol == "http/protobuf" else None
        self._provider: MeterProvider | None = None
        self._i: _Instruments | None = None

    @property
    def protocol(self) -> str:
        return self._protocol

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._provider is not None:
            return
        # Off the loop: exporter construction may read TLS files, the bridge runs collectors.
        self._provider, self._i = await asyncio.to_thread(self._build)

    async def shutdown(self, deadline: float) -> None:
        """Stops the reader after one last collection and export, within ``deadline``."""
        provider, self._provider, self._i = self._provider, None, None
        if provider is None:
            return
        loop = asyncio.get_running_loop()
        millis = max(0.0, deadline - loop.time()) * 1000
        # MeterProvider.shutdown collects and exports once more: that is the final flush.
        await run_blocking(lambda: provider.shutdown(timeout_millis=millis), deadline, "OTLP metrics shutdown")

    def _exporter(self) -> MetricExporter:
        c = self._config
        if self._protocol == "grpc":
            return GrpcMetricExporter(endpoint=c.endpoint, insecure=c.insecure, headers=grpc_metadata(c.headers),
                                      timeout=c.timeout_seconds)
        return HttpMetricExporter(endpoint=self._endpoint, headers=dict(c.headers) or None, timeout=c.timeout_seconds)

    def _attribute_keys(self, inst: Instrument) -> tuple[str, ...]:
        if inst in EVALUATION:  # metric, service → metric, <policy names: service + allow-list>, rest
            return ("metric", *self._policy.names, *inst.labels[2:])
        return inst.labels

    def _views(self) -> list[View]:
        views = []
        for inst in (*EVALUATION, *JUDGE, *ROLLING):
            aggregation = ExplicitBucketHistogramAggregation(inst.buckets) if inst.kind == "histogram" else None
            views.append(View(instrument_name=_otel_name(inst), meter_name=_SCOPE,
                              attribute_keys=set(self._attribute_keys(inst)), aggregation=aggregation))
        return views

    def _build(self) -> tuple[MeterProvider, _Instruments]:
        interval = self._config.interval_seconds
        reader = PeriodicExportingMetricReader(self._exporter(), export_interval_millis=interval * 1000,
                                               export_timeout_millis=self._config.timeout_seconds * 1000)
        provider = MeterProvider(metric_readers=[reader], resource=sidecar_resource(self._service_name),
                                 views=self._views(), shutdown_on_exit=False)
        meter = provider.get_meter(_SCOPE, monitor.__version__)
        made: dict[str, Any] = {}
        for inst in (*EVALUATION, *JUDGE):
            makers: dict[str, Callable[..., Any]] = {
                "counter": meter.create_counter, "histogram": meter.create_histogram, "gauge": meter.create_gauge}
            make = makers[inst.kind]
            made[inst.name] = make(_otel_name(inst), unit=_unit(inst), description=inst.help)
        max_age = min(1.0, interval / 4)
        native = {_otel_name(i) for i in (*EVALUATION, *JUDGE)}
        defect_rates = self._defect_rates
        if defect_rates is not None:
            native |= {i.name for i in ROLLING}
            self._observe_rolling(meter, _PerCollection(lambda: list(defect_rates()), [], max_age, "defect rates"))
        if self._registry is not None:
            self._bridge(meter, self._registry, frozenset(native), max_age)
        i = _Instruments(
            evaluations=made["rag_monitor_evaluations_total"], weight=made["rag_monitor_evaluation_weight_total"],
            score=made["rag_monitor_score"], judge_calls=made["rag_monitor_judge_requests_total"],
            judge_rejected=made["rag_monitor_judge_replies_rejected_total"],
            judge_attempts=made["rag_monitor_judge_attempts_failed_total"],
            judge_tokens=made["rag_monitor_judge_tokens_total"],
            judge_duration=made["rag_monitor_judge_request_duration_seconds"],
            judge_circuit=made["rag_monitor_judge_circuit_open"],
            judge_shed=made["rag_monitor_judge_budget_shed_total"],
            judge_waited=made["rag_monitor_judge_budget_wait_seconds_total"])
        return provider, i

    @staticmethod
    def _observe_rolling(meter: Any, readings: _PerCollection[list[Reading]]) -> None:
        for inst in ROLLING:
            def observe(options: CallbackOptions, name: str = inst.name) -> Iterator[Observation]:
                for reading_name, attrs, value in readings.get():
                    if reading_name == name and math.isfinite(value):
                        yield Observation(value, dict(attrs))
            meter.create_observable_gauge(inst.name, callbacks=[observe], unit="", description=inst.help)

    @staticmethod
    def _bridge(meter: Any, registry: CollectorRegistry, skip: frozenset[str], max_age: float) -> None:
        try:
            families = _bridgeable(registry, skip)
        except Exception:
            log.exception("the Prometheus registry could not be read: self-telemetry is not pushed over OTLP")
            return
        kinds = {f.name: f.kind for f in families}
        empty: _Samples = {}
        snapshot = _PerCollection(lambda: _read_registry(registry, kinds), empty, max_age, "self-telemetry")
        for fam in families:
            def observe(options: CallbackOptions, name: str = fam.name) -> Iterator[Observation]:
                for attrs, value in snapshot.get().get(name, ()):
                    if math.isfinite(value):
                        yield Observation(value, attrs)
            create = meter.create_observable_counter if fam.kind == "counter" else meter.create_observable_gauge
            create(fam.name, callbacks=[observe], unit="", description=fam.help)

    # -- ResultConsumer -----------------------------------------------------------------------

    def consume_result(self, result: EvaluationResult) -> None:
        if self._i is not None:
            self.consume_labelled(self._policy.label(result))

    def consume_labelled(self, item: LabelledResult) -> None:
        i = self._i
        if i is None:
            return
        result, labels = item.result, item.labels
        exemplar = turn_context(result.turn, need_span=True)
        for score in result.scores:
            outcome = score.outcome
            # The judge's identity, as on the Prometheus series; left out for local metrics.
            judge = {k: v for k, v in zip(JUDGE_LABELS, self._policy.judge_values(score)) if v}
            counted = {"metric": score.metric, **labels, **judge, "outcome": outcome}
            i.evaluations.add(1, counted)
            if outcome in ("pass", "defect", "unscored_refused"):  # as the Prometheus exporter
                i.weight.add(result.weight, counted)
            if score.status == ScoreStatus.OK and score.value is not None:
                i.score.record(score.value, {"metric": score.metric, **labels, **judge}, context=exemplar)

    # -- JudgeTelemetry -----------------------------------------------------------------------

    def call_finished(self, metric: str, outcome: str, duration_seconds: float) -> None:
        if (i := self._i) is not None:
            i.judge_calls.add(1, {"outcome": outcome})
            i.judge_duration.record(duration_seconds)

    def reply_rejected(self, metric: str, outcome: str) -> None:
        if (i := self._i) is not None:
            i.judge_rejected.add(1, {"outcome": outcome})

    def attempt_failed(self, metric: str, outcome: str) -> None:
        if (i := self._i) is not None:
            i.judge_attempts.add(1, {"outcome": outcome})

    def add(self, counter: Instrument, amount: float = 1, /, **labels: str) -> None:
        """Declared self-telemetry counters reach OTLP through the registry bridge, not here."""

    def tokens(self, metric: str, kind: str, count: int, call: str = "single") -> None:
        if (i := self._i) is not None:
            i.judge_tokens.add(count, {"type": kind, "metric": metric, "call": call})

    def circuit_state(self, state: str) -> None:
        if (i := self._i) is not None:
            i.judge_circuit.set({"open": 1.0, "half_open": 0.5}.get(state, 0.0))

    def budget_waited(self, limiter: str, seconds: float) -> None:
        if (i := self._i) is not None:
            i.judge_waited.add(seconds, {"limiter": limiter})

    def budget_shed(self, limiter: str) -> None:
        if (i := self._i) is not None:
            i.judge_shed.add(1, {"limiter": limiter})
