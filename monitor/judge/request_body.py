"""The JSON body of one chat-completions request, and what it will cost.

Two families of models take different parameters. Classic chat models get ``temperature: 0`` and
``max_tokens``; OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 …) reject both with a 400: they
take ``max_completion_tokens``, which also covers their hidden reasoning tokens, and only their
default temperature. :class:`RequestShaper` picks the family from ``judge.reasoning_model`` or,
when that is unset, from the model name, and switches for good when the server answers the
classic parameters with that 400 (a deployment name on Azure says nothing about the model).

The token estimate is taken from the body actually sent (messages plus ``response_format``),
four characters per token plus the chat framing: the budget reserves it before the send, so it
must cover what the server will count, not a guess made before the body existed.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from monitor.judge.config import JudgeConfig
from monitor.judge.types import JudgeRequest

__all__ = ["OutgoingRequest", "RequestShaper", "looks_like_reasoning_model"]

log = logging.getLogger(__name__)

# o1, o1-mini, o3, o3-pro, o4-mini, gpt-5, gpt-5-mini… optionally behind a provider prefix
# ("openai/o3-mini", "azure/gpt-5"), as LiteLLM-style proxies name them.
_REASONING_NAME = re.compile(r"(?:^|[/:])(?:o\d+(?:-[\w.-]*)?|gpt-5(?:[\w.-]*)?)$", re.IGNORECASE)
# Chat formatting adds a few tokens per message and per reply (OpenAI's cookbook figure).
_TOKENS_PER_MESSAGE = 4
_TOKENS_PER_REPLY = 3
_SCHEMA_HINT = "\n\nReply with exactly one JSON object and nothing else, matching this JSON schema:\n"


def looks_like_reasoning_model(model: str) -> bool:
    """True for OpenAI reasoning model names (o-series, gpt-5 family)."""
    return bool(_REASONING_NAME.search(model.strip()))


@dataclass(frozen=True, slots=True)
class OutgoingRequest:
    """A body ready to post and its budget: ``prompt_tokens`` estimated from the body itself,
    ``max_output_tokens`` as requested from the server."""

    body: dict[str, Any]
    prompt_tokens: int
    max_output_tokens: int

    @property
    def reserved_tokens(self) -> int:
        """What the budget holds for the attempt until the server reports its usage."""
        return self.prompt_tokens + self.max_output_tokens


class RequestShaper:
    """Builds request bodies for one configured judge; remembers a switch to reasoning params."""

    def __init__(self, config: JudgeConfig) -> None:
        self._model = config.effective_model or ""
        self._pinned = config.reasoning_model is not None
        self._reasoning = (config.reasoning_model if config.reasoning_model is not None
                           else looks_like_reasoning_model(self._model))
        self._effort = config.reasoning_effort
        self._extra_output = config.reasoning_extra_output_tokens

    @property
    def reasoning(self) -> bool:
        """True while requests carry reasoning-model parameters."""
        return self._reasoning

    def adopt_reasoning(self, sent_reasoning: bool) -> bool:
        """The server refused the parameters of a request sent with ``sent_reasoning``: switch
        to reasoning ones for good and return True (resend). False when the refused request
        already had them or the configuration pins the family."""
        if sent_reasoning or self._pinned:
            return False
        if self._reasoning:
            return True  # a concurrent call switched already
        self._reasoning = True
        log.info("judge model %r refused max_tokens/temperature: sending reasoning-model parameters "
                 "(max_completion_tokens, default temperature) from now on", self._model)
        return True

    def build(self, request: JudgeRequest, fmt: str) -> OutgoingRequest:
        """The body for ``request`` in structured-output mode ``fmt``."""
        user = request.user
        if fmt != "json_schema":
            # Without a server-side schema the model only knows the shape from the prompt. Appended
            # to the user turn so the system prompt stays identical (prefix caching).
            user += _SCHEMA_HINT + json.dumps(request.json_schema, sort_keys=True)
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": "system", "content": request.system}, {"role": "user", "content": user}],
        }
        if fmt == "json_object":
            body["response_format"] = {"type": "json_object"}
        elif fmt == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": request.schema_name, "schema": dict(request.json_schema), "strict": True}}
        output = request.max_output_tokens
        if self._reasoning:
            output += self._extra_output  # hidden reasoning tokens count against the same limit
            body["max_completion_tokens"] = output
            if self._effort is not None:
                body["reasoning_effort"] = self._effort
        else:
            body["temperature"] = 0
            body["max_tokens"] = output
        return OutgoingRequest(body, _estimate_prompt(body), output)


    def probe(self) -> OutgoingRequest:
        """The rate-limit probe (:mod:`monitor.judge.storm_probe`): the same model and parameter
        family, a few tokens in, one out. Its answer's content is never read."""
        body: dict[str, Any] = {"model": self._model, "messages": [{"role": "user", "content": "Say OK."}]}
        if self._reasoning:
            body["max_completion_tokens"] = 1 + self._extra_output
        else:
            body["temperature"] = 0
            body["max_tokens"] = 1
        return OutgoingRequest(body, _estimate_prompt(body), body.get("max_tokens") or body["max_completion_tokens"])


def _estimate_prompt(body: dict[str, Any]) -> int:
    chars = sum(len(m["content"]) for m in body["messages"])
    if "response_format" in body:
        chars += len(json.dumps(body["response_format"]))
    return chars // 4 + len(body["messages"]) * _TOKENS_PER_MESSAGE + _TOKENS_PER_REPLY
