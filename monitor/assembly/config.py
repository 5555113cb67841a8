"""The assembly stage's configuration: how long to wait for a trace, what to bound, which
app-specific attributes to read before the known conventions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AttributeMapping", "AssemblyConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AttributeMapping(_Section):
    """App-specific span attribute names, consulted before the known conventions."""

    question: list[str] = Field(default_factory=list)
    answer: list[str] = Field(default_factory=list)
    conversation_id: list[str] = Field(default_factory=list)
    ground_truth: list[str] = Field(default_factory=list)
    system_prompt: list[str] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list, description="JSON list of {id, content, score}")
    labels: dict[str, str] = Field(
        default_factory=dict, description="label name -> span attribute name, e.g. route: http.route"
    )
    version: list[str] = Field(
        default_factory=lambda: ["service.version"],
        description="attributes naming the app's build, read from the resource then the spans: the turn's "
                    "version label (release comparisons); [] turns it off")


class AssemblyConfig(_Section):
    decision_wait_seconds: float = Field(5.0, ge=0, description="wait after the root span ends")
    max_trace_age_seconds: float = Field(120.0, gt=0, description="assemble even without a root")
    max_pending_traces: int = Field(50_000, gt=0, description="bounded in bytes by max_pending_bytes too")
    max_spans_per_trace: int = Field(2_000, gt=0)
    max_pending_spans: int = Field(200_000, gt=0, description="all traces together")
    offload_bytes: int = Field(
        256 * 1024, gt=0, description="traces at least this large are built in a worker thread, off the event loop")
    max_pending_bytes: int = Field(
        128 * 1024 * 1024, gt=0, description="encoded size of the buffered spans and log records, all traces together")
    max_logs_per_trace: int = Field(2_000, gt=0)
    max_attribute_chars: int = Field(
        1024 * 1024, gt=0, description="attribute/log-body text longer than this is cut where it is received (counted)")
    conversation_idle_seconds: float = Field(900.0, gt=0)
    max_open_conversations: int = Field(
        100_000, gt=0, description="about 200 bytes each; past it the least recently active is closed (counted)")
    max_history_messages: int = Field(50, gt=0)
    no_turn_warning_interval_seconds: float = Field(
        300.0, gt=0, description="at most one log line per no-turn reason in this interval")
    mapping: AttributeMapping = AttributeMapping()
