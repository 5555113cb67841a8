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
from monitor.config_hints import bad_value, key_lines, suggest_key, suggest_tag, unknown_metric_ids, user_loc
from monitor.errors import ConfigError
from monitor.evaluation.config import EvaluationConfig
from monitor.feedback.review_config import ReviewConfig
from monitor.fleet.config import PASSWORD_ENV, FleetConfig
from monitor.judge.config import JudgeConfig
from monitor.net.addresses import is_loopback
from monitor.receivers.config import ForwardConfig, GrpcReceiverConfig, HttpReceiverConfig, ReceiversConfig
from monitor.redaction.config import RedactionConfig
from monitor.regression_config import RegressionsConfig
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
    regressions: RegressionsConfig = Field(
        default_factory=RegressionsConfig, description="release comparisons and the change detector")
    review: ReviewConfig = Field(
        default_factory=ReviewConfig, description="the review queue: which judged turns are offered to people")
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


def _format_validation_error(exc: ValidationError, origin: Mapping[str, str], lines: Mapping[str, int],
                             data: Mapping[str, Any], source: str | None) -> str:
    """Every error in one message, one line each: where (the file and line, or the env variable),
    the key as the user wrote it, what is wrong, the value given (never a secret's) and a
    did-you-mean for a misspelt key, policy type or metric id."""
    found = []
    for err in exc.errors():
        key = user_loc(MonitorConfig, err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            close = suggest_key(MonitorConfig, err["loc"])
            msg = f"unknown key; did you mean {close!r}?" if close else "unknown key"
        elif err["type"] == "union_tag_invalid":
            msg = suggest_tag(err.get("ctx", {})) or msg
        else:
            msg += bad_value(err["loc"], err.get("input"))
        found.append((key, msg))
    # The evaluation section checks metric ids only once its fields are valid, and stops at the first
    # unknown one: every unknown id is found in the raw data instead, whatever else is wrong.
    found = [(k, m) for k, m in found if "unknown metric id" not in m] + unknown_metric_ids(data)
    shown = []
    for key, msg in found:
        if key in origin:
            shown.append(f"{key} (from {origin[key]}): {msg}")
        elif source is not None and key in lines:  # FILE:LINE: first, as compilers write it
            shown.append(f"{source}:{lines[key]}: {key}: {msg}")
        else:
            shown.append(f"{key}: {msg}")
    count = f"{len(shown)} errors" if len(shown) > 1 else "1 error"
    return f"invalid configuration ({count}):\n  " + "\n  ".join(shown)


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
    lines: dict[str, int] = {}
    if path is None and environ.get(ENV_PREFIX + "CONFIG"):
        path = environ[ENV_PREFIX + "CONFIG"]
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            loaded = yaml.safe_load(text)
            lines = key_lines(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {_yaml_problem(exc, str(path))}") from None
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
        source = str(path) if path is not None else None
        raise ConfigError(_format_validation_error(exc, origin, lines, data, source)) from None


def _yaml_problem(exc: yaml.YAMLError, path: str) -> str:
    """PyYAML's error with the file's name and line instead of ``<unicode string>``."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = f"{path}, line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else f"{path}: "
    return where + problem + (f" ({context})" if context else "")
