"""The demo's before/after tally, the table it draws and the final summary line."""

from __future__ import annotations

import io
import json
import math

from exporters.rolling import RollingStats
from monitor.demo.live_table import DemoSnapshot, TerminalView, render_table
from monitor.demo.phases import PhaseStats, PhaseTally
from monitor.demo.rag_app import HandledTurn
from monitor.demo.report import FINAL_PREFIX, RunFacts, final_document, final_line
from monitor.demo.traffic import AFTER, BEFORE, SentTurn
from monitor.model import EvaluationResult, Score, ScoreStatus, Turn


def sent(trace_id: str, phase: str) -> SentTurn:
    return SentTurn(HandledTurn(trace_id, "c1", "/chat/billing", "m", "answer", False, False, True, 0.0), phase)


def result(trace_id: str, *scores: Score) -> EvaluationResult:
    return EvaluationResult(Turn(trace_id=trace_id, conversation_id="c1", question="q", answer="a"), scores)


def ok(metric: str, value: float, defect: bool) -> Score:
    return Score(metric, value, (0.0, 1.0), defect=defect)


async def test_tally_counts_per_phase_and_knows_when_drained() -> None:
    tally = PhaseTally()
    assert await tally.wait_drained(0) == 0
    tally.turn_sent(sent("t1", BEFORE))
    tally.turn_sent(sent("t2", AFTER))
    tally.turn_sent(sent("t3", AFTER))
    assert await tally.wait_drained(0) == 3
    tally.consume_result(result("t1", ok("g", 0.9, False)))
    tally.consume_result(result("t2", ok("g", 0.1, True), Score("f1", None, (0.0, 1.0), status=ScoreStatus.SKIPPED)))
    tally.consume_result(result("other-app", ok("g", 0.0, True)))  # not ours: ignored
    assert tally.outstanding == 1
    tally.consume_result(result("t3", ok("g", 0.3, True)))
    assert await tally.wait_drained(0) == 0
    snap = tally.snapshot()
    assert snap["g"][BEFORE].evaluations == 1 and snap["g"][BEFORE].defect_rate == 0.0
    assert snap["g"][AFTER].evaluations == 2 and snap["g"][AFTER].defects == 2
    assert math.isclose(snap["g"][AFTER].mean, 0.2)
    assert snap["f1"][AFTER].skipped == 1 and math.isnan(snap["f1"][AFTER].defect_rate)
    assert snap["f1"][BEFORE].evaluations == 0
    assert tally.evaluated == 3 and tally.sent == 3


def test_tally_bounds_what_it_waits_for() -> None:
    tally = PhaseTally(max_outstanding=2)
    for i in range(5):
        tally.turn_sent(sent(f"t{i}", BEFORE))
    assert tally.outstanding == 2 and tally.forgotten == 3
    tally.consume_result(result("t0", ok("g", 1.0, False)))  # forgotten: counts nowhere
    assert tally.snapshot() == {}


def _snapshot(now: float = 1000.0) -> tuple[DemoSnapshot, RollingStats]:
    rolling = RollingStats((("5m", 300.0), ("1h", 3600.0)), clock=lambda: now)
    tally = PhaseTally()
    for i, (phase, value) in enumerate([(BEFORE, 0.9), (BEFORE, 0.8), (AFTER, 0.1), (AFTER, 0.7)]):
        tally.turn_sent(sent(f"t{i}", phase))
        r = result(f"t{i}", ok("local_lexical_groundedness", value, value < 0.5))
        rolling.consume_result(r)
        tally.consume_result(r)
    snap = DemoSnapshot(12.0, 4, 4, 10.0, True, "5m", rolling.summary(), tally.snapshot())
    return snap, rolling


def test_table_shows_rates_bounds_phases_and_the_regression() -> None:
    snap, _ = _snapshot()
    lines = render_table(snap)
    assert "REGRESSION since +10s" in lines[0]
    row = next(line for line in lines if line.startswith("local_lexical_groundedness"))
    assert " 4 " in row and "25.0% [" in row and "0.625" in row
    assert "0.0% n=2" in row and "50.0% n=2" in row and "+50.0pt" in row
    assert all(line.isascii() for line in lines)
    before = render_table(DemoSnapshot(3.0, 1, 0, 10.0, False, "5m", {}, {}))
    assert "regression at +10s (in 7s)" in before[0] and "(no evaluation yet)" in before


def test_view_redraws_in_place_on_a_terminal_and_appends_otherwise() -> None:
    tty, plain = io.StringIO(), io.StringIO()
    live, appended = TerminalView(tty, live=True), TerminalView(plain, live=False)
    for view in (live, appended):
        view.show(["a", "b"])
        view.show(["c", "d", "e"])
        view.message(["note"])
        view.show(["f"])
    assert tty.getvalue() == "a\nb\n\x1b[2F\x1b[Jc\nd\ne\nnote\nf\n"
    assert plain.getvalue() == "a\nb\n\nc\nd\ne\n\nnote\nf\n\n"


def test_final_line_is_json_with_api_field_names_and_nulls_for_no_data() -> None:
    snap, rolling = _snapshot()
    facts = RunFacts(30.0, False, 10.0, 1.0, 4, 0, "http://127.0.0.1:1/", "http://127.0.0.1:2")
    phases = {**snap.phases, "f1_score": {BEFORE: PhaseStats(), AFTER: PhaseStats(skipped=4)}}
    line = final_line(final_document(facts, rolling.windows, snap.summary, phases, None))
    assert line.startswith(FINAL_PREFIX)
    doc = json.loads(line[len(FINAL_PREFIX):])
    w = doc["metrics"]["local_lexical_groundedness"]["windows"]["5m"]
    assert set(w) == {"seconds", "evaluations", "defects", "errors", "skipped", "refused", "weight",
                      "defect_weight", "effective_n", "defect_rate", "lower", "upper", "mean"}
    assert (w["evaluations"], w["defects"], w["defect_rate"]) == (4, 1, 0.25)
    assert doc["metrics"]["local_lexical_groundedness"]["phases"][AFTER]["defect_rate"] == 0.5
    f1 = doc["metrics"]["f1_score"]
    assert f1["windows"] == {} and f1["phases"][AFTER] == {
        "evaluations": 0, "defects": 0, "errors": 0, "skipped": 4, "defect_rate": None, "mean": None}
    assert doc["windows"] == [{"name": "5m", "seconds": 300.0}, {"name": "1h", "seconds": 3600.0}]
