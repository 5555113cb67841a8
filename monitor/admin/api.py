"""JSON API of the admin server: its contracts, parameters, access rule and documents.

Pure functions and protocols, no HTTP: ``monitor.admin`` serves them. The data comes from a
:class:`SummarySource` (rolling defect rates) and an :class:`EvaluationQuery` (the result store).

Endpoints (all ``GET``, all JSON, ``Cache-Control: no-store``; busy: 503 + ``Retry-After``):

``/api/summary``
    Rolling defect rates per metric with their scales, trend and causes of skipped and failed
    evaluations: see :mod:`monitor.admin.summary`.

``/api/pipeline``
    Pipeline health (no conversation text): see :mod:`monitor.admin.health`.

``/api/turns?metric=&since=&limit=``
    The worst recent turns, one entry per turn with all its scores and documents: see
    :mod:`monitor.admin.turns`.

``/api/evaluations?metric=&outcome=&since=&limit=`` (newest first) and
``/api/worst?since=&limit=`` (the worst recent turns; ``since`` defaults to the longest window)
    ``{"items": [E, ...], "count": n, "query": {...the parsed parameters}}``. E: ``id``,
    ``timestamp`` (unix s, when evaluated), ``metric``, ``outcome`` (pass | defect | error |
    skipped), ``status``, ``value`` (null unless scored), ``scale`` ([min, max]), ``label``,
    ``reason``, ``error_type``, ``weight``, ``sampling_policy``, ``trace_id``, ``span_id``,
    ``conversation_id``, ``service``, ``labels``, ``turn_start`` (unix s or null),
    ``question``/``answer`` (excerpts) with ``question_truncated``/``answer_truncated``,
    ``judge_model``/``prompt_version`` (the judge's identity; null for local metrics).

``/api/releases``
    ``{"services": [{"service", "versions": [{"version", "first_seen", "last_seen",
    "evaluations"}], "comparisons": [C, ...]}], "at": unix s}``, versions oldest first. C: a
    release comparison of one metric, candidate against baseline (``service``, ``metric``,
    ``baseline``, ``candidate``, ``mode`` canary | adjacent, ``n_baseline``, ``n_candidate``,
    ``defect_rate_baseline``/``_candidate``, ``difference`` with ``lower``/``upper`` (the
    anytime-valid confidence sequence, null until computable), the same for ``score_…``,
    ``regressed``, ``drivers``: ``[{"label", "value", "before", "after", "share", "n"}]``).

``/api/regressions``
    ``{"active": [R, ...], "watching": [R, ...], "at": unix s}``: the change detector's states
    that alarm, and those that do not but have evidence (log10 e-value above 0). R: ``service``,
    ``metric``, ``statistic`` (defect_rate | score), ``since``, ``before``, ``after``,
    ``lower``/``upper`` (on after − before), ``evidence``, ``threshold`` (log10 of the alarm
    level), ``active``, ``drivers``, and ``runbook_url``.

Parameters: ``metric`` (letters, digits, ``_ . : -``), ``outcome``, ``since`` (unix seconds, an
ISO-8601 time — UTC when it has no offset — or a duration back from now such as ``15m``),
``limit`` (1–1000). A bad or unknown parameter is a 400 ``{"error": ..., "parameter": name}``.
Without a summary source or store the matching endpoints answer 503 ``{"error": ...}``.

Access: these answers carry conversation text. With ``admin.bearer_token`` set every request must
send ``Authorization: Bearer <token>`` (401 otherwise). Without it only loopback peers addressing
the server by a loopback host name are served (403 otherwise); the host check keeps a web page
from reaching the API through DNS rebinding.
"""

from __future__ import annotations

import hmac
import ipaddress
import dataclasses
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Protocol, Sequence

from exporters.config import parse_duration
from exporters.release_metrics import ReleaseSnapshot
from exporters.result_store import StoredEvaluation
from monitor.admin.summary import SummarySource, TrendPointView, WindowStatsView, summary_document, window_document

__all__ = [
    "WindowStatsView",
    "TrendPointView",
    "SummarySource",
    "StoredEvaluationView",
    "EvaluationQuery",
    "QueryError",
    "EvaluationsQuery",
    "parse_evaluations_query",
    "WorstQuery",
    "parse_worst_query",
    "parse_since",
    "parse_limit",
    "single_values",
    "AccessDecision",
    "decide_access",
    "summary_document",
    "window_document",
    "evaluation_item",
    "encode_json",
    "releases_document",
    "regressions_document",
    "REGRESSION_ALERTS",
]

OUTCOMES = ("pass", "defect", "error", "skipped", "unscored_refused")
MAX_LIMIT = 1000
_METRIC_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_DURATION_TEXT = re.compile(r"^[0-9]+[smhd]$")
_WHOLE = re.compile(r"^[0-9]{1,7}$")
_LOOPBACK_NAMES = ("localhost",)


# The store's own record: the admin serves what the exporters keep (docs/architecture.md).
StoredEvaluationView = StoredEvaluation


class EvaluationQuery(Protocol):
    """Read side of the result store (``exporters.result_store.ResultStore``)."""

    async def evaluations(self, *, metric: str | None = None, outcome: str | None = None,
                          since: float | None = None, limit: int = 100) -> Sequence[StoredEvaluationView]: ...

    async def worst_recent(self, *, since: float, limit: int = 20) -> Sequence[StoredEvaluationView]: ...


# ---------------------------------------------------------------------------------------------
# Query parameters


class QueryError(ValueError):
    """A query parameter that does not validate; ``parameter`` names it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter


@dataclass(frozen=True, slots=True)
class EvaluationsQuery:
    metric: str | None = None
    outcome: str | None = None
    since: float | None = None
    limit: int = 100


def parse_since(text: str, now: float) -> float:
    """Unix seconds, ISO-8601 (naive = UTC) or a duration back from ``now`` → unix seconds."""
    text = text.strip()
    if _NUMBER.match(text):
        value = float(text)
    elif _DURATION_TEXT.match(text):
        try:
            value = now - parse_duration(text)
        except ValueError as exc:
            raise QueryError("since", str(exc)) from None
    else:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise QueryError("since", "expected unix seconds, an ISO-8601 time or a duration like 15m") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        value = parsed.timestamp()
    if not math.isfinite(value):
        raise QueryError("since", "out of range")
    return value


def parse_limit(text: str) -> int:
    if not _WHOLE.match(text) or not 1 <= int(text) <= MAX_LIMIT:
        raise QueryError("limit", f"expected a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def single_values(params: Mapping[str, str], allowed: Sequence[str]) -> dict[str, str]:
    """The non-empty ``allowed`` parameters; unknown or repeated ones are errors (a typo such as
    ``metrics=`` would otherwise silently widen the query)."""
    values: dict[str, str] = {}
    seen: set[str] = set()
    # items(), not keys(): a multidict's keys() lists a repeated key once.
    for key, value in params.items():
        if key not in allowed:
            raise QueryError(key, f"unknown parameter (allowed: {', '.join(allowed)})")
        if key in seen:
            raise QueryError(key, "given more than once")
        seen.add(key)
        if value != "":
            values[key] = value
    return values


def parse_evaluations_query(params: Mapping[str, str], now: float) -> EvaluationsQuery:
    """Validate ``/api/evaluations`` parameters. Raises :class:`QueryError`."""
    values = single_values(params, ("metric", "outcome", "since", "limit"))
    metric = values.get("metric")
    if metric is not None and not _METRIC_ID.match(metric):
        raise QueryError("metric", "expected a metric id (letters, digits, _ . : -)")
    outcome = values.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise QueryError("outcome", f"expected one of {' | '.join(OUTCOMES)}")
    since = parse_since(values["since"], now) if "since" in values else None
    limit = parse_limit(values["limit"]) if "limit" in values else 100
    return EvaluationsQuery(metric, outcome, since, limit)


@dataclass(frozen=True, slots=True)
class WorstQuery:
    since: float
    limit: int = 20


def parse_worst_query(params: Mapping[str, str], now: float, default_seconds: float) -> WorstQuery:
    """Validate ``/api/worst`` parameters; ``since`` defaults to ``default_seconds`` back from now."""
    values = single_values(params, ("since", "limit"))
    since = parse_since(values["since"], now) if "since" in values else now - default_seconds
    return WorstQuery(since, parse_limit(values["limit"]) if "limit" in values else 20)


# ---------------------------------------------------------------------------------------------
# Access control


@dataclass(frozen=True, slots=True)
class AccessDecision:
    allowed: bool
    status: int = 200
    reason: str = "ok"  # the ``reason`` of the rejected-requests counter
    message: str = ""


def _is_loopback_ip(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:9464
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return name in _LOOPBACK_NAMES or name.endswith(".localhost") or _is_loopback_ip(name)


def decide_access(*, remote: str | None, host: str | None, authorization: str | None,
                  token: bytes | None) -> AccessDecision:
    """May a request from ``remote`` (peer IP) with these headers read conversation text?"""
    if token is not None:
        scheme, _, given = (authorization or "").strip().partition(" ")
        given = given.strip()
        # An empty configured token must not match an empty header.
        if scheme.lower() == "bearer" and token and given and hmac.compare_digest(given.encode(), token):
            return AccessDecision(True)
        return AccessDecision(False, 401, "unauthenticated",
                              "send Authorization: Bearer <admin.bearer_token>")
    if remote is None or not _is_loopback_ip(remote):
        return AccessDecision(False, 403, "forbidden",
                              "the API shows conversation text: it answers loopback clients only; "
                              "set admin.bearer_token to serve other clients")
    if not _is_loopback_host(host):
        return AccessDecision(False, 403, "forbidden",
                              "address the server as localhost or 127.0.0.1, or set admin.bearer_token")
    return AccessDecision(True)


# ---------------------------------------------------------------------------------------------
# JSON documents


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _excerpt(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)].rstrip() + "…", True


def evaluation_item(row: StoredEvaluationView, excerpt_chars: int = 500) -> dict[str, Any]:
    """One stored evaluation as JSON, question and answer cut to ``excerpt_chars``."""
    question, q_cut = _excerpt(row.question, excerpt_chars)
    answer, a_cut = _excerpt(row.answer, excerpt_chars)
    return {
        "id": row.id, "timestamp": row.timestamp, "metric": row.metric, "outcome": row.outcome,
        "status": row.status, "value": _finite(row.value), "scale": [row.scale[0], row.scale[1]],
        "label": row.label, "reason": row.reason, "error_type": row.error_type,
        "weight": _finite(row.weight), "sampling_policy": row.sampling_policy,
        "trace_id": row.trace_id, "span_id": row.span_id, "conversation_id": row.conversation_id,
        "service": row.service, "labels": dict(row.labels),
        "turn_start": row.turn_start_unix_nano / 1e9 if row.turn_start_unix_nano else None,
        "question": question, "question_truncated": q_cut, "answer": answer, "answer_truncated": a_cut,
        "judge_model": row.judge_model, "prompt_version": row.prompt_version,
    }


def encode_json(document: Any) -> bytes:
    """Compact UTF-8 JSON. ``allow_nan=False``: a NaN that slipped past the documents' NaN → null
    mapping fails loudly instead of emitting invalid JSON."""
    return json.dumps(document, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()


# The alert each statistic of the change detector raises (helm/rag-monitor alert rules); its
# runbook is the section of the runbooks page named after it.
REGRESSION_ALERTS = {"defect_rate": "RagMonitorQualityDefectRateRegressed",
                     "score": "RagMonitorQualityScoreRegressed"}


def _plain(value: Any) -> Any:
    """A record of the regression engine as JSON values: dataclasses as objects, tuples as lists,
    a non-finite number as null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float):
        return _finite(value)
    return value


def releases_document(snapshot: ReleaseSnapshot) -> dict[str, Any]:
    """``/api/releases``: per service its versions and its comparisons (see the module doc)."""
    services: dict[str, dict[str, Any]] = {}
    for s in snapshot.services:
        services[s.service] = {"service": s.service, "versions": [_plain(v) for v in s.versions], "comparisons": []}
    for c in snapshot.comparisons:
        entry = services.setdefault(c.service, {"service": c.service, "versions": [], "comparisons": []})
        entry["comparisons"].append(_plain(c))
    return {"services": list(services.values()), "at": snapshot.at}


def regressions_document(snapshot: ReleaseSnapshot) -> dict[str, Any]:
    """``/api/regressions``: alarming detector states, then the watched ones with evidence."""
    active: list[dict[str, Any]] = []
    watching: list[dict[str, Any]] = []
    base = snapshot.runbook_base_url
    for r in snapshot.regressions:
        item = _plain(r)
        alert = REGRESSION_ALERTS.get(r.statistic, "")
        item["runbook_url"] = f"{base}#{alert.lower()}" if base and alert else base or None
        if r.active:
            active.append(item)
        elif math.isfinite(r.evidence) and r.evidence > 0:
            watching.append(item)
    watching.sort(key=lambda item: -(item["evidence"] or 0.0))
    return {"active": active, "watching": watching, "at": snapshot.at}
