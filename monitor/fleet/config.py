"""The ``fleet`` section: shared coordination on Redis for several replicas of one monitor.

Off unless ``redis_url`` is set; the embedded default (one process, SQLite) needs no server. With
it, the replicas share one sampling decision per conversation, the arrival counts behind the
adaptive probabilities and the post-stratified weights, one judge token/request budget and the
judge's 429 storm state. Example (YAML)::

    fleet:
      redis_url: redis://redis.monitoring:6379/0
      redis_password_file: /var/run/secrets/redis/password   # or RAG_MONITOR_REDIS_PASSWORD
      on_redis_failure: local_share                          # or: closed

The password never sits in the config file: it comes from ``redis_password_file`` (a mounted
Secret) or the ``RAG_MONITOR_REDIS_PASSWORD`` environment variable; a URL that carries one (from
a Secret through ``RAG_MONITOR_FLEET__REDIS_URL``) is accepted and printed redacted.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Literal, Mapping
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from monitor.errors import SecretFileError

__all__ = ["FleetConfig", "PASSWORD_ENV", "redact_url", "default_replica_id"]

PASSWORD_ENV = "RAG_MONITOR_REDIS_PASSWORD"
_SCHEMES = ("redis", "rediss", "unix")


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for logs and the startup summary)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return parts._replace(netloc=f"{user}:***@{host}{port}").geturl()


def default_replica_id() -> str:
    """The pod name (Kubernetes sets the hostname to it) and the process id."""
    return f"{socket.gethostname()}-{os.getpid()}"


class FleetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    redis_url: SecretStr | None = Field(
        None, description="redis://host:6379/0 (rediss:// for TLS); fleet mode is off when unset")
    redis_password_file: Path | None = Field(
        None, description=f"file holding the Redis password (a mounted Secret); else {PASSWORD_ENV}")
    on_redis_failure: Literal["local_share", "closed"] = Field(
        "local_share",
        description="Redis down or slow: local_share = each replica decides alone and spends budget / last known "
                    "fleet size; closed = no judge calls until Redis is back (sampling still decides locally)")
    timeout_seconds: float = Field(
        1.0, gt=0, le=10, description="a Redis operation slower than this counts as Redis being down (0.25 s "
                                      "flapped on CPU-starved nodes in the benchmark; decisions are off the "
                                      "ingest path, so a second costs nothing while Redis is well)")
    replicas_hint: int = Field(
        1, ge=1, le=10_000, description="fleet size assumed by local_share when none has been seen yet (at start)")
    key_prefix: str = Field("rag-monitor", pattern=r"^[A-Za-z0-9_.:\-]{1,64}$",
                            description="prefix of every Redis key (several monitors can share one Redis)")
    replica_id: str | None = Field(
        None, pattern=r"^[A-Za-z0-9_.:\-]{1,128}$", description="this replica's name; default: hostname-pid")
    heartbeat_seconds: float = Field(
        2.0, gt=0, le=60, description="how often a replica says it is alive (the fleet size counts those seen "
                                      "within three heartbeats)")
    sync_seconds: float = Field(
        0.5, gt=0, le=10, description="how often a failed read of the fleet's counts is retried (they are read "
                                      "once each weight interval is final), and part of the grace before it is")
    max_batch_wait_seconds: float = Field(
        1.0, ge=0.02, le=5, description="how long a decision batch may gather turns when traffic is light (the "
                                         "window doubles after each small batch up to this, and falls back to 20 ms "
                                         "after a large one): fewer Redis round trips, later decisions (a first "
                                         "turn waits up to two windows: its lookup rides with one batch, its "
                                         "proposal with the next)")
    max_pending_decisions: int = Field(
        10_000, gt=0, description="turns waiting for the fleet's decision; past it a turn is decided locally "
                                  "and counted")
    max_pending_bytes: int = Field(
        64 * 1024 * 1024, gt=0, description="text held by the turns waiting for the fleet's decision; past it "
                                            "a turn is decided locally and counted")

    @field_validator("redis_url")
    @classmethod
    def _url_ok(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        url = value.get_secret_value().strip()
        if not url:
            return None
        scheme = urlsplit(url).scheme
        if scheme not in _SCHEMES:
            raise ValueError(f"{redact_url(url)!r} is not a redis://, rediss:// or unix:// URL")
        if scheme != "unix" and not urlsplit(url).hostname:
            raise ValueError(f"{redact_url(url)!r} names no host")
        return SecretStr(url)

    @model_validator(mode="after")
    def _one_password_source(self) -> "FleetConfig":
        if self.redis_password_file is not None and self.redis_url is None:
            raise ValueError("fleet.redis_password_file is set but fleet.redis_url is not")
        return self

    @property
    def enabled(self) -> bool:
        return self.redis_url is not None

    def url(self) -> str:
        """The Redis URL (may carry a password: never log it, use :meth:`display_url`)."""
        return self.redis_url.get_secret_value() if self.redis_url is not None else ""

    def display_url(self) -> str:
        return redact_url(self.url())

    def replica(self) -> str:
        return self.replica_id or default_replica_id()

    def resolve_password(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The password from ``redis_password_file``, else ``RAG_MONITOR_REDIS_PASSWORD``, else None (the URL's
        own, if any, applies). Raises ``ValueError`` naming the field when the file cannot be read."""
        if self.redis_password_file is not None:
            try:
                text = self.redis_password_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise SecretFileError(f"fleet.redis_password_file: cannot read {self.redis_password_file}: "
                                 f"{exc.strerror}") from None
            return text or None
        env = os.environ if environ is None else environ
        value = env.get(PASSWORD_ENV, "")
        return value or None


