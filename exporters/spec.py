"""The evaluation, judge, sampling and scrape-time instruments rag-monitor exports, declared once
(self-telemetry counters are declared where they are counted: ``monitor.telemetry``).

Dashboards and alert rules depend on these names and labels (DESIGN.md §5): change them only
with a migration note in the README. Label sets are closed: no instrument takes an id, a text
or a user as a label.
"""

from __future__ import annotations

from monitor.telemetry import Instrument

__all__ = ["Instrument", "SCRAPE_TIME", "FLEET", "EVALUATION", "ROLLING", "JAILBREAK", "JUDGE", "SAMPLING",
           "RELEASES", "AGREEMENT", "SCORE_BUCKETS", "JUDGE_LATENCY_BUCKETS"]

# Native-scale scores: 0–1 metrics (F1, answer_relevance, precision…), 0–5 (answer_similarity)
# and 1–5 rubric scores, 0–7 severities. Buckets are upper bounds; integers land on their bucket.
SCORE_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5,
                 5.0, 6.0, 7.0)
JUDGE_LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)


# Self-telemetry counters are declared beside the code that counts them (monitor.telemetry.counter)
# and listed by monitor.telemetry.declared_counters().

# Values read at scrape time from the running components (custom collector).
SCRAPE_TIME: tuple[Instrument, ...] = (
    Instrument("rag_monitor_queue_depth", "Items waiting in a bounded queue.", "gauge", ("queue",)),
    Instrument("rag_monitor_queue_capacity", "Capacity of a bounded queue (depth/capacity = saturation).", "gauge",
               ("queue",)),
    Instrument("rag_monitor_pending_traces", "Traces buffered until complete.", "gauge"),
    Instrument("rag_monitor_pending_spans", "Spans buffered in pending traces.", "gauge"),
    Instrument("rag_monitor_pending_bytes", "Encoded bytes of the spans and log records buffered in pending traces "
               "(bounded by assembly.max_pending_bytes).", "gauge"),
    Instrument("rag_monitor_open_conversations", "Conversations open (not idle yet).", "gauge"),
)


# Fleet mode (monitor.fleet), read at scrape time; absent without fleet.redis_url.
FLEET: tuple[Instrument, ...] = (
    Instrument("rag_monitor_fleet_degraded", "1 while this replica cannot use the fleet's Redis (down or slower "
               "than fleet.timeout_seconds) and follows fleet.on_redis_failure; else 0.", "gauge"),
    Instrument("rag_monitor_fleet_replicas", "Replicas of the fleet alive at the last heartbeat (the last known "
               "count while Redis is away).", "gauge"),
    Instrument("rag_monitor_fleet_pending_decisions", "Turns waiting for the fleet's sampling decision.", "gauge"),
    Instrument("rag_monitor_weights_held", "Evaluation results held until their post-stratified weight is final.",
               "gauge"),
)
# The label sets below are the base; the allow-listed labels of ``exporters.labels`` (route,
# model…) are appended after ``service`` at run time.
# judge_model / prompt_version: which judge model (as its replies name it) and which prompt hash
# produced the score (exporters.labels.JUDGE_LABELS; empty for local metrics), so a provider's
# silent model update or a prompt change starts new series instead of blending into the old ones.
EVALUATION: tuple[Instrument, ...] = (
    Instrument("rag_monitor_evaluations_total", "Metric evaluations of sampled turns, by outcome "
               "(pass | defect | error | skipped | unscored_refused: the judge refused or a content filter "
               "blocked the call, possibly harmful, not scored; neither an error nor a verdict), judge model "
               "and prompt version.", "counter",
               ("metric", "service", "judge_model", "prompt_version", "outcome")),
    Instrument("rag_monitor_evaluation_weight_total",
               "Sum of inverse-probability (Horvitz-Thompson) weights of evaluations (pass | defect | "
               "unscored_refused): population defect rate = defect weight / (pass + defect weight).", "counter",
               ("metric", "service", "judge_model", "prompt_version", "outcome")),
    Instrument("rag_monitor_score", "Scores on each metric's native scale.", "histogram",
               ("metric", "service", "judge_model", "prompt_version"), buckets=SCORE_BUCKETS),
)

# Rolling windows (exporters.rolling), computed at scrape time. Per replica: aggregate the
# counters above across replicas instead.
ROLLING: tuple[Instrument, ...] = (
    Instrument("rag_monitor_defect_rate", "Weighted defect rate over the rolling window (NaN: no evaluation).",
               "gauge", ("metric", "service", "window")),
    Instrument("rag_monitor_defect_rate_lower", "Lower bound of the 95% Wilson interval of the defect rate.",
               "gauge", ("metric", "service", "window")),
    Instrument("rag_monitor_defect_rate_upper", "Upper bound of the 95% Wilson interval of the defect rate.",
               "gauge", ("metric", "service", "window")),
    Instrument("rag_monitor_window_evaluations", "Scored evaluations (pass + defect) in the rolling window.",
               "gauge", ("metric", "service", "window")),
)

# The seed's jailbreak comparison made online (exporters.jailbreak_rates): content-risk defect
# rate of turns flagged as jailbreak attempts vs the rest, and their difference.
DIFFERENCE_SUFFIXES = ("", "_lower", "_upper")
JAILBREAK: tuple[Instrument, ...] = (
    Instrument("rag_monitor_jailbreak_group_defect_rate",
               "Weighted content-risk defect rate of the turns flagged as jailbreak attempts (group=flagged) "
               "and of the rest (group=rest) over the rolling window (NaN: no scored turn).",
               "gauge", ("group", "window")),
    Instrument("rag_monitor_jailbreak_group_defect_rate_lower", "Lower bound of its 95% Wilson interval.", "gauge",
               ("group", "window")),
    Instrument("rag_monitor_jailbreak_group_defect_rate_upper", "Upper bound of its 95% Wilson interval.", "gauge",
               ("group", "window")),
    Instrument("rag_monitor_jailbreak_group_evaluations", "Turns with a content-risk verdict in the window, by group.",
               "gauge", ("group", "window")),
    Instrument("rag_monitor_jailbreak_defect_rate_difference",
               "Online jailbreak comparison: the difference of content-risk defect rates, flagged turns minus the "
               "rest, over the window (-1 to 1; above 0: attempts get through more often than chance).",
               "gauge", ("window",)),
    Instrument("rag_monitor_jailbreak_defect_rate_difference_lower", "Lower bound of its 95% Newcombe interval.",
               "gauge", ("window",)),
    Instrument("rag_monitor_jailbreak_defect_rate_difference_upper", "Upper bound of its 95% Newcombe interval.",
               "gauge", ("window",)),
    # Deprecated 2026-11-28 (CHANGELOG): the same values under the old name, which says "rate" for a
    # difference that can be negative. Kept for one release, then removed.
    *(Instrument(f"rag_monitor_jailbreak_defect_rate{suffix}",
                 f"Deprecated, removed in the next release: use rag_monitor_jailbreak_defect_rate_difference{suffix} "
                 "(the same value).", "gauge", ("window",)) for suffix in DIFFERENCE_SUFFIXES),
)

JUDGE: tuple[Instrument, ...] = (
    Instrument("rag_monitor_judge_requests_total", "Judge calls by outcome (ok, refused, parse_error, "
               "out_of_range, timeout, rate_limited, server_error, connection_error, auth_error, not_found, "
               "request_rejected, circuit_open, budget_exhausted); refused = the judge refused or its provider's "
               "content filter blocked the call, not counted as an error.",
               "counter", ("outcome",)),
    Instrument("rag_monitor_judge_replies_rejected_total",
               "Judge replies that parsed but failed the metric's validation.", "counter", ("outcome",)),
    Instrument("rag_monitor_judge_attempts_failed_total", "Failed HTTP attempts to the judge (retried or not).",
               "counter", ("outcome",)),
    Instrument("rag_monitor_judge_tokens_total", "Judge tokens spent, by type (prompt | completion), metric "
               "and call (single | combined_rubrics | safety | tonic | rate_limit_probe); a shared call's tokens are "
               "split evenly across the metrics it answers for.",
               "counter", ("type", "metric", "call")),
    Instrument("rag_monitor_judge_request_duration_seconds", "Duration of judge calls including retries.",
               "histogram", (), unit="seconds", buckets=JUDGE_LATENCY_BUCKETS),
    Instrument("rag_monitor_judge_circuit_open", "1 while the judge circuit breaker is open (0.5 half-open).",
               "gauge"),
    Instrument("rag_monitor_judge_budget_shed_total", "Judge calls refused because a budget had no room.",
               "counter", ("limiter",)),
    Instrument("rag_monitor_judge_budget_wait_seconds_total", "Time judge calls waited for a budget.",
               "counter", ("limiter",)),
)

SAMPLING: tuple[Instrument, ...] = (
    Instrument("rag_monitor_sampling_decisions_total",
               "Conversation sampling decisions by policy and decision (sampled | not_sampled | shed).",
               "counter", ("policy", "decision")),
    Instrument("rag_monitor_sampling_probability", "Current inclusion probability of adaptive policies.",
               "gauge", ("policy",)),
    Instrument("rag_monitor_sampling_cache_evicted_total",
               "Per-conversation decisions evicted from the bounded cache before the conversation closed.",
               "counter"),
)


# Release comparisons and the time-based change detector (exporters.release_metrics), computed from
# fleet-wide data (the shared store when there is one), so every replica exports the same values:
# aggregate with max by (service, metric, baseline, candidate), not sum.
_RELEASE = ("service", "metric", "baseline", "candidate")
_DETECTOR = ("service", "metric", "statistic")
RELEASES: tuple[Instrument, ...] = (
    Instrument("rag_monitor_release_defect_rate_difference",
               "Weighted defect rate of the candidate release minus the baseline's (the version before it), on "
               "the same minutes of traffic while both are live, adjacent traffic otherwise (NaN: not computable); "
               "updated at the end of each regressions.release_bucket_seconds step.",
               "gauge", _RELEASE),
    Instrument("rag_monitor_release_defect_rate_difference_lower",
               "Lower bound of the anytime-valid 1-alpha confidence sequence on the difference (regressions.alpha): "
               "above regressions.margin, the candidate is worse.", "gauge", _RELEASE),
    Instrument("rag_monitor_release_defect_rate_difference_upper",
               "Upper bound of the anytime-valid 1-alpha confidence sequence on the difference.", "gauge", _RELEASE),
    Instrument("rag_monitor_release_evaluations",
               "Scored evaluations of a version (the last five versions of each service) the comparisons have read: "
               "the fleet's with the PostgreSQL store, since regressions.history_hours before this process started.",
               "gauge", ("service", "metric", "version")),
    Instrument("rag_monitor_regression_evidence",
               "log10 of the change detector's e-value for the statistic (defect_rate | score); it alarms at "
               "rag_monitor_regression_evidence_threshold.", "gauge", _DETECTOR),
    Instrument("rag_monitor_regression_evidence_threshold",
               "log10 of the change detector's alarm level (regressions.detector.alarm_level): evidence at or above "
               "it is a regression.", "gauge", _DETECTOR),
    Instrument("rag_monitor_regression_active", "1 while the change detector reports a regression of the statistic, "
               "else 0.", "gauge", _DETECTOR),
)


# Judge-vs-human agreement (monitor.feedback.metrics): people's verdicts joined with the judge's
# scores of the same turns. The rate is computed from fleet-wide data (the shared store when there
# is one), so every replica exports the same value: aggregate with max, not sum. The counter
# rag_monitor_judge_agreement_total is self-telemetry (monitor.feedback.join), counted once per
# verdict by the replica that received it.
_AGREEMENT = ("metric", "judge_model")
AGREEMENT: tuple[Instrument, ...] = (
    Instrument("rag_monitor_judge_agreement_rate",
               "Share of people's verdicts on the same side of the metric's defect rule as the judge's, weighted "
               "back to the population by the review queue's inclusion probabilities where known (no sample: no "
               "verdict joined yet).", "gauge", _AGREEMENT),
    Instrument("rag_monitor_judge_agreement_rate_lower",
               "Lower bound of the 95 % Wilson interval on the agreement rate (effective sample size under "
               "weights).", "gauge", _AGREEMENT),
    Instrument("rag_monitor_judge_agreement_rate_upper",
               "Upper bound of the 95 % Wilson interval on the agreement rate: below the floor, the judge "
               "disagrees with people more than allowed.", "gauge", _AGREEMENT),
    Instrument("rag_monitor_judge_agreement_reviews",
               "People's verdicts joined with a judge score that the agreement rate is computed from.",
               "gauge", _AGREEMENT),
)
