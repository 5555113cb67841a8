"""Turn-level reads of the real SQLite store: worst turns (one per turn, all scores, documents,
metric filter), causes of skips and errors, and the upgrade of a version-2 file."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from exporters.store_schema import SCHEMA_VERSION
from exporters.result_store import ResultStore
from exporters.turn_queries import MAX_DOCUMENT_CHARS, MAX_STORED_DOCUMENTS
from monitor.model import Document, ScoreStatus
from tests.exporters.results import WriterTelemetry, result, score
from tests.exporters.test_result_store import Clock, config, stop, until

GROUNDED = (1.0, 5.0)
SEVERITY = (0.0, 7.0)


def _docs(n: int) -> tuple[Document, ...]:
    return tuple(Document(f"kb-{i}", f"chunk {i} " + "x" * 2000, 0.9 - i / 100, f"Title {i}") for i in range(n))


async def _filled(tmp_path: Path) -> tuple[ResultStore, list[str]]:
    clock = Clock(1_700_000_000.0)
    store = ResultStore(config(tmp_path / "r.sqlite3"), WriterTelemetry(), clock)
    await store.start()
    rows = [
        # A turn failing three metrics: one entry, not three.
        result(score("groundedness", 1.0, defect=True, reason="invented a policy"),
               score("relevance", 2.0, defect=True, reason="off topic"),
               score("violence", 6.0, defect=True, scale=SEVERITY, label="High"),
               score("fluency", 5.0, defect=False), documents=_docs(12), question="q-bad"),
        # Only a mild groundedness defect.
        result(score("groundedness", 2.0, defect=True), score("violence", 0.0, defect=False, scale=SEVERITY),
               question="q-mild"),
        # Clean, but f1 skipped and a judge error.
        result(score("groundedness", 5.0, defect=False),
               score("f1_score", None, status=ScoreStatus.SKIPPED, scale=(0.0, 1.0), reason="no ground truth"),
               score("relevance", None, status=ScoreStatus.ERROR, reason="judge timed out after 30 s"),
               question="q-clean"),
        result(score("f1_score", None, status=ScoreStatus.SKIPPED, scale=(0.0, 1.0), reason="no ground truth"),
               question="q-skip"),
    ]
    for r in rows:
        store.consume_result(r)
    await until(lambda: _count(store, 8))
    return store, [r.turn.trace_id for r in rows]


async def _count(store: ResultStore, n: int) -> bool:
    return await store.count() >= n


async def test_worst_turns_are_one_entry_per_turn_with_every_score_and_documents(tmp_path: Path) -> None:
    store, ids = await _filled(tmp_path)
    try:
        turns = await store.worst_turns(since=0, limit=10)
        assert [t.trace_id for t in turns] == [ids[0], ids[1], ids[2]]  # q-skip has no scored evaluation
        bad = turns[0]
        assert [s.metric for s in bad.scores] == ["groundedness", "violence", "relevance", "fluency"]
        assert [s.outcome for s in bad.scores][:3] == ["defect"] * 3
        assert bad.scores[0].reason == "invented a policy" and bad.scores[1].label == "High"
        assert len(bad.documents) == MAX_STORED_DOCUMENTS
        first = bad.documents[0]
        assert (first.id, first.title, first.score) == ("kb-0", "Title 0", 0.9)
        assert first.content is not None and len(first.content) == MAX_DOCUMENT_CHARS and first.content.endswith("…")
        assert turns[2].documents == ()
    finally:
        await stop(store)


async def test_metric_filter_ranks_by_that_metric_only(tmp_path: Path) -> None:
    store, ids = await _filled(tmp_path)
    try:
        violence = await store.worst_turns(since=0, metric="violence", limit=10)
        # Ranked by violence alone (q-bad severity 6 first, q-mild 0); each still lists all its scores.
        assert [t.trace_id for t in violence] == [ids[0], ids[1]]
        assert {s.metric for s in violence[1].scores} == {"groundedness", "violence"}
        assert await store.worst_turns(since=0, metric="coherence") == []
        assert len(await store.worst_turns(since=0, limit=1)) == 1
        assert await store.worst_turns(since=1_700_000_001.0) == []
    finally:
        await stop(store)


async def test_outcome_reasons_group_skips_by_reason_and_errors_by_type(tmp_path: Path) -> None:
    store, _ = await _filled(tmp_path)
    try:
        reasons = await store.outcome_reasons(since=0)
        found = {(r.metric, r.outcome, r.key): (r.count, r.example) for r in reasons}
        assert found == {("f1_score", "skipped", "no ground truth"): (2, "no ground truth"),
                         ("relevance", "error", "judge timed out after 30 s"): (1, "judge timed out after 30 s")}
        assert reasons[0].count == 2  # most first
    finally:
        await stop(store)


async def test_a_version_2_file_gains_the_documents_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    store = ResultStore(config(path), WriterTelemetry())
    await store.start()
    await stop(store)
    with closing(sqlite3.connect(path)) as conn:  # make it look like the previous release's file
        conn.execute("ALTER TABLE results DROP COLUMN documents")
        conn.execute("PRAGMA user_version=2")
        conn.commit()
    store = ResultStore(config(path), WriterTelemetry())
    await store.start()
    try:
        store.consume_result(result(score("groundedness", 1.0, defect=True), documents=_docs(1)))
        await until(lambda: _count(store, 1))
        (turn,) = await store.worst_turns(since=0)
        assert turn.documents[0].id == "kb-0"
    finally:
        await stop(store)
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
