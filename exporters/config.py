"""Configuration of everything downstream of evaluation: labels, rolling windows, OTLP push,
result store, JSONL sink. Part of ``MonitorConfig`` under the ``exporters`` key.

Example (YAML)::

    exporters:
      labels: [route, model]          # allow-list; values past max_label_values become "other"
      max_label_values: 50
      defect_rate_windows: [5m, 1h]
      otlp_metrics: {enabled: true, endpoint: "http://otel-collector:4318", interval_seconds: 30}
      evaluation_events: {enabled: true, endpoint: "http://otel-collector:4318"}
      store: {path: /var/lib/rag-monitor/results.sqlite3, max_age_hours: 72}
      jsonl: {path: /var/log/rag-monitor/results.jsonl}
"""

from __future__ import annotations

import re
from typing import Literal

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

__all__ = [
    "BUILTIN_LABELS",
    "VERSION_LABEL",
    "MAX_VERSIONS_PER_SERVICE",
    "FORBIDDEN_LABELS",
    "OtlpExportConfig",
    "OtlpMetricsConfig",
    "EvaluationEventsConfig",
    "StoreConfig",
    "JsonlConfig",
    "ExportersConfig",
    "parse_duration",
]

MiB = 1024 * 1024

# Label names whose value comes from the turn itself rather than from assembly.mapping.labels.
BUILTIN_LABELS = ("model", "provider", "convention", "jailbreak_attempt", "sampling_policy", "version")
# The app's build (assembly.mapping.version, service.version by default): the last few per service
# are kept as label values, never folded into "other" (a new release must get its own series).
VERSION_LABEL = "version"
MAX_VERSIONS_PER_SERVICE = 5
# Labels the pipeline sets itself, or that would carry ids, text or users: never allow-listed.
FORBIDDEN_LABELS = frozenset({
    "metric", "service", "outcome", "window", "le", "quantile", "job", "instance",
    "trace_id", "span_id", "conversation_id", "session_id", "user", "user_id", "question", "answer",
})
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_DURATION = re.compile(r"^(\d+)(s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``"30s"``, ``"5m"``, ``"1h"``, ``"1d"`` → seconds. Raises ValueError."""
    m = _DURATION.match(text.strip())
    if not m or int(m.group(1)) == 0:
        raise ValueError(f"{text!r} is not a duration like 30s, 5m, 1h or 1d")
    return float(int(m.group(1)) * _UNIT_SECONDS[m.group(2)])


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OtlpExportConfig(_Section):
    """An OTLP destination. Unset fields fall back to the standard ``OTEL_EXPORTER_OTLP_*``
    environment variables, which the OpenTelemetry exporters read themselves."""

    enabled: bool = False
    endpoint: str | None = Field(None, description="http(s)://host:4318 (http/protobuf) or host:4317 (grpc)")
    protocol: Literal["http/protobuf", "grpc"] | None = Field(
        None, description="default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf")
    headers: dict[str, str] = Field(default_factory=dict, description="added to every export request")
    timeout_seconds: float = Field(10.0, gt=0)
    insecure: bool | None = Field(None, description="grpc only: plaintext instead of TLS")


class OtlpMetricsConfig(OtlpExportConfig):
    interval_seconds: float = Field(60.0, gt=0, description="push period")


class EvaluationEventsConfig(OtlpExportConfig):
    """``gen_ai.evaluation.result`` log records, one per score, on the evaluated span's trace."""

    max_queue_size: int = Field(4096, gt=0, description="records waiting for export; more are dropped and counted")
    max_export_batch_size: int = Field(512, gt=0)
    schedule_delay_seconds: float = Field(2.0, gt=0)
    include_explanation: bool = Field(True, description="the judge's reason as gen_ai.evaluation.explanation")


class StoreConfig(_Section):
    """Result store behind the JSON API and status page (holds conversation text): the embedded SQLite
    file by default, or one PostgreSQL database for a fleet of replicas (``url: postgresql://…``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    enabled: bool = True
    path: str = Field("rag-monitor.sqlite3", description="database file; its directory must be writable")
    url: SecretStr | None = Field(
        None, description="postgresql://user@host:5432/db (the fleet's one store) or sqlite:///path; "
                          "excludes path. The password comes from the URL (a Secret through "
                          "RAG_MONITOR_EXPORTERS__STORE__URL), PGPASSWORD or PGPASSFILE")
    max_age_hours: float = Field(168.0, gt=0, description="rows older than this are deleted")
    max_bytes: int = Field(512 * MiB, gt=0, description="SQLite: oldest rows are deleted past this file size "
                                                        "(PostgreSQL: max_age_hours only)")
    queue_size: int = Field(10_000, gt=0, description="results waiting to be written; more are dropped and counted")
    max_queue_bytes: int = Field(64 * MiB, gt=0, description="text held by the results waiting to be written")
    batch_size: int = Field(256, gt=0)
    flush_interval_seconds: float = Field(1.0, gt=0)
    backlog_flush_seconds: float = Field(
        0.2, gt=0, le=10, description="sampled turns are made durable this often (what a kill -9 can lose)")
    max_text_chars: int = Field(4000, gt=0, description="question/answer/reason are cut to this length")
    # PostgreSQL only (url: postgresql://…): the fleet's store.
    pool_size: int = Field(4, ge=1, le=100, description="PostgreSQL: connections per replica (one pool per process)")
    timeout_seconds: float = Field(
        5.0, gt=0, le=120, description="PostgreSQL: connect and statement timeout; longer counts as the store down")
    lease_seconds: float = Field(
        30.0, gt=0, le=3600, description="PostgreSQL: a replica's claim on its backlog rows, renewed every third of "
                                         "it; a dead replica's rows are claimed by another once it runs out")
    spill_max_items: int = Field(
        10_000, gt=0, description="PostgreSQL down: results and backlog operations held in memory until it returns; "
                                  "past this the oldest are dropped and counted")
    spill_max_bytes: int = Field(64 * MiB, gt=0, description="PostgreSQL down: text held by the spill")

    @field_validator("url")
    @classmethod
    def _url_ok(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        scheme = urlsplit(value.get_secret_value().strip()).scheme
        if scheme not in ("postgresql", "postgres", "sqlite"):
            raise ValueError(f"scheme {scheme!r} is not postgresql:// or sqlite:///")
        return SecretStr(value.get_secret_value().strip())

    @model_validator(mode="after")
    def _url_or_path(self) -> "StoreConfig":
        if self.url is not None and "path" in self.model_fields_set:
            raise ValueError("exporters.store: set either url or path, not both")
        return self

    @property
    def dialect(self) -> str:
        """``postgresql`` or ``sqlite``."""
        if self.url is None:
            return "sqlite"
        return "sqlite" if self.url.get_secret_value().startswith("sqlite") else "postgresql"

    @property
    def sqlite_path(self) -> str:
        """The SQLite file: ``path``, or the path of a ``sqlite:///…`` URL."""
        if self.url is not None and self.dialect == "sqlite":
            # As SQLAlchemy reads it: sqlite:///relative.db, sqlite:////absolute/path.db
            return self.url.get_secret_value().removeprefix("sqlite:").removeprefix("///").removeprefix("//")
        return self.path


class JsonlConfig(_Section):
    """One JSON object per evaluated turn, appended to a file, for offline analysis."""

    path: str | None = Field(None, description="off unless set")
    max_bytes: int = Field(256 * MiB, gt=0, description="rotated to <path>.1 past this size")
    queue_size: int = Field(10_000, gt=0)
    max_queue_bytes: int = Field(64 * MiB, gt=0, description="text held by the results waiting to be written")


class ExportersConfig(_Section):
    labels: list[str] = Field(default_factory=list, description="allow-listed label names on evaluation metrics")
    max_label_values: int = Field(50, gt=0, le=10_000, description="per label; later values become 'other'")
    defect_rate_windows: list[str] = Field(default_factory=lambda: ["5m", "1h"], min_length=1, max_length=6)
    otlp_metrics: OtlpMetricsConfig = OtlpMetricsConfig()
    evaluation_events: EvaluationEventsConfig = EvaluationEventsConfig()
    store: StoreConfig = StoreConfig()
    jsonl: JsonlConfig = JsonlConfig()

    @field_validator("labels")
    @classmethod
    def _labels_ok(cls, names: list[str]) -> list[str]:
        for name in names:
            if not _LABEL_NAME.match(name) or name.startswith("__"):
                raise ValueError(f"{name!r} is not a valid Prometheus label name")
            if name in FORBIDDEN_LABELS:
                raise ValueError(f"{name!r} cannot be a label (reserved, or an id/text/user field)")
        if len(set(names)) != len(names):
            raise ValueError("labels are listed twice")
        return names

    @field_validator("defect_rate_windows")
    @classmethod
    def _windows_ok(cls, windows: list[str]) -> list[str]:
        seconds = [parse_duration(w) for w in windows]
        if len(set(seconds)) != len(seconds):
            raise ValueError("windows are listed twice")
        if max(seconds) > 7 * 86400:
            raise ValueError("the longest window is 7d")
        if max(seconds) / min(seconds) > 2000:
            raise ValueError("longest/shortest window ratio over 2000 (memory is sized by it)")
        return windows

    def window_seconds(self) -> tuple[tuple[str, float], ...]:
        return tuple((w, parse_duration(w)) for w in self.defect_rate_windows)
