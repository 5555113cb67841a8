"""Why the status page is empty: rules over the pipeline counters, each finding with its fix.

Pure functions: the same findings are shown on the status page (``/api/pipeline``) and logged,
rate-limited, by :mod:`monitor.admin.pipeline_watch`. Each rule looks at one hand-off of the
pipeline (spans → turns → sampled → evaluated → judged) and names the first one where traffic
stops, so "no evaluations yet" always comes with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

__all__ = ["Finding", "Setting", "diagnose", "CONTENT_CAPTURE_HINT"]

Counts = Mapping[str, Mapping[str, float]]

CONTENT_CAPTURE_HINT = (
    "turn on message content capture in the app: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY "
    "(opentelemetry-instrumentation-openai-v2), TRACELOOP_TRACE_CONTENT=true (OpenLLMetry); "
    "`rag-monitor inspect --explain` shows what a saved trace holds")
_ERROR_SHARE = 0.2  # above this share of failed evaluations, say so


@dataclass(frozen=True, slots=True)
class Finding:
    level: Literal["warning", "info"]
    code: str  # stable: tests, log rate-limiting
    text: str


@dataclass(frozen=True, slots=True)
class Setting:
    """What the findings need to know about the configuration."""

    receiver: str  # e.g. "http://127.0.0.1:4318"
    judge_enabled: bool
    sampling: str  # the policy in words
    no_turn_hints: Mapping[str, str]


def _total(counts: Counts, family: str) -> float:
    return sum(counts.get(family, {}).values())


def _top(counts: Counts, family: str) -> tuple[str, float]:
    values = counts.get(family, {})
    if not values:
        return "", 0.0
    key = max(values, key=lambda k: values[k])
    return key, values[key]


def _n(x: float) -> str:
    return f"{x:.0f}"


def _ingest(c: Counts, setting: Setting) -> list[Finding]:
    out = []
    refused, n = _top(c, "requests_rejected")
    if n and refused in ("unauthenticated", "forbidden"):
        out.append(Finding("warning", "requests_refused", f"{_n(n)} OTLP requests refused ({refused}): send "
                           "Authorization: Bearer <receivers.*.bearer_token> (OTEL_EXPORTER_OTLP_HEADERS)"))
    if not _total(c, "spans_received"):
        out.append(Finding("info", "no_spans", f"no spans received: point the app's OTEL_EXPORTER_OTLP_ENDPOINT at "
                           f"{setting.receiver} (or the gRPC port with OTEL_EXPORTER_OTLP_PROTOCOL=grpc)"))
    dropped, n = _top(c, "spans_dropped")
    if n:
        out.append(Finding("warning", "spans_dropped", f"{_n(n)} spans dropped ({dropped})"))
    return out


def _assembly(c: Counts, setting: Setting, pending_traces: float) -> list[Finding]:
    if not _total(c, "spans_received") or _total(c, "turns_assembled"):
        reason, n = _top(c, "traces_without_turn")
        if n and _total(c, "turns_assembled"):
            hint = setting.no_turn_hints.get(reason, reason)
            return [Finding("info", "some_traces_without_turn", f"{_n(n)} traces held no turn ({reason}): {hint}")]
        return []
    reason, n = _top(c, "traces_without_turn")
    if n:
        hint = CONTENT_CAPTURE_HINT if reason == "no_message_content" else setting.no_turn_hints.get(reason, reason)
        return [Finding("warning", "no_turns", f"spans arrive but no trace became a turn: {_n(n)} without a turn "
                        f"({reason}): {hint}")]
    if pending_traces:
        return [Finding("info", "assembling", f"{_n(pending_traces)} traces are waiting for their root span or "
                        "for assembly.decision_wait_seconds to pass")]
    return []


def _sampling(c: Counts, setting: Setting) -> list[Finding]:
    turns = _total(c, "turns_assembled")
    decisions = c.get("sampling", {})
    if not turns or not sum(decisions.values()) or decisions.get("sampled"):
        return []
    return [Finding("warning", "nothing_sampled", f"{_n(sum(decisions.values()))} conversations decided, none "
                    f"sampled (policy: {setting.sampling}): to evaluate every conversation set "
                    "sampling.policies: [{type: always}] (env RAG_MONITOR_SAMPLING__POLICIES='[{type: always}]')")]


def _evaluation(c: Counts, setting: Setting, circuit: str) -> list[Finding]:
    out = []
    queue, n = _top(c, "queue_dropped")
    if n:
        out.append(Finding("warning", "queue_dropped", f"{_n(n)} items dropped: queue {queue} full"))
    if circuit != "closed":
        out.append(Finding("warning", "judge_circuit", f"judge circuit breaker {circuit.replace('_', '-')}: judge "
                           "calls fail fast until the judge answers again (see judge requests below)"))
    outcomes = c.get("evaluations", {})
    done = sum(outcomes.values())
    errors = outcomes.get("error", 0.0)
    if done and errors / done > _ERROR_SHARE:
        judged = {k: v for k, v in c.get("judge_requests", {}).items() if k != "ok" and v}
        worst = max(judged, key=lambda k: judged[k]) if judged else "see the metric table"
        out.append(Finding("warning", "evaluation_errors", f"{errors / done:.0%} of evaluations failed "
                           f"(judge: {worst})"))
    if c.get("sampling", {}).get("sampled") and not done and not _top(c, "queue_dropped")[1]:
        out.append(Finding("info", "evaluating", "conversations were sampled; their evaluations are in progress"))
    if not setting.judge_enabled:
        out.append(Finding("info", "judge_off", "judge off: only local metrics run; set judge.model and "
                           "judge.base_url (API key from OPENAI_API_KEY) to add the LLM-judged metrics"))
    return out


def diagnose(counts: Counts, setting: Setting, *, pending_traces: float = 0.0,
             circuit: str = "closed") -> list[Finding]:
    """Findings for ``counts`` (totals or recent deltas), warnings first, in pipeline order."""
    findings = [*_ingest(counts, setting), *_assembly(counts, setting, pending_traces),
                *_sampling(counts, setting), *_evaluation(counts, setting, circuit)]
    return sorted(findings, key=lambda f: f.level != "warning")
