"""Every instrument rag-monitor exports, declared once.

Dashboards and alert rules depend on these names and labels (DESIGN.md §5): change them only
with a migration note in the README. Label sets are closed: no instrument takes an id, a text
or a user as a label.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Instrument", "SELF_TELEMETRY", "SCRAPE_TIME", "by_name"]


@dataclass(frozen=True, slots=True)
class Instrument:
    name: str
    help: str
    kind: str  # counter | gauge | histogram
    labels: tuple[str, ...] = ()
    unit: str = ""
    buckets: tuple[float, ...] = ()


SELF_TELEMETRY: tuple[Instrument, ...] = (
    Instrument("rag_monitor_spans_received_total", "Spans received, by transport.", "counter", ("transport",)),
    Instrument("rag_monitor_spans_dropped_total", "Spans dropped on purpose, by reason.", "counter", ("reason",)),
    Instrument("rag_monitor_logs_received_total", "Log records received, by transport.", "counter", ("transport",)),
    Instrument("rag_monitor_logs_dropped_total", "Log records dropped on purpose, by reason.", "counter", ("reason",)),
    Instrument("rag_monitor_requests_rejected_total",
               "OTLP requests answered with an error status, by transport and reason.", "counter",
               ("transport", "reason")),
    Instrument("rag_monitor_turns_assembled_total", "Turns assembled from complete traces, by convention.",
               "counter", ("convention",)),
    Instrument("rag_monitor_traces_without_turn_total", "Complete traces that held no turn, by reason.",
               "counter", ("reason",)),
    Instrument("rag_monitor_traces_evicted_total",
               "Traces assembled early because a buffer limit was reached, by limit.", "counter", ("reason",)),
    Instrument("rag_monitor_conversations_closed_total", "Conversations closed, by reason.", "counter",
               ("reason",)),
    Instrument("rag_monitor_forward_total", "Bodies forwarded to the downstream collector, by outcome.",
               "counter", ("outcome",)),
    Instrument("rag_monitor_queue_dropped_total", "Items dropped because a bounded queue was full.",
               "counter", ("queue",)),
)

# Values read at scrape time from the running components (custom collector).
SCRAPE_TIME: tuple[Instrument, ...] = (
    Instrument("rag_monitor_queue_depth", "Items waiting in a bounded queue.", "gauge", ("queue",)),
    Instrument("rag_monitor_pending_traces", "Traces buffered until complete.", "gauge"),
    Instrument("rag_monitor_pending_spans", "Spans buffered in pending traces.", "gauge"),
    Instrument("rag_monitor_open_conversations", "Conversations open (not idle yet).", "gauge"),
)


def by_name(name: str) -> Instrument:
    for inst in SELF_TELEMETRY + SCRAPE_TIME:
        if inst.name == name:
            return inst
    raise KeyError(name)
