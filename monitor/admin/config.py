"""Configuration of the admin server (the ``admin`` section)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from monitor.errors import SecretFileError

__all__ = ["AdminConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AdminConfig(_Section):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    host: str = "127.0.0.1"
    port: int = Field(9464, ge=0, le=65535)
    # /api/* and the status page show conversation text: loopback clients only, unless a token
    # is set, which every such request must then carry (Authorization: Bearer …).
    bearer_token: SecretStr | None = Field(None, min_length=1, description="required by /api/* when set")
    # People's verdicts change what the agreement figures say: writing takes its own token, so a
    # dashboard's read token cannot. Without one, POST /api/feedback does not exist (404).
    review_token: SecretStr | None = Field(
        None, min_length=1, description="write token of POST /api/feedback (people's verdicts); distinct from "
                                        "bearer_token; the route is off without it")
    review_token_file: Path | None = Field(
        None, description="file holding the review token (a mounted Secret); excludes review_token")
    liveness_stall_seconds: float = Field(
        30.0, gt=0, description="/healthz answers 503 when the pipeline's event loop has not run for this long")

    @model_validator(mode="after")
    def _review_token_ok(self) -> "AdminConfig":
        if self.review_token is not None and self.review_token_file is not None:
            raise ValueError("admin: set either review_token or review_token_file, not both")
        if (self.review_token is not None and self.bearer_token is not None
                and self.review_token.get_secret_value() == self.bearer_token.get_secret_value()):
            raise ValueError("admin.review_token: must differ from admin.bearer_token (the read token must not write)")
        return self

    def resolve_review_token(self) -> str | None:
        """The write token from ``review_token`` or ``review_token_file``; None when neither is set.
        :class:`SecretFileError` (naming the key) for a file that cannot be read, is empty or holds
        the read token."""
        if self.review_token is not None:
            return self.review_token.get_secret_value()
        if self.review_token_file is None:
            return None
        try:
            token = self.review_token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SecretFileError(f"admin.review_token_file: cannot read {self.review_token_file}: "
                                  f"{exc.strerror or exc}") from exc
        if not token:
            raise SecretFileError(f"admin.review_token_file: {self.review_token_file} is empty")
        if self.bearer_token is not None and token == self.bearer_token.get_secret_value():
            raise SecretFileError("admin.review_token_file: holds admin.bearer_token; the write token must differ")
        return token
