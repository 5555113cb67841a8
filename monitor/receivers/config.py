"""Configuration of the OTLP receivers and the forwarder (the ``receivers`` and ``forward`` sections)."""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from monitor.net.addresses import is_loopback

__all__ = ["HttpReceiverConfig", "GrpcReceiverConfig", "ReceiversConfig", "ForwardConfig"]

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


class ForwardConfig(_Section):
    """Send the received bodies unchanged to the app's real collector (OTLP/HTTP)."""

    endpoint: str | None = Field(None, description="base URL, e.g. http://otel-collector:4318")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(5.0, gt=0)
    max_queue_bytes: int = Field(64 * MiB, gt=0)
    max_queue_requests: int = Field(1000, gt=0)
    max_attempts: int = Field(3, ge=1, le=10, description="tries per body on retryable errors")
    concurrency: int = Field(4, ge=1, le=64)
