"""Configuration: YAML file + ``RAG_MONITOR_…`` environment overrides, validated once at start.

Every section is a pydantic model with ``extra="forbid"``, so a misspelt key is an error that
names it. Env overrides use ``__`` between levels: ``RAG_MONITOR_RECEIVERS__HTTP__PORT=14318``;
values are parsed as YAML scalars/lists (``true``, ``5``, ``[a, b]``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from exporters.config import BUILTIN_LABELS, ExportersConfig
from monitor.admin.config import AdminConfig
from monitor.assembly.config import AssemblyConfig, AttributeMapping
from monitor.config_hints import suggest_key, user_loc
from monitor.errors import ConfigError
from monitor.evaluation.config import EvaluationConfig
from monitor.fleet.config import PASSWORD_ENV, FleetConfig
from monitor.judge.config import JudgeConfig
from monitor.net.addresses import is_loopback
from monitor.receivers.config import ForwardConfig, GrpcReceiverConfig, HttpReceiverConfig, ReceiversConfig
from monitor.redaction.config import RedactionConfig
from samplers.config import SamplingConfig

__all__ = ["MonitorConfig", "load_config", "ENV_PREFIX"]

ENV_PREFIX = "RAG_MONITOR_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    fleet: FleetConfig = Field(
        default_factory=FleetConfig, description="shared state of several replicas on Redis; off unless redis_url is set")
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
        # RAG_MONITOR_CONFIG names the file; RAG_MONITOR_REDIS_PASSWORD is a secret read by the fleet, never a key.
        if not name.startswith(ENV_PREFIX) or name in (ENV_PREFIX + "CONFIG", PASSWORD_ENV):
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
