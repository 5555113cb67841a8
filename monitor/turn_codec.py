"""A sampled turn and its sampling decision as JSON, for the evaluation backlog that outlives the
process (a restart resumes what was sampled but not yet evaluated). Versioned: a payload written
by another layout is refused (``ValueError``), never half-read."""

from __future__ import annotations

import json
from typing import Any

from monitor.model import Document, Message, SamplingDecision, TokenUsage, Turn

__all__ = ["encode_pending", "decode_pending"]

_VERSION = 1


def encode_pending(turn: Turn, decision: SamplingDecision) -> str:
    t: dict[str, Any] = {
        "trace_id": turn.trace_id, "conversation_id": turn.conversation_id, "question": turn.question,
        "answer": turn.answer,
        "documents": [[d.id, d.content, d.score, d.title] for d in turn.documents],
        "history": [[m.role, m.content] for m in turn.history],
        "system_prompt": turn.system_prompt, "ground_truth": turn.ground_truth,
        "request_model": turn.request_model, "response_model": turn.response_model, "provider": turn.provider,
        "service": turn.service, "labels": dict(turn.labels), "start_time_unix_nano": turn.start_time_unix_nano,
        "latency_seconds": turn.latency_seconds, "usage": [turn.usage.input_tokens, turn.usage.output_tokens],
        "error": turn.error, "response_id": turn.response_id, "chat_span_id": turn.chat_span_id,
        "convention": turn.convention, "jailbreak_attempt": turn.jailbreak_attempt,
    }
    d = {"sampled": decision.sampled, "policy": decision.policy, "probability": decision.probability,
         "cell": decision.cell}
    return json.dumps({"v": _VERSION, "turn": t, "decision": d}, ensure_ascii=False, separators=(",", ":"))


def decode_pending(payload: str) -> tuple[Turn, SamplingDecision]:
    try:
        data = json.loads(payload)
        if data.get("v") != _VERSION:
            raise ValueError(f"backlog payload version {data.get('v')!r} is not {_VERSION}")
        t, d = data["turn"], data["decision"]
        turn = Turn(
            trace_id=t["trace_id"], conversation_id=t["conversation_id"], question=t["question"], answer=t["answer"],
            documents=tuple(Document(i, c, s, ti) for i, c, s, ti in t["documents"]),
            history=tuple(Message(r, c) for r, c in t["history"]),
            system_prompt=t["system_prompt"], ground_truth=t["ground_truth"], request_model=t["request_model"],
            response_model=t["response_model"], provider=t["provider"], service=t["service"],
            labels=dict(t["labels"]), start_time_unix_nano=int(t["start_time_unix_nano"]),
            latency_seconds=t["latency_seconds"], usage=TokenUsage(*t["usage"]), error=t["error"],
            response_id=t["response_id"], chat_span_id=t["chat_span_id"], convention=t["convention"],
            jailbreak_attempt=bool(t["jailbreak_attempt"]))
        cell = d.get("cell")  # absent in payloads written before cells existed
        return turn, SamplingDecision(bool(d["sampled"]), str(d["policy"]), float(d["probability"]),
                                      str(cell) if cell is not None else None)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed backlog payload: {exc!r}") from exc
