"""JsonlSink on real files: line format, flushing, rotation, bounds, failures."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest

from exporters.config import JsonlConfig
from exporters.jsonl_sink import JsonlSink, score_record
from monitor.offline.report import row_record
from monitor.model import Document, EvaluationResult, JudgeUsage, Score, ScoreStatus
from tests.exporters.results import WriterTelemetry
from tests.exporters.results import result as build_result


def result(*scores: Score, question: str = "How long do refunds take?", weight: float = 2.0,
           documents: tuple[Document, ...] = ()) -> EvaluationResult:
    return build_result(*(scores or (Score("fluency", 4.0, (1.0, 5.0), defect=False),)), weight=weight,
                        policy="always", question=question, answer="Five days.", documents=documents,
                        service="shop", labels={"route": "/chat"}, model=None, request_model="gpt-x")


def strict_lines(path: Path) -> list[dict[str, Any]]:
    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text(encoding="utf-8").splitlines()]


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            pytest.fail("condition not met before the deadline")
        await asyncio.sleep(0.01)


async def stop(sink: JsonlSink) -> None:
    await sink.shutdown(asyncio.get_running_loop().time() + 10)


def sink_for(path: Path, telemetry: WriterTelemetry, **config: Any) -> JsonlSink:
    return JsonlSink(JsonlConfig(path=str(path), **config), telemetry, lambda: 1_700_000_000.5,
                     flush_interval_seconds=0.02)


async def test_one_line_per_result_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.jsonl"  # the directory is created
    sink = sink_for(path, WriterTelemetry())
    await sink.start()
    judged = Score("groundedness", 2.0, (1.0, 5.0), defect=True, reason="unsupported claim",
                   usage=JudgeUsage(120, 30, 0.25, 1), details={"raw": [1, 2]})
    failed = Score("relevance", None, (1.0, 5.0), status=ScoreStatus.ERROR, error_type="timeout",
                   reason="judge timed out")
    severity = Score("violence", 5.0, (0.0, 7.0), defect=True, label="Medium")
    first = result(judged, failed, severity, documents=(Document("d1", "Refunds take 5 days.", 0.9, "FAQ"),
                                                        Document("d2", None)))
    second = result(question="Ünïcode ✓")
    sink.consume_result(first)
    sink.consume_result(second)
    await until(lambda: path.exists() and len(path.read_text().splitlines()) == 2)  # flushed while running
    await stop(sink)

    one, two = strict_lines(path)
    assert one == {
        "timestamp": 1_700_000_000.5, "trace_id": first.turn.trace_id, "span_id": first.turn.chat_span_id,
        "conversation_id": first.turn.conversation_id, "service": "shop",
        "labels": {"route": "/chat", "model": "gpt-x"}, "weight": 2.0, "sampling_policy": "always",
        "question": "How long do refunds take?", "answer": "Five days.",
        "documents": [{"id": "d1", "title": "FAQ", "content": "Refunds take 5 days.", "score": 0.9},
                      {"id": "d2", "title": None, "content": None, "score": None}],
        "scores": [
            {"metric": "groundedness", "outcome": "defect", "status": "ok", "value": 2.0, "scale": [1.0, 5.0],
             "defect": True, "label": None, "reason": "unsupported claim", "error_type": None,
             "usage": {"prompt_tokens": 120, "completion_tokens": 30, "latency_seconds": 0.25, "calls": 1},
             "details": {"raw": [1, 2]}},
            {"metric": "relevance", "outcome": "error", "status": "error", "value": None, "scale": [1.0, 5.0],
             "defect": None, "label": None, "reason": "judge timed out", "error_type": "timeout",
             "usage": {"prompt_tokens": 0, "completion_tokens": 0, "latency_seconds": 0.0, "calls": 0},
             "details": {}},
            {"metric": "violence", "outcome": "defect", "status": "ok", "value": 5.0, "scale": [0.0, 7.0],
             "defect": True, "label": "Medium", "reason": None, "error_type": None,
             "usage": {"prompt_tokens": 0, "completion_tokens": 0, "latency_seconds": 0.0, "calls": 0},
             "details": {}},
        ],
    }
    assert [s["outcome"] for s in one["scores"]] == ["defect", "error", "defect"]
    assert two["question"] == "Ünïcode ✓" and two["trace_id"] == second.turn.trace_id


def test_a_sink_line_scores_like_rag_monitor_eval_out() -> None:
    # One reader for both files: the sink's score objects are the rows `rag-monitor eval --out` writes.
    score = Score("answer_relevance", 0.7, (0.0, 1.0), defect=False, reason="ok",
                  usage=JudgeUsage(10, 5, 0.1234567, 1), details={"intents": ["a", "b"]})
    turn = result(score).turn
    (eval_out,) = row_record(1, "qa", "row-1", [(turn.question, [score])])["scores"]
    assert score_record(score) == eval_out
    assert eval_out["usage"]["latency_seconds"] == 0.123457 and eval_out["details"] == {"intents": ["a", "b"]}


async def test_non_finite_numbers_become_null(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    sink = sink_for(path, WriterTelemetry())
    await sink.start()
    sink.consume_result(result(Score("f1_score", float("inf"), (0.0, 1.0), defect=False), weight=float("inf")))
    await stop(sink)
    (line,) = strict_lines(path)
    assert line["weight"] is None and line["scores"][0]["value"] is None


async def test_rotation_keeps_one_old_file(tmp_path: Path) -> None:
    path, telemetry = tmp_path / "r.jsonl", WriterTelemetry()
    sink = sink_for(path, telemetry, max_bytes=4000)
    await sink.start()
    results = [result(question=f"question {i} " + "x" * 200) for i in range(60)]  # ~1.3 kB per line
    for r in results:
        sink.consume_result(r)
    await stop(sink)

    rotated = path.with_name("r.jsonl.1")
    current, old = strict_lines(path), strict_lines(rotated)
    assert path.stat().st_size <= 4000 and rotated.stat().st_size <= 4000
    assert old and current
    written = [line["trace_id"] for line in old + current]
    assert written == [r.turn.trace_id for r in results[-len(written):]]  # the newest, in order
    assert len(written) < len(results)  # older files are gone
    assert telemetry.write_failed == 0


async def test_restart_appends(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    for _ in range(2):
        sink = sink_for(path, WriterTelemetry())
        await sink.start()
        sink.consume_result(result())
        await stop(sink)
        await stop(sink)  # safe twice
    assert len(strict_lines(path)) == 2


async def test_full_queue_drops_and_counts(tmp_path: Path) -> None:
    path, telemetry = tmp_path / "r.jsonl", WriterTelemetry()
    sink = sink_for(path, telemetry, queue_size=3)
    await sink.start()
    for _ in range(10):  # no await in between: the writer cannot drain meanwhile
        sink.consume_result(result())
    assert sink.queue_depth == 3
    assert telemetry.dropped == Counter({"jsonl": 7})
    await stop(sink)
    sink.consume_result(result())  # refused after shutdown
    assert telemetry.dropped == Counter({"jsonl": 8})
    assert len(strict_lines(path)) == 3


async def test_write_failures_are_counted_and_do_not_stop_the_writer(tmp_path: Path) -> None:
    path, telemetry = tmp_path / "r.jsonl", WriterTelemetry()
    path.with_name("r.jsonl.1").mkdir()  # a directory in the way: every rotation fails
    sink = sink_for(path, telemetry, max_bytes=500)
    await sink.start()
    try:
        sink.consume_result(result())  # fits: the file was empty
        await until(lambda: path.exists() and len(path.read_text().splitlines()) == 1)
        sink.consume_result(result())
        await until(lambda: telemetry.write_failed == 1)
        sink.consume_result(result())
        await until(lambda: telemetry.write_failed == 2)
    finally:
        await stop(sink)
    assert len(strict_lines(path)) == 1


async def test_unwritable_path_fails_start_naming_the_key(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    sink = sink_for(blocker / "r.jsonl", WriterTelemetry())
    with pytest.raises(OSError, match=r"exporters\.jsonl\.path"):
        await sink.start()
    await stop(sink)


def test_needs_a_path() -> None:
    with pytest.raises(ValueError, match=r"exporters\.jsonl\.path"):
        JsonlSink(JsonlConfig(), WriterTelemetry())
