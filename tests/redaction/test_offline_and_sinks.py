"""``rag-monitor eval`` redacts before judging and before --out; text-free results keep numbers."""

from __future__ import annotations

import json
from pathlib import Path

from monitor.model import Document, EvaluationResult, Message, Score, Turn
from monitor.redaction.sinks import TextFreeResults, without_text
from tests.support.judge_server import JudgeServer, schema_reply
from tests.test_eval_cli import run_eval


async def test_eval_redacts_what_the_judge_and_the_out_file_see(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"question": "I am ana@example.es, DNI 12345678Z. Is the tent waterproof?",
                                "context": "Support: +34 912 345 678. The tent is waterproof.",
                                "answer": "Yes. Questions? Call +34 912 345 678."}) + "\n")
    out = tmp_path / "out.jsonl"
    async with JudgeServer(default=schema_reply({"groundedness": 5})) as server:
        code, stdout, stderr = await run_eval(str(data), "--judge-base-url", server.base_url, "--judge-model", "m",
                                              "--metrics", "groundedness", "--out", str(out))
    assert code == 0, stderr
    sent = json.dumps([r.body for r in server.requests])
    for value in ("ana@example.es", "12345678Z", "912 345 678"):
        assert value not in sent and value not in out.read_text()
    assert "[PHONE_1]" in sent and "[EMAIL_1]" in sent and "[ES_DNI_1]" in sent
    assert "redacted: email 1, es_dni 1, phone 2" in stderr


def test_without_text_keeps_scores_ids_and_numbers() -> None:
    turn = Turn("t1", "c1", "secret question", "secret answer",
                documents=(Document("d1", "secret doc", 0.7, title="secret title"),),
                history=(Message("user", "secret"),), system_prompt="secret", ground_truth="secret",
                error="secret failure", service="shop", labels={"route": "/chat"})
    scores = (Score("coherence", 2.0, (1.0, 5.0), reason="secret reasoning", defect=True,
                    details={"documents": 1, "intents": [{"intent": "secret", "answered": True}],
                             "fraction": 0.5, "chunks": [{"relevant": True, "used": False}]}),
              Score("groundedness", None, (1.0, 5.0), status="error", reason="judge answered HTTP 429",
                    error_type="rate_limited"))
    bare = without_text(EvaluationResult(turn, scores, weight=4.0, sampling_policy="probabilistic"))
    assert "secret" not in repr(bare)
    assert (bare.turn.trace_id, bare.turn.service, dict(bare.turn.labels)) == ("t1", "shop", {"route": "/chat"})
    assert bare.turn.documents == (Document("d1", None, 0.7),) and bare.turn.error == "error"
    assert bare.scores[0].value == 2.0 and bare.scores[0].defect and bare.weight == 4.0
    assert bare.scores[0].details == {"documents": 1, "fraction": 0.5, "chunks": [{"relevant": True, "used": False}]}
    assert bare.scores[1].reason == "judge answered HTTP 429"  # our own failure text stays


def test_text_free_results_hand_the_same_bare_result_to_every_sink() -> None:
    seen: list[EvaluationResult] = []

    class Sink:
        def consume_result(self, result: EvaluationResult) -> None:
            seen.append(result)

    TextFreeResults([Sink(), Sink()]).consume_result(
        EvaluationResult(Turn("t", "c", "question text", "answer text"), ()))
    assert len(seen) == 2 and seen[0] is seen[1] and seen[0].turn.question == ""
