"""The verdict join on its own: weighting by inclusion probabilities, the bounded pending set,
idempotency without a store, judge-model labels, and the store's reads on a real SQLite file."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from exporters.store_schema import MIGRATIONS, SCHEMA_VERSION
from monitor.evaluation.config import EvaluationConfig
from monitor.feedback.join import MAX_JUDGE_MODELS, VerdictJoin
from monitor.feedback.metrics import (AGREEMENT_TOTAL, HUMAN_VERDICTS, HUMAN_VERDICTS_DROPPED, AgreementBoard,
                                      ScoredPair, summarize)
from monitor.feedback.store import SqliteVerdicts
from monitor.feedback.verdicts import defect_rules, make_verdict
from monitor.model import EvaluationResult, Score, Turn
from monitor.telemetry import CountingTelemetry

RULES = defect_rules(EvaluationConfig.model_validate({"metrics": ["coherence", "violence"]}))
MODELS = {"coherence": "gpt-judge", "violence": "gpt-judge"}


def tid(i: int) -> str:
    return f"{i + 1:032x}"


def verdict(i: int, v: str = "pass", reviewer: str = "r", metric: str = "coherence"):
    return make_verdict(RULES, trace_id=tid(i), metric=metric, verdict=v, reviewer=reviewer, source="api", at=1.0)


def result(i: int, value: float, *, model: str | None = None) -> EvaluationResult:
    details = {"judge_model": model} if model else {}
    return EvaluationResult(Turn(tid(i), f"c{i}", "q", "a"),
                            (Score("coherence", value, (1.0, 5.0), defect=value < 3, details=details),))


class Design:
    """Draws every pair; judge defects with probability 0.5, passes with 0.1."""

    def inclusion_probability(self, trace_id: str, metric: str, judge_verdict: str | None) -> float | None:
        return {"defect": 0.5, "pass": 0.1}.get(judge_verdict or "")


def join(**kwargs) -> tuple[VerdictJoin, AgreementBoard, CountingTelemetry]:
    board, telemetry = AgreementBoard(), CountingTelemetry()
    return VerdictJoin(RULES, MODELS, board, telemetry, **kwargs), board, telemetry


async def test_the_rate_is_weighted_back_by_inclusion_probabilities() -> None:
    j, board, telemetry = join(design=Design())
    await j.start()
    try:
        # Judged: 2 defects (p=0.5, weight 2) and 1 pass (p=0.1, weight 10). People agree on the
        # pass and on one defect: weighted agreement (10 + 2) / (10 + 2 + 2) = 6/7, not 2/3.
        for i, value in enumerate((1.0, 2.0, 5.0)):
            j.consume_result(result(i, value))
        states = [await j.submit(verdict(i, v)) for i, v in enumerate(("defect", "pass", "pass"))]
        assert [s.state for s in states] == ["joined"] * 3
        assert [s.inclusion_probability for s in states] == [0.5, 0.5, 0.1]
        await j.refresh()
    finally:
        await j.shutdown(asyncio.get_running_loop().time() + 1)
    entry = board.snapshot().metrics["coherence"]
    assert (entry.overall.n, entry.overall.agree) == (3, 2)
    assert entry.overall.rate == pytest.approx(12 / 14)
    assert telemetry.value(AGREEMENT_TOTAL, agreement="agree") == 2
    assert telemetry.value(AGREEMENT_TOTAL, agreement="disagree", metric="coherence", judge_model="gpt-judge") == 1


async def test_pending_verdicts_are_bounded_and_a_repeat_counts_once_without_a_store() -> None:
    j, _, telemetry = join(max_pending=2)
    await j.start()
    try:
        for i in range(3):
            assert (await j.submit(verdict(i))).state == "pending"
        assert j.pending == 2
        assert telemetry.value(HUMAN_VERDICTS_DROPPED, reason="pending_full") == 1
        assert (await j.submit(verdict(2))).state == "duplicate"
        # The oldest was dropped: its score arriving later joins nothing; the others join.
        for i in range(3):
            j.consume_result(result(i, 4.0))
        assert telemetry.value(AGREEMENT_TOTAL, agreement="agree") == 2
        assert (await j.submit(verdict(1))).state == "duplicate"
        assert (await j.submit(verdict(1, reviewer="someone else"))).state == "joined"
        assert telemetry.value(HUMAN_VERDICTS, state="duplicate") == 2
    finally:
        await j.shutdown(asyncio.get_running_loop().time() + 1)


async def test_the_judge_model_label_is_the_stamped_one_and_bounded() -> None:
    j, board, telemetry = join()
    await j.start()
    try:
        j.consume_result(result(0, 4.0))  # no stamp: the configured model
        await j.submit(verdict(0))
        for i in range(1, MAX_JUDGE_MODELS + 3):
            j.consume_result(result(i, 4.0, model=f"model-{i}"))
            await j.submit(verdict(i))
        await j.refresh()
    finally:
        await j.shutdown(asyncio.get_running_loop().time() + 1)
    models = board.snapshot().metrics["coherence"].judge_models
    assert models["gpt-judge"].n == 1
    assert models["other"].n == 2
    assert len(models) == MAX_JUDGE_MODELS + 2
    assert telemetry.value(AGREEMENT_TOTAL, judge_model="model-1") == 1


def test_a_severity_metric_puts_values_on_its_defect_level() -> None:
    rule = RULES["violence"]  # 0-7, defect at severity >= 4 by default
    assert [rule.side(None, v) for v in (0, 3, 4, 7)] == ["pass", "pass", "defect", "defect"]
    coherence = RULES["coherence"]  # 1-5, defect below 3
    assert [coherence.side(None, v) for v in (1, 2.9, 3, 5)] == ["defect", "defect", "pass", "pass"]
    assert coherence.side("defect", None) == "defect"


def test_summarize_with_no_pairs_is_empty_and_nan_free_in_the_document() -> None:
    from monitor.feedback.metrics import snapshot_document

    assert snapshot_document(summarize([], at=5.0)) == {"metrics": {}, "at": 5.0}
    one = summarize([ScoredPair("coherence", "m", "pass", "defect")], at=5.0)
    doc = snapshot_document(one)["metrics"]["coherence"]
    assert (doc["n"], doc["agree"], doc["rate"]) == (1, 0, 0.0) and doc["upper"] > 0


async def test_sqlite_store_saves_once_and_joins_by_trace_and_metric(tmp_path) -> None:
    path = tmp_path / "store.sqlite3"
    with sqlite3.connect(path) as conn:  # the result store's own migration creates the table
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("INSERT INTO results (timestamp, trace_id, conversation_id, service, labels, weight, "
                     "sampling_policy, question, answer, turn_start_unix_nano) "
                     f"VALUES (1, '{tid(0)}', 'c', 's', '{{}}', 1, 'p', 'q', 'a', 0)")
        conn.execute("INSERT INTO scores (result_id, timestamp, metric, outcome, value, scale_low, scale_high, status, "
                     "judge_model) VALUES (1, 1, 'coherence', 'defect', 2, 1, 5, 'ok', 'served-model')")
    store = SqliteVerdicts(str(path))
    await store.start()
    try:
        assert await store.save(verdict(0, "pass"), 0.5) is True
        assert await store.save(verdict(0, "defect"), 0.5) is False  # same reviewer, trace and metric
        assert await store.save(verdict(1, "pass"), None) is True  # not judged (yet)
        judged = await store.judged([(tid(0), "coherence"), (tid(1), "coherence"), (tid(0), "violence")])
        assert list(judged) == [(tid(0), "coherence")]
        assert (judged[(tid(0), "coherence")].outcome, judged[(tid(0), "coherence")].judge_model) == \
               ("defect", "served-model")
        rows = await store.joined(since=0.0)
        assert [(r.trace_id, r.verdict, r.inclusion_probability, r.judge_outcome) for r in rows] == [
            (tid(0), "pass", 0.5, "defect")]
        assert await store.reviewed([(tid(0), "coherence"), (tid(0), "violence"), (tid(1), "coherence")]) == {
            (tid(0), "coherence"), (tid(1), "coherence")}
        assert await store.forget_before(2.0) == 2
    finally:
        await store.shutdown(asyncio.get_running_loop().time() + 1)
