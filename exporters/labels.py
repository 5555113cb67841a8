"""Label values for evaluation metrics: an allow-list with a cardinality cap per label.

Every time series costs the Prometheus server memory for as long as it lives, and a label fed
from request data (a route with ids in it, a model name typed by a user) can create millions.
So each allow-listed label admits at most ``max_values`` distinct values, first come first
served; later values are reported as ``other`` and counted, so the dashboard can show that a cap
was hit. The service label gets the same treatment.

The ``version`` label (the app's build) is the exception: a release must get series of its own
however many came before, so a new version is always admitted and the policy remembers each
service's last ``MAX_VERSIONS_PER_SERVICE`` versions (by first sight; a version that returns after
its eviction, a rollback, counts as new). Versions change at the pace of deploys, so the series
grow by one set per release, not per request; an app that puts a per-request id there is
misconfigured (``assembly.mapping.version``).

The judge's identity (``judge_model``, ``prompt_version``: which model and which prompt produced
a judge score, ``monitor.evaluation.judge_identity``) labels each score's series too. Both change
at the pace of provider updates and upgrades, and both are capped like an allow-listed label;
local metrics' series have them empty (no judge).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from exporters.config import MAX_VERSIONS_PER_SERVICE, VERSION_LABEL
from monitor.model import EvaluationResult, Score, Turn
from monitor.telemetry import NullTelemetry, Telemetry, counter

__all__ = ["OTHER", "UNKNOWN", "JUDGE_LABELS", "LabelPolicy", "LabelledResult", "LabelledConsumer", "LabelFanOut",
           "LABEL_VALUES_CAPPED", "RecentVersions", "recorded_labels"]

log = logging.getLogger(__name__)

OTHER = "other"
UNKNOWN = "unknown"
_MAX_VALUE_CHARS = 120
JUDGE_LABELS = ("judge_model", "prompt_version")
"""Per-score labels of the evaluation series, after the policy's and before ``outcome``."""


def recorded_labels(turn: Turn) -> dict[str, str]:
    """What the result store and the JSONL sink record as a turn's labels: all of the turn's
    labels (no allow-list: they are not series) plus ``model`` when known."""
    labels = {str(k): str(v) for k, v in turn.labels.items()}
    model = turn.response_model or turn.request_model
    if model and "model" not in labels:
        labels["model"] = model
    return labels


def _builtin(name: str, turn: Turn, policy: str) -> str | None:
    if name == "model":
        return turn.response_model or turn.request_model
    if name == "provider":
        return turn.provider
    if name == "convention":
        return turn.convention
    if name == "jailbreak_attempt":
        return "true" if turn.jailbreak_attempt else "false"
    if name == "sampling_policy":
        return policy
    return turn.labels.get(name)


class RecentVersions:
    """The last ``per_service`` versions of each service, newest last; not thread-safe (the
    caller locks). A version seen again after its eviction comes back as the newest."""

    def __init__(self, per_service: int = MAX_VERSIONS_PER_SERVICE) -> None:
        if per_service < 1:
            raise ValueError("per_service must be at least 1")
        self._per_service = per_service
        self._recent: dict[str, list[str]] = {}

    def admit(self, service: str, version: str) -> None:
        recent = self._recent.setdefault(service, [])
        if version in recent:
            return
        recent.append(version)
        del recent[:-self._per_service]

    def __contains__(self, key: tuple[str, str]) -> bool:
        service, version = key
        return version in self._recent.get(service, ())

    def of(self, service: str) -> tuple[str, ...]:
        return tuple(self._recent.get(service, ()))

    def services(self) -> tuple[str, ...]:
        return tuple(self._recent)


LABEL_VALUES_CAPPED = counter(
    "rag_monitor_label_values_capped_total",
    "Evaluation label values reported as 'other' because the label reached its cardinality cap.", "label")


class LabelPolicy:
    """Maps a result to its label values, in ``names`` order (``service`` first).

    Thread-safe: the Prometheus and OTLP exporters call it from the event loop, the scrape
    renderer from a worker thread.
    """

    def __init__(self, names: Sequence[str], max_values: int, telemetry: Telemetry | None = None) -> None:
        self.names: tuple[str, ...] = ("service", *names)
        self._max = max_values
        self._seen: dict[str, set[str]] = {n: set() for n in (*self.names, *JUDGE_LABELS)}
        self._telemetry = telemetry or NullTelemetry()
        self._lock = threading.Lock()
        self._versions = RecentVersions()

    def admit(self, name: str, value: str | None, *, count: bool = True) -> str:
        """The exported value of label ``name`` for a raw ``value`` (e.g. a stored service).
        ``count=False`` for a second look at a value already admitted for the same result (the
        rolling windows), so one capped value is counted once."""
        return self._admit(name, value, count)

    def _admit(self, name: str, value: str | None, count: bool = True) -> str:
        if not value:
            value = UNKNOWN
        value = value[:_MAX_VALUE_CHARS]
        seen = self._seen[name]
        if value in seen:
            return value
        with self._lock:
            if value in seen:
                return value
            if len(seen) >= self._max:
                overflow = True
            else:
                seen.add(value)
                overflow = False
        if overflow:
            if count:
                self._telemetry.add(LABEL_VALUES_CAPPED, label=name)
            return OTHER
        return value

    def judge_values(self, score: Score) -> tuple[str, str]:
        """``(judge_model, prompt_version)`` of a score, capped like the other labels; empty for a
        score without a judge (a local metric: no ``prompt_version``)."""
        details = score.details
        model, version = details.get("judge_model"), details.get("prompt_version")
        if not isinstance(version, str):
            return "", ""
        # A judge score nobody stamped (an evaluator run outside the stage): its prompt is known.
        return (self._admit("judge_model", model if isinstance(model, str) else None),
                self._admit("prompt_version", version))

    def admit_version(self, service: str, version: str | None) -> str:
        """The exported ``version`` of a result of ``service`` (an exported service value): the
        version itself, remembered among the service's recent ones; ``other`` for the service
        ``other`` (its versions would mix several services)."""
        value = (version or UNKNOWN)[:_MAX_VALUE_CHARS]
        if service == OTHER:
            return OTHER
        with self._lock:
            self._versions.admit(service, value)
        return value

    def recent_versions(self, service: str) -> tuple[str, ...]:
        """The versions of ``service`` the ``version`` label currently admits, oldest first."""
        with self._lock:
            return self._versions.of(service)

    def values(self, result: EvaluationResult) -> tuple[str, ...]:
        turn = result.turn
        service = self._admit("service", turn.service)
        out = [service]
        for name in self.names[1:]:
            if name == VERSION_LABEL:
                out.append(self.admit_version(service, turn.labels.get(VERSION_LABEL)))
            else:
                out.append(self._admit(name, _builtin(name, turn, result.sampling_policy)))
        return tuple(out)

    def as_dict(self, result: EvaluationResult) -> dict[str, str]:
        return dict(zip(self.names, self.values(result)))

    def label(self, result: EvaluationResult) -> LabelledResult:
        return LabelledResult(result, self.as_dict(result))

    def distinct_values(self, name: str) -> int:
        if name == VERSION_LABEL:
            with self._lock:
                return len({v for service in self._versions.services() for v in self._versions.of(service)})
        return len(self._seen[name])


@dataclass(frozen=True, slots=True)
class LabelledResult:
    """A result with its exported label values (``LabelPolicy.names`` order, ``service`` first)."""

    result: EvaluationResult
    labels: Mapping[str, str]


class LabelledConsumer(Protocol):
    """An exporter that labels series: it takes the values computed once for every such exporter."""

    def consume_labelled(self, item: LabelledResult) -> None: ...


class LabelFanOut:
    """``ResultConsumer``: computes a result's label values once (admitting, and counting a cap
    once) and hands them to every exporter that labels series (Prometheus, the rolling windows,
    OTLP metrics), so they all see the same values."""

    def __init__(self, policy: LabelPolicy, consumers: Sequence[LabelledConsumer]) -> None:
        self._policy = policy
        self._consumers = tuple(consumers)

    def consume_result(self, result: EvaluationResult) -> None:
        item = self._policy.label(result)
        for consumer in self._consumers:
            try:
                consumer.consume_labelled(item)
            except Exception:  # one exporter's bug must not starve the others
                log.exception("%s failed on a result", type(consumer).__name__)
