"""Configuration: YAML file + ``RAG_MONITOR_…`` environment overrides, validated once at start.

Every section is a pydantic model with ``extra="forbid"``, so a misspelt key is an error that
names it. Env overrides use ``__`` between levels: ``RAG_MONITOR_RECEIVERS__HTTP__PORT=14318``;
values are parsed as YAML scalars/lists (``true``, ``5``, ``[a, b]``).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from exporters.config import BUILTIN_LABELS, ExportersConfig
from monitor.assembly.config import AssemblyConfig, AttributeMapping
from monitor.config_hints import suggest_key, user_loc
from monitor.errors import ConfigError
from monitor.evaluation.config import EvaluationConfig
from monitor.judge.config import JudgeConfig
from monitor.redaction.config import RedactionConfig
from samplers.config import SamplingConfig

__all__ = [
    "HttpReceiverConfig",
    "GrpcReceiverConfig",
    "ReceiversConfig",
    "ForwardConfig",
    "AttributeMapping",
    "AssemblyConfig",
    "AdminConfig",
    "MonitorConfig",
    "load_config",
    "is_loopback",
    "ENV_PREFIX",
]

ENV_PREFIX = "RAG_MONITOR_"
MiB = 1024 * 1024


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpReceiverConfig(_Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(4318, ge=0, le=65535)
    # The OTLP spec recommends accepting up to 64 MiB; an SDK-default batch of 512 RAG spans is
    # ~6 MB, which aiohttp's 1 MiB default would refuse (and the exporter would drop for good).
    max_request_bytes: int = Field(64 * MiB, gt=0, description="limit on the body as sent (compressed)")
    max_decompressed_bytes: int = Field(64 * MiB, gt=0, description="limit after gunzip")
    bearer_token: SecretStr | None = Field(None, description="required on every request when set")
    # Bounds the memory held by request bodies being decoded at once (each ≤ the two limits
    # above); past it the receiver answers 503 + Retry-After, which OTLP exporters retry later.
    max_concurrent_requests: int = Field(16, gt=0, description="bodies decoded at once")
    # Bodies still arriving are counted apart, so slow or stalled uploads never take the slots
    # of requests that are ready; each must arrive whole within body_timeout_seconds.
    max_concurrent_uploads: int = Field(64, gt=0, description="bodies being received at once; more get 503")
    body_timeout_seconds: float = Field(10.0, gt=0, description="a body not received by then gets 408")


class GrpcReceiverConfig(_Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(4317, ge=0, le=65535)
    max_message_bytes: int = Field(64 * MiB, gt=0, description="limit after decompression")
    bearer_token: SecretStr | None = None
    max_concurrent_requests: int = Field(16, gt=0, description="more get RESOURCE_EXHAUSTED")


class ReceiversConfig(_Section):
    http: HttpReceiverConfig = HttpReceiverConfig()
    grpc: GrpcReceiverConfig = GrpcReceiverConfig()
    bearer_token: SecretStr | None = Field(
        None, min_length=1, description="token of both receivers unless each sets its own (one env var in a container)")
    allow_unauthenticated: bool = Field(
        False, description="accept spans on a non-loopback address without a bearer token (logged as a warning)")

    @model_validator(mode="before")
    @classmethod
    def _shared_token(cls, data: Any) -> Any:
        # The shared token fills in for a receiver that has none of its own.
        if not isinstance(data, Mapping) or data.get("bearer_token") is None:
            return data
        filled = dict(data)
        for name in ("http", "grpc"):
            section = filled.get(name)
            section = dict(section) if isinstance(section, Mapping) else (section.model_dump() if section else {})
            if section.get("bearer_token") is None:
                section["bearer_token"] = filled["bearer_token"]
            filled[name] = section
        return filled

    @model_validator(mode="after")
    def _exposed_receivers_need_a_token(self) -> "ReceiversConfig":
        if self.allow_unauthenticated:
            return self
        for name, r in (("http", self.http), ("grpc", self.grpc)):
            if r.enabled and not is_loopback(r.host) and r.bearer_token is None:
                raise ValueError(
                    f"receivers.{name}.host={r.host!r} is reachable from the network but receivers.{name}.bearer_token "
                    "is not set: anyone who can reach it could push spans. Set a token (receivers.bearer_token for "
                    "both; env RAG_MONITOR_RECEIVERS__BEARER_TOKEN), bind 127.0.0.1, or set "
                    "receivers.allow_unauthenticated: true")
        return self


def is_loopback(host: str) -> bool:
    """True for addresses only this machine (this pod) can reach."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ForwardConfig(_Section):
    """Send the received bodies unchanged to the app's real collector (OTLP/HTTP)."""

    endpoint: str | None = Field(None, description="base URL, e.g. http://otel-collector:4318")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(5.0, gt=0)
    max_queue_bytes: int = Field(64 * MiB, gt=0)
    max_queue_requests: int = Field(1000, gt=0)
    max_attempts: int = Field(3, ge=1, le=10, description="tries per body on retryable errors")
    concurrency: int = Field(4, ge=1, le=64)


class AdminConfig(_Section):
    host: str = "127.0.0.1"
    port: int = Field(9464, ge=0, le=65535)
    # /api/* and the status page show conversation text: loopback clients only, unless a token
    # is set, which every such request must then carry (Authorization: Bearer …).
    bearer_token: SecretStr | None = Field(None, min_length=1, description="required by /api/* when set")
    liveness_stall_seconds: float = Field(
        30.0, gt=0, description="/healthz answers 503 when the pipeline's event loop has not run for this long")


class MonitorConfig(_Section):
    # Never echo the input in errors: it may hold judge.api_key or a bearer token.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    receivers: ReceiversConfig = ReceiversConfig()
    forward: ForwardConfig = ForwardConfig()
    assembly: AssemblyConfig = AssemblyConfig()
    admin: AdminConfig = AdminConfig()
    judge: JudgeConfig = Field(default_factory=JudgeConfig, description="off unless model and base_url are set")
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    exporters: ExportersConfig = Field(default_factory=ExportersConfig)
    redaction: RedactionConfig = Field(
        default_factory=RedactionConfig, description="personal data replaced before text leaves the process")
    service_name: str = Field("rag-monitor", description="this process's own service.name")
    shutdown_deadline_seconds: float = Field(10.0, gt=0)
    log_level: str = Field("INFO", pattern="^(DEBUG|INFO|WARNING|ERROR)$")

    @model_validator(mode="after")
    def _labels_have_a_source(self) -> "MonitorConfig":
        mapped = set(self.assembly.mapping.labels)
        for name in self.exporters.labels:
            if name not in BUILTIN_LABELS and name not in mapped:
                raise ValueError(
                    f"exporters.labels: {name!r} has no source: map it in assembly.mapping.labels "
                    f"or use one of {', '.join(BUILTIN_LABELS)}")
        return self

    @model_validator(mode="after")
    def _ports_distinct(self) -> "MonitorConfig":
        used: dict[tuple[str, int], str] = {}
        for key, host, port, on in (
            ("receivers.http.port", self.receivers.http.host, self.receivers.http.port, self.receivers.http.enabled),
            ("receivers.grpc.port", self.receivers.grpc.host, self.receivers.grpc.port, self.receivers.grpc.enabled),
            ("admin.port", self.admin.host, self.admin.port, True),
        ):
            if on and port != 0:
                if (host, port) in used:
                    raise ValueError(f"{key} {port} is already used by {used[(host, port)]}")
                used[(host, port)] = key
        return self


def _format_validation_error(exc: ValidationError, origin: Mapping[str, str]) -> str:
    lines = []
    for err in exc.errors():
        key = user_loc(MonitorConfig, err["loc"]) or "(top level)"
        where = f" (from {origin[key]})" if key in origin else ""
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            close = suggest_key(MonitorConfig, err["loc"])
            msg = f"unknown key; did you mean {close!r}?" if close else "unknown key"
        lines.append(f"{key}{where}: {msg}")
    return "invalid configuration:\n  " + "\n  ".join(lines)


def _apply_env(data: dict[str, Any], environ: Mapping[str, str], origin: dict[str, str]) -> None:
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX):].split("__") if p]
        if not path:
            continue
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[path[-1]] = value
        origin[".".join(path)] = name


def load_config(path: str | Path | None = None, environ: Mapping[str, str] | None = None) -> MonitorConfig:
    """Read ``path`` (optional), apply env overrides, validate. Raises ConfigError."""
    environ = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    if path is None and environ.get(ENV_PREFIX + "CONFIG"):
        path = environ[ENV_PREFIX + "CONFIG"]
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path}: the top level must be a mapping")
        data = loaded
    origin: dict[str, str] = {}
    _apply_env(data, environ, origin)
    try:
        return MonitorConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, origin)) from None
