"""Configuration of the admin server (the ``admin`` section)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

__all__ = ["AdminConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AdminConfig(_Section):
    host: str = "127.0.0.1"
    port: int = Field(9464, ge=0, le=65535)
    # /api/* and the status page show conversation text: loopback clients only, unless a token
    # is set, which every such request must then carry (Authorization: Bearer …).
    bearer_token: SecretStr | None = Field(None, min_length=1, description="required by /api/* when set")
    liveness_stall_seconds: float = Field(
        30.0, gt=0, description="/healthz answers 503 when the pipeline's event loop has not run for this long")
