"""Ground truth for the framework capture apps (stdlib only: it runs inside each framework's venv).

A framework app knows what its user asked, what the app retrieved and what it showed back; the
fake OpenAI server knows what every chat call really was (``GET /_test/chat-calls``). Together
they give one truth line per turn in the ``expected.jsonl`` format of
``tests/testdata/captures/README.md`` — never written by hand.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any, Sequence, TextIO

__all__ = ["ChatCallLog", "truth_line", "emit"]


class ChatCallLog:
    """Reads the fake server's call log; ``since_last()`` gives the calls of the turn just run."""

    def __init__(self, openai_base_url: str) -> None:
        root = openai_base_url.rstrip("/")
        root = root[: -len("/v1")] if root.endswith("/v1") else root
        self._url = f"{root}/_test/chat-calls"
        self._seen = len(self._fetch())

    def _fetch(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self._url, timeout=10) as resp:  # 127.0.0.1 only
            return json.loads(resp.read())

    def since_last(self) -> list[dict[str, Any]]:
        calls = self._fetch()
        new, self._seen = calls[self._seen:], len(calls)
        return new


def truth_line(*, trace_id: str, conversation_id: str, stack: str, instrumentation: str, scenario: str,
               service: str, question: str, answer: str, history: Sequence[dict[str, str]],
               system_prompt: str | None, documents: Sequence[dict[str, Any]],
               calls: Sequence[dict[str, Any]], retrieval_query: str | None = None,
               provider: str = "openai", **extra: Any) -> dict[str, Any]:
    """One turn. ``calls`` are this turn's chat calls in order; the last one answered."""
    if not calls:
        raise ValueError("a turn without a chat call has no truth")
    final = calls[-1]
    return {
        "trace_id": trace_id,
        "conversation_id": conversation_id,
        "stack": stack,
        "instrumentation": instrumentation,
        "scenario": scenario,
        "service": service,
        "question": question,
        "answer": answer,
        "history": [{"role": m["role"], "content": m["content"]} for m in history],
        "system_prompt": system_prompt,
        "documents": [{"id": d.get("id"), "title": d.get("title"), "content": d.get("content"),
                       "score": d.get("score")} for d in documents],
        "retrieval_query": retrieval_query,
        "request_model": final["request_model"],
        "response_model": final["response_model"],
        "provider": provider,
        "usage": {"input_tokens": final["input_tokens"], "output_tokens": final["output_tokens"]},
        "response_id": final["response_id"],
        "streamed": final["streamed"],
        "chat_calls": len(calls),
        "chat_call_details": [{k: c[k] for k in ("response_id", "answer", "input_tokens", "output_tokens")}
                              for c in calls],
        **extra,
    }


def emit(truth: dict[str, Any], out: TextIO = sys.stdout) -> None:
    out.write(json.dumps(truth, ensure_ascii=False) + "\n")
    out.flush()
