"""``run_traffic`` against a real in-process sidecar: real SDK, real OTLP/HTTP, real evaluators."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.demo import SentTurn, demo_config, run_traffic
from monitor.demo.corpus import COLLECTION_OF_ROUTE, document
from monitor.demo.phases import PhaseTally
from monitor.demo.rag_app import MODELS, SERVICE_NAME
from monitor.demo.traffic import AFTER, BEFORE
from monitor.model import EvaluationResult

TURNS = 100


class Recorder:
    def __init__(self) -> None:
        self.results: list[EvaluationResult] = []

    def consume_result(self, result: EvaluationResult) -> None:
        self.results.append(result)


class StopAfter:
    """Observer that stops the traffic after ``n`` turns and remembers each turn's phase."""

    def __init__(self, tally: PhaseTally, n: int, stop: asyncio.Event) -> None:
        self.tally, self.n, self.stop = tally, n, stop
        self.phase: dict[str, str] = {}
        self.regression_at: float | None = None

    def turn_sent(self, turn: SentTurn) -> None:
        self.phase[turn.trace_id] = turn.phase
        self.tally.turn_sent(turn)
        if len(self.phase) >= self.n:
            self.stop.set()

    def regression_started(self, at_unix: float) -> None:
        self.regression_at = at_unix
        self.tally.regression_started(at_unix)


def _config(tmp_path: Any) -> MonitorConfig:
    base = MonitorConfig.model_validate({"admin": {"port": 0}, "shutdown_deadline_seconds": 5})
    config, _ = demo_config(base, admin_port=0, scratch_dir=tmp_path)
    return config


async def test_traffic_reaches_the_sidecar_as_labelled_turns_and_the_regression_shows(tmp_path) -> None:
    tally, recorder = PhaseTally(), Recorder()
    sidecar = Sidecar(_config(tmp_path), registry=CollectorRegistry(), result_consumers=[tally, recorder])
    await sidecar.start()
    try:
        assert sidecar.http is not None
        stop = asyncio.Event()
        observer = StopAfter(tally, TURNS, stop)
        stats = await run_traffic(f"http://127.0.0.1:{sidecar.http.port}", rate_per_second=100, stop=stop,
                                  regression_at=0.4, seed=5, observer=observer)
        assert await tally.wait_drained(20) == 0
    finally:
        await sidecar.shutdown()

    assert stats.turns == TURNS and stats.flushed
    assert stats.turns_before_regression > 0 and stats.turns_after_regression > 0
    assert stats.turns_before_regression + stats.turns_after_regression == TURNS
    assert observer.regression_at == stats.regression_started_at is not None
    assert len(recorder.results) == TURNS
    turns = [r.turn for r in recorder.results]
    assert {t.service for t in turns} == {SERVICE_NAME}
    assert {t.labels["route"] for t in turns} == set(COLLECTION_OF_ROUTE)
    assert {t.request_model for t in turns} == set(MODELS)
    assert all(t.convention == "genai" and t.documents and t.system_prompt and t.usage.input_tokens for t in turns)
    assert any(t.history for t in turns) and any(t.ground_truth for t in turns)
    assert sum(t.ground_truth is not None for t in turns) == stats.with_reference
    assert sum(t.jailbreak_attempt for t in turns) == stats.jailbreak_attempts > 0
    for t in turns:
        own = COLLECTION_OF_ROUTE[t.labels["route"]]
        collections = {document(d.id).collection for d in t.documents if d.id}
        if observer.phase[t.trace_id] == BEFORE:
            assert collections == {own}
        else:
            assert own not in collections

    phases = tally.snapshot()["local_lexical_groundedness"]
    assert phases[BEFORE].evaluations == stats.turns_before_regression
    assert phases[AFTER].evaluations == stats.turns_after_regression
    assert phases[AFTER].defect_rate > phases[BEFORE].defect_rate + 0.4
    assert tally.snapshot()["f1_score"][BEFORE].evaluations + tally.snapshot()["f1_score"][AFTER].evaluations \
        == stats.with_reference


async def test_no_regression_and_an_immediate_stop(tmp_path) -> None:
    stop = asyncio.Event()
    stop.set()
    # Nothing listens on port 9 (discard): with no turn there is nothing to export anyway.
    stats = await run_traffic("http://127.0.0.1:9", rate_per_second=5, stop=stop, regression_at=None, seed=1)
    assert stats.turns == 0 and stats.regression_started_at is None and stats.flushed


async def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rate_per_second"):
        await run_traffic("http://127.0.0.1:9", rate_per_second=0, stop=asyncio.Event(), regression_at=None, seed=1)
