"""The HTTP 200 body of a judge call, read strictly into the few fields the client uses.

Why not let the ``openai`` package parse it: its response models are built without validation,
so a proxy's HTML login page comes back as a ``str`` and a JSON body that is not a chat completion
as a model whose fields are all ``None`` — both surface later as ``AttributeError`` tracebacks
and, worse, as ``ok`` calls. Here the body must be JSON, and the JSON must be a chat completion
with at least one choice; anything else raises :class:`NotAChatCompletion` (the client counts it
``parse_error`` and tells the circuit breaker the endpoint is not serving the API).

One pydantic declaration of the subset we read (``extra`` fields ignored, so new API fields never
break us) is both the documentation of what we depend on and its validation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["ChatReply", "NotAChatCompletion", "read_chat_completion"]

_LENIENT = ConfigDict(extra="ignore", frozen=True)
# How much of an unexpected body a message may quote: enough to recognise a proxy's page.
_EXCERPT_CHARS = 80


class NotAChatCompletion(Exception):
    """The 200 body is not a chat completion (HTML, empty, truncated JSON, another JSON shape)."""


class _Message(BaseModel):
    model_config = _LENIENT
    content: str | None = None
    refusal: str | None = None


class _Choice(BaseModel):
    model_config = _LENIENT
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    model_config = _LENIENT
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)


class _Completion(BaseModel):
    model_config = _LENIENT
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None
    # The model that served the call, as the provider names it (often a dated snapshot behind an
    # alias): when it changes, the judge changed even if judge.model did not.
    model: str | None = Field(None, max_length=200)


@dataclass(frozen=True, slots=True)
class ChatReply:
    """What the client needs from a chat completion: the first choice and the usage."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str | None = None
    """The serving model the completion names (None when the server leaves it out)."""


def read_chat_completion(body: bytes, headers: Mapping[str, str]) -> ChatReply:
    """Validate ``body``; raise :class:`NotAChatCompletion` with a short reason."""
    if not body.strip():
        raise NotAChatCompletion("judge answered 200 with an empty body")
    try:
        data = json.loads(body)
    except ValueError:  # also UnicodeDecodeError
        kind = headers.get("content-type", "no content-type").split(";")[0]
        raise NotAChatCompletion(f"judge answered 200 with {kind}, not JSON: {_excerpt(body)!r}") from None
    try:
        completion = _Completion.model_validate(data)
    except ValidationError as exc:
        where = ".".join(str(p) for p in exc.errors()[0]["loc"]) or "body"
        raise NotAChatCompletion(f"judge answered 200 with JSON that is not a chat completion "
                                 f"({where}: {exc.errors()[0]['msg']})") from None
    choice = completion.choices[0]
    usage = completion.usage
    return ChatReply(choice.message.content, choice.message.refusal, choice.finish_reason,
                     usage.prompt_tokens if usage else None, usage.completion_tokens if usage else None,
                     completion.model or None)


def _excerpt(body: bytes) -> str:
    text = body[: _EXCERPT_CHARS * 4].decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 1] + "…"
