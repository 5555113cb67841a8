"""The start-up summary: one line per stage saying what runs and how, logged by ``serve`` and
served to the status page.

A sidecar that evaluates nothing must say why without a debugger: which receivers listen and
what they accept, which judge (model and URL) or that it is off, which metrics, which sampling
policy, where results go. Secrets never appear: URLs are shown without credentials or query.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import urlsplit, urlunsplit

from monitor.config import MonitorConfig
from monitor.net.addresses import is_loopback
from monitor.evaluation.registry import default_registry
from samplers.describe import describe_sampling

__all__ = ["StartupSummary", "startup_summary", "safe_url", "quiet_http_client_logs", "HTTP_CLIENT_LOGGERS"]

HTTP_CLIENT_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "openai._base_client", "aiohttp.client")


@dataclass(frozen=True, slots=True)
class StartupSummary:
    """Stage → one line, in pipeline order."""

    lines: Mapping[str, str]

    def log(self, logger: logging.Logger) -> None:
        for stage, text in self.lines.items():
            logger.info("%s: %s", stage, text)


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment (where credentials hide)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _address(host: str, port: int | None) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"{shown}:{port if port is not None else '-'}"


def _receivers(config: MonitorConfig, http_port: int | None, grpc_port: int | None) -> str:
    r = config.receivers
    parts = []
    if r.http.enabled:
        auth = "bearer token required" if r.http.bearer_token else (
            "no token (loopback)" if is_loopback(r.http.host) else "NO TOKEN on a network address")
        parts.append(f"OTLP/HTTP on {r.http.host}:{http_port} (/v1/traces, /v1/logs; /v1/metrics acknowledged"
                     f"{' and forwarded' if config.forward.endpoint else ''}; {auth})")
    if r.grpc.enabled:
        parts.append(f"OTLP/gRPC on {r.grpc.host}:{grpc_port} (traces, logs; metrics acknowledged"
                     f"{' and forwarded' if config.forward.endpoint else ''})")
    return "; ".join(parts) or "none enabled (receivers.http.enabled, receivers.grpc.enabled)"


def _judge(config: MonitorConfig) -> str:
    judge = config.judge
    if not judge.enabled:
        missing = " and ".join(n for n, v in (("judge.model", judge.effective_model),
                                              ("judge.base_url", judge.base_url or judge.azure)) if not v)
        return f"off (set {missing}): only local metrics run"
    where = safe_url(judge.base_url) if judge.base_url else f"Azure {safe_url(judge.azure.endpoint)}"  # type: ignore[union-attr]
    limits = [f"max {judge.max_concurrency} in flight"]
    if judge.tokens_per_minute:
        limits.append(f"{judge.tokens_per_minute} tokens/min")
    if judge.requests_per_minute:
        limits.append(f"{judge.requests_per_minute} requests/min")
    return f"{judge.effective_model} at {where} ({', '.join(limits)})"


def _metrics(config: MonitorConfig) -> str:
    registry = default_registry()
    ids = [e.id for e in config.evaluation.entries()]
    local = [m for m in ids if registry.get(m).tier == "local"]
    judged = [m for m in ids if registry.get(m).tier == "judge"]
    text = f"local: {', '.join(local) or 'none'}"
    if judged:
        text += f"; judge{'' if config.judge.enabled else ' (off)'}: {', '.join(judged)}"
    return text


def _outputs(config: MonitorConfig, admin_port: int | None) -> str:
    exp = config.exporters
    out = [f"Prometheus http://{_address(config.admin.host, admin_port)}/metrics",
           f"status page http://{_address(config.admin.host, admin_port)}/"]
    out.append(f"store {exp.store.path}" if exp.store.enabled else "store off")
    if exp.otlp_metrics.enabled:
        out.append("OTLP metrics " + (safe_url(exp.otlp_metrics.endpoint) if exp.otlp_metrics.endpoint
                                      else "to OTEL_EXPORTER_OTLP_ENDPOINT"))
    if exp.evaluation_events.enabled:
        out.append("evaluation events")
    if exp.jsonl.path:
        out.append(f"JSONL {exp.jsonl.path}")
    return ", ".join(out)


def startup_summary(config: MonitorConfig, *, http_port: int | None = None, grpc_port: int | None = None,
                    admin_port: int | None = None) -> StartupSummary:
    """The summary for ``config`` with the ports actually bound."""
    forward = safe_url(config.forward.endpoint) if config.forward.endpoint else "off"
    return StartupSummary({
        "receivers": _receivers(config, http_port, grpc_port),
        "forward": forward,
        "judge": _judge(config),
        "metrics": _metrics(config),
        "sampling": describe_sampling(config.sampling),
        "outputs": _outputs(config, admin_port),
    })


def quiet_http_client_logs(level: str) -> None:
    """The openai client and httpx log every request at INFO: one line per judge call. Keep
    them for DEBUG; otherwise only their warnings."""
    for name in HTTP_CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)
