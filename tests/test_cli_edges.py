"""The command-line edges a new user trips on (issue 26), each with the message it now gives:
``inspect`` on positional files naming file and format in every error; ``validate`` reporting
every error in one run with file, line, value and did-you-mean; ``eval`` saying why a metric
was skipped, refusing a requested metric it cannot run, catching a misspelt input column and
sizing its progress line; and the Python API's matching edges."""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from monitor.cli import main
from monitor.model import Score, ScoreStatus
from monitor.offline.report import render_table, summarise

CAPTURES = Path(__file__).parent / "testdata" / "captures"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={"RAG_MONITOR_CONFIG": None})
    return result.exit_code, result.output


# --- inspect ---------------------------------------------------------------------------------------


def test_inspect_without_a_file_asks_for_a_positional_file() -> None:
    code, out = _invoke("inspect")
    assert code == 2
    assert "give at least one FILE" in out and "--traces" not in out


def test_inspect_takes_files_positionally() -> None:
    body = next(CAPTURES.rglob("traces-*"))
    code, out = _invoke("inspect", str(body))
    assert code in (0, 1), out  # a turn found, or a capture whose turn needs its logs
    assert "Traceback" not in out


@pytest.mark.parametrize(("content", "message"), [
    (b"", "the file is empty; expected a saved OTLP trace export"),
    (b"   \n", "the file is empty"),
    (b"garbage\n", "neither OTLP/JSON (it does not start with '{') nor an OTLP protobuf trace export"),
    (b'{"resourceSpans": [', "not a valid OTLP/JSON trace export"),
    (b"{}", "read as OTLP/JSON but it holds no spans"),
    (gzip.compress(b"garbage"), "nor an OTLP protobuf trace export"),
])
def test_inspect_errors_name_the_file_and_the_format(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "saved.bin"
    path.write_bytes(content)
    code, out = _invoke("inspect", str(path))
    assert code == 2, out
    assert f"rag-monitor inspect: {path}: " in out and message in out
    assert "0 of 0 traces" not in out


def test_inspect_names_a_missing_file(tmp_path: Path) -> None:
    code, out = _invoke("inspect", str(tmp_path / "nope.pb"))
    assert code == 2 and f"{tmp_path / 'nope.pb'}: cannot read" in out


# --- validate --------------------------------------------------------------------------------------

BAD = """\
shutdown_deadline_seconds: thirty
sampling:
  policies:
    - type: probabilistc
      rate: 0.5
evaluation:
  workers: lots
  metrics: [groundednes, coherence, f1_scor]
judge:
  api_key: sk-secret-123
  timeout_seconds: abc
  max_retries: -1
exporters:
  store:
    url: 12
"""


def test_validate_reports_every_error_in_one_run_with_file_line_value_and_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    code, out = _invoke("validate", "-c", str(path))
    assert code == 2
    lines = out.splitlines()
    assert lines[0] == "rag-monitor: invalid configuration (8 errors):"

    def line_of(key: str) -> str:
        return next(ln for ln in lines if f": {key}: " in ln)

    assert line_of("shutdown_deadline_seconds") == (
        f"  {path}:1: shutdown_deadline_seconds: Input should be a valid number, unable to parse string "
        "as a number (got 'thirty')")
    assert line_of("judge.max_retries") == f"  {path}:12: judge.max_retries: Input should be greater than or equal to 0 (got -1)"
    assert "(got 'lots')" in line_of("evaluation.workers")
    # The policy type and both metric ids are suggested, though the evaluation section has another error.
    assert "unknown type 'probabilistc'; did you mean 'probabilistic'?" in line_of("sampling.policies.0")
    assert line_of("sampling.policies.0").startswith(f"  {path}:4: ")
    assert "unknown metric id 'groundednes'; did you mean 'groundedness'?" in line_of("evaluation.metrics.0")
    assert "did you mean 'f1_score'?" in line_of("evaluation.metrics.2")
    assert "sk-secret-123" not in out


def test_validate_never_echoes_a_secret(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("judge:\n  api_key: [sk-secret-123]\nexporters:\n  store:\n    url: 12345\n")
    code, out = _invoke("validate", "-c", str(path))
    assert code == 2 and "judge.api_key" in out and "exporters.store.url" in out
    assert "sk-secret-123" not in out and "12345" not in out


def test_validate_names_the_file_and_line_of_a_yaml_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("judge:\n  model: [gpt,\n  base_url: x\n")
    code, out = _invoke("validate", "-c", str(path))
    assert code == 2
    assert f"config file {path} is not valid YAML: {path}, line " in out
    assert "<unicode string>" not in out


def test_validate_prints_a_short_summary_and_show_the_full_config(tmp_path: Path) -> None:
    code, out = _invoke("validate")
    assert code == 0, out
    assert out.splitlines()[0] == "configuration is valid (embedded defaults)"
    assert any(ln.startswith("  judge: off") for ln in out.splitlines())
    assert any(ln.startswith("  sampling: ") for ln in out.splitlines())
    assert len(out.splitlines()) <= 10
    code, full = _invoke("validate", "--show")
    assert code == 0 and '"receivers"' in full and len(full.splitlines()) > 50


# --- eval --------------------------------------------------------------------------------------------


def _rows(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text(textwrap.dedent(text))
    return path


def test_eval_refuses_a_requested_metric_it_cannot_run_and_names_the_fix(tmp_path: Path) -> None:
    data = _rows(tmp_path, '{"question": "q", "answer": "a", "ground_truth": "a"}\n')
    code, out = _invoke("eval", str(data), "--metrics", "f1_score,groundedness")
    assert code == 2
    assert "--metrics: groundedness needs the judge, which is off" in out
    assert "--judge-base-url" in out and "--allow-missing" in out


def test_allow_missing_runs_what_can_run_and_says_what_did_not(tmp_path: Path) -> None:
    data = _rows(tmp_path, '{"question": "q", "answer": "five days", "ground_truth": "five days"}\n')
    code, out = _invoke("eval", str(data), "--metrics", "f1_score,groundedness", "--allow-missing")
    assert code == 0, out
    assert "judge tier off" in out and "not run: groundedness" in out
    assert any(ln.startswith("f1_score ") for ln in out.splitlines())


def test_eval_says_why_a_metric_was_skipped(tmp_path: Path) -> None:
    data = _rows(tmp_path, '{"question": "q", "answer": "a"}\n{"question": "q", "answer": "b", "labels": ["x"]}\n')
    code, out = _invoke("eval", str(data), "--metrics", "f1_score")
    assert code == 0, out
    assert "skipped in f1_score: 2 × no ground truth" in out
    assert "columns that are not inputs, not read: labels (1 rows)" in out
    assert "evaluating 2 turns (2 at once)" in out


def test_a_misspelt_input_column_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    data = _rows(tmp_path, '{"question": "q", "answer": "a"}\n{"question": "q", "answr": "a"}\n')
    code, out = _invoke("eval", str(data))
    assert code == 2
    assert f"{data}:2: unknown column 'answr'; did you mean 'answer'?" in out


def test_columns_that_are_not_inputs_stay_allowed() -> None:
    from monitor.offline.rows import check_columns, parse_row

    row = {"id": "r1", "question": "q", "answer": "a", "labels": ["x"], "metadata": {"k": 1},
           "question_id": 7, "answer_id": 8, "category": "billing"}
    assert parse_row(row, 1).row_id == "r1"
    check_columns(row, {"question", "answer", "id"})


def test_the_summary_says_why_a_metric_was_skipped() -> None:
    scores = [Score("f1_score", None, (0.0, 1.0), status=ScoreStatus.SKIPPED, reason="no ground truth")] * 3
    table = render_table(summarise([scores], ["f1_score"]))
    assert "skipped in f1_score: 3 × no ground truth" in table


def test_the_progress_line_is_sized_to_the_work() -> None:
    from monitor.offline.evaluate import progress_label

    assert progress_label(3, 64) == "evaluating 3 turns (3 at once)"
    assert progress_label(1, 64) == "evaluating 1 turn"
    assert progress_label(200, 64) == "evaluating 200 turns (64 at once)"


# --- the Python API -------------------------------------------------------------------------------


def test_the_scorer_rejects_a_misspelt_column_and_allows_the_others() -> None:
    from rag_monitor import F1Score, Scorer

    with pytest.raises(ValueError, match=r"rows\[0\]: unknown column 'answr'; did you mean 'answer'\?"):
        Scorer([F1Score()]).score_many([{"question": "q", "answr": "a"}], progress=False)
    (row,) = Scorer([F1Score()]).score_many(
        [{"question": "q", "answer": "five days", "ground_truth": "five days", "labels": ["x"], "metadata": {}}], progress=False)
    assert row["f1_score"].value == 1.0


def test_raise_for_error_raises_on_error_and_returns_the_result_otherwise() -> None:
    from rag_monitor import MetricError, MetricResult

    ok = MetricResult("f1_score", 1.0, (0.0, 1.0), "ok", True)
    assert ok.raise_for_error() is ok
    failed = MetricResult("groundedness", None, (1.0, 5.0), "error", None, reason="connection refused",
                          error_type="connection_error")
    with pytest.raises(MetricError, match=r"groundedness: error \(connection_error\): connection refused") as info:
        failed.raise_for_error()
    assert info.value.result is failed
    skipped = MetricResult("f1_score", None, (0.0, 1.0), "skipped", None, reason="no ground truth")
    assert skipped.raise_for_error() is skipped
    with pytest.raises(MetricError, match="no ground truth"):
        skipped.raise_for_error(skipped=True)


def test_a_judge_left_open_closes_at_exit_without_a_warning() -> None:
    script = textwrap.dedent("""
        import asyncio, gc, threading
        from rag_monitor import Groundedness, Judge
        from tests.support.judge_server import JudgeServer, schema_reply

        loop = asyncio.new_event_loop()
        server = JudgeServer(default=schema_reply({"score": 4, "reason": "supported"}))
        ready = threading.Event()
        def serve():
            asyncio.set_event_loop(loop)
            loop.run_until_complete(server.__aenter__())
            ready.set()
            loop.run_forever()
        threading.Thread(target=serve, daemon=True).start()
        ready.wait()
        def dropped():  # a judge made for one call and never closed, then garbage-collected
            judge = Judge(base_url=server.base_url, model="judge-model", api_key="sk-test")
            return Groundedness(judge=judge).score(question="q?", context=["a"], answer="a").status

        print(dropped())
        gc.collect()
        judge = Judge(base_url=server.base_url, model="judge-model", api_key="sk-test")
        result = Groundedness(judge=judge).score(question="q?", context=["a"], answer="a")
        print(result.status)
        # no judge.close(): the pool is closed when the interpreter exits
    """)
    proc = subprocess.run([sys.executable, "-W", "error", "-c", script],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok", "ok"]
    assert "Unclosed" not in proc.stderr and proc.stderr.strip() == "", proc.stderr


def test_eval_summary_counts_refusals_apart_from_skips() -> None:
    from monitor.model import Score, ScoreStatus
    from monitor.offline.report import render_table, summarise
    refused = Score("violence", None, (0.0, 7.0), status=ScoreStatus.REFUSED, reason="content filter")
    summaries = summarise([[refused], [refused]])
    assert (summaries["violence"].refused, summaries["violence"].skipped) == (2, 0)
    assert "refused in violence: 2 (the judge refused or a content filter blocked the call" in render_table(summaries)
