"""Offline eval against the peers' batch runners: rows/s at each one's default concurrency and matched.

``rag-monitor eval`` (the real CLI, a process per run) and the peers' own batch entry points score
the same rows against the scripted judge of ``tests/support/judge_server.py`` (its own process,
200 ms per call, 127.0.0.1 only):

* azure-ai-evaluation ``evaluate()`` with Groundedness/Relevance/Coherence/Fluency evaluators
  (its batch engine: ``max_concurrency`` 10 per evaluator, ``PF_WORKER_COUNT`` overrides) vs ours
  on the same four metrics (``combine_metrics`` on, the default: one call per row);
* tonic-validate ``ValidateScorer.score_responses`` with its six RAG metrics (``parallelism`` 50)
  vs ours on the same six;
* opik ``evaluate_on_dict_items`` with ``AnswerRelevance`` (``scoring_threads`` 16, the same
  engine and default as ``opik.evaluate``'s ``task_threads``) vs ours on ``answer_relevance``.

Per peer and run: the peer at its default, ours at its default (no ``--concurrency``), and ours
"matched" at the peak number of requests the judge saw in flight from the peer. Rates are rows/s
of the scoring call alone (ours: the time ``eval`` prints, which leaves out interpreter start and
file reading; peers: the call, after their imports). The anchor, measured in the same sitting, is
the judge client alone (``judge_throughput.py``'s groundedness level at 64, timed after a warm-up):
``eval`` at 64 in flight (``groundedness``, one call per row, 40 x 64 rows) is reported as a share
of the ideal (64 / latency) and of that anchor, both from the time ``eval`` prints (which includes
starting its judge client and the first connections) and as the judge saw it (first request to
last reply).

    .venv/bin/python benchmarks/eval_peers.py --repeat 3 [--peers-python /tmp/peers-venv/bin/python]

At module level this file imports only the standard library: the peers' venv runs it as their
driver (``--peer-batch``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
THROUGHPUT = REPO / "benchmarks" / "judge_throughput.py"
# The metric set each peer runs, and ours on the same rows.
SETS = {
    "azure": ["groundedness", "relevance", "coherence", "fluency"],
    "tonic": ["answer_similarity", "retrieval_precision", "augmentation_accuracy", "augmentation_precision",
              "answer_consistency", "answer_consistency_binary"],
    "opik": ["answer_relevance"],
}
PEER_DEFAULT_KNOB = {"azure": "max_concurrency 10 per evaluator", "tonic": "parallelism 50",
                     "opik": "scoring_threads 16"}


# --- the judge: judge_throughput's replies, plus Opik's JSON -----------------------------------------


async def serve_judge(latency: float) -> None:
    """``--serve-judge``: print the base URL, serve until stdin closes, then print request stats."""
    sys.path.insert(0, str(REPO))
    from aiohttp import web

    from benchmarks.judge_throughput import judge_behaviour
    from tests.support.judge_server import JudgeServer

    others = judge_behaviour()

    async def behave(server: Any, request: Any, rec: Any) -> Any:
        if not str(rec.body.get("model", "")).startswith("peer:opik"):
            return await others(server, request, rec)
        content = json.dumps({"answer_relevance_score": 0.8, "reason": "scripted"})
        prompt = sum(len(str(m.get("content", ""))) for m in rec.body.get("messages", [])) // 4
        return web.json_response({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": rec.body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}})

    async with JudgeServer(default=behave, latency=latency) as server:
        print(server.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    arrivals = server.arrivals()
    # First arrival to last reply: the run as the judge saw it, without the client's start-up.
    busy = arrivals[-1] - arrivals[0] + latency if arrivals else 0.0
    print(json.dumps({"requests": len(server.requests), "max_in_flight": server.max_in_flight,
                      "judge_seconds": busy}), flush=True)


class Judge:
    """The judge process; ``stop()`` returns ``{"requests", "max_in_flight"}``."""

    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-judge", str(latency)], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def stop(self) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        stats: dict[str, Any] = json.loads(self.proc.stdout.read().strip().splitlines()[-1])
        self.proc.wait(10)
        return stats


# --- peer side (runs in the peers' venv) ---------------------------------------------------------------


def _offline_env(base_url: str) -> None:
    os.environ.update(OPENAI_API_KEY="sk-local-benchmark", OPENAI_BASE_URL=base_url, OPENAI_API_BASE=base_url,
                      TONIC_VALIDATE_DO_NOT_TRACK="true", LITELLM_LOCAL_MODEL_COST_MAP="True",
                      OPIK_TRACK_DISABLE="true", OPIK_USAGE_REPORT_ENABLED="false")


def _azure(rows: list[dict[str, Any]], base_url: str, concurrency: int | None) -> tuple[float, int, int]:
    if concurrency is not None:
        os.environ["PF_WORKER_COUNT"] = str(concurrency)
    import azure.ai.evaluation as az
    config = {"type": "openai", "base_url": base_url, "api_key": "sk-local", "model": "peer:azure:set"}
    evaluators = {m: getattr(az, f"{m.capitalize()}Evaluator")(model_config=config) for m in SETS["azure"]}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.jsonl"
        data.write_text("\n".join(json.dumps({"query": r["question"], "context": r["context"],
                                              "response": r["answer"]}) for r in rows))
        started = time.perf_counter()
        result = az.evaluate(data=str(data), evaluators=evaluators)
        seconds = time.perf_counter() - started
    values = [v for row in result["rows"] for k, v in row.items()
              if k.startswith("outputs.") and k.split(".")[-1] in SETS["azure"]]
    ok = sum(isinstance(v, (int, float)) and v == v for v in values)
    return seconds, ok, len(rows) * len(SETS["azure"]) - ok


def _tonic(rows: list[dict[str, Any]], concurrency: int | None) -> tuple[float, int, int]:
    import tiktoken

    class WordEncoding:  # tiktoken's first use downloads a BPE file; tonic only counts tokens with it
        def encode(self, text: str, **_: Any) -> list[str]:
            return text.split()

    tiktoken.get_encoding = lambda name: WordEncoding()  # type: ignore[assignment]
    tiktoken.encoding_for_model = lambda name: WordEncoding()  # type: ignore[assignment]
    import tonic_validate.metrics as tm
    from tonic_validate import BenchmarkItem, LLMResponse, ValidateScorer
    names = ["AnswerSimilarityMetric", "RetrievalPrecisionMetric", "AugmentationAccuracyMetric",
             "AugmentationPrecisionMetric", "AnswerConsistencyMetric", "AnswerConsistencyBinaryMetric"]
    scorer = ValidateScorer([getattr(tm, n)() for n in names], model_evaluator="peer:tonic:set", quiet=True,
                            max_llm_retries=1, max_parsing_retries=1)
    items = [LLMResponse(llm_answer=r["answer"], llm_context_list=[r["context"]],
                         benchmark_item=BenchmarkItem(question=r["question"], answer=r["ground_truth"])) for r in rows]
    started = time.perf_counter()
    run = scorer.score_responses(items) if concurrency is None else scorer.score_responses(items, parallelism=concurrency)
    seconds = time.perf_counter() - started
    scores = [v for item in run.run_data for v in item.scores.values()]
    ok = sum(v is not None for v in scores)
    return seconds, ok, len(rows) * len(names) - ok


def _opik(rows: list[dict[str, Any]], base_url: str, concurrency: int | None) -> tuple[float, int, int]:
    from opik.evaluation import evaluate_on_dict_items
    from opik.evaluation.metrics import AnswerRelevance
    from opik.evaluation.models import LiteLLMChatModel
    model = LiteLLMChatModel(model_name="openai/peer:opik:answer_relevance", api_base=base_url, track=False)
    metric = AnswerRelevance(model=model, track=False)
    items = [{"input": r["question"], "output": r["answer"], "context": [r["context"]]} for r in rows]
    kwargs = {} if concurrency is None else {"scoring_threads": concurrency}
    started = time.perf_counter()
    result = evaluate_on_dict_items(items, task=lambda item: item, scoring_metrics=[metric], **kwargs)
    seconds = time.perf_counter() - started
    ok = sum(1 for t in result.test_results for s in t.score_results if not s.scoring_failed)
    return seconds, ok, len(rows) - ok


def peer_batch(peer: str, base_url: str, rows_path: str, concurrency: str) -> None:
    """``--peer-batch``: one peer's batch run; prints ``{"seconds", "ok", "errors"}``."""
    _offline_env(base_url)
    rows = [json.loads(line) for line in Path(rows_path).read_text().splitlines()]
    level = None if concurrency == "default" else int(concurrency)
    if peer == "azure":
        seconds, ok, errors = _azure(rows, base_url, level)
    elif peer == "tonic":
        seconds, ok, errors = _tonic(rows, level)
    else:
        seconds, ok, errors = _opik(rows, base_url, level)
    print(json.dumps({"seconds": seconds, "ok": ok, "errors": errors}))


# --- our side and the driver ----------------------------------------------------------------------------


def _rows_file(n: int) -> Path:
    sys.path.insert(0, str(REPO))
    from benchmarks.judge_throughput import SEED_ROW

    # Every text numbered, not only the question: tonic-validate caches identical prompts, and a
    # prompt made of the answer and context alone would otherwise be served from its cache.
    rows = [{k: f"{v} (#{i})" for k, v in SEED_ROW.items()} for i in range(n)]
    handle = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    with handle:
        handle.write("".join(json.dumps(r) + "\n" for r in rows))
    return Path(handle.name)


def ours(rows: Path, metrics: list[str], latency: float, concurrency: int | None) -> dict[str, Any]:
    """``rag-monitor eval`` as a process; rows/s from the elapsed time it prints."""
    judge = Judge(latency)
    out = rows.with_suffix(".out.jsonl")
    args = [sys.executable, "-m", "monitor.cli", "eval", str(rows), "--judge-base-url", judge.base_url,
            "--judge-model", "bench", "--metrics", ",".join(metrics), "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_MONITOR_", "OPENAI_", "AZURE_"))}
    started = time.perf_counter()
    proc = subprocess.run(args + (["--concurrency", str(concurrency)] if concurrency else []), cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    wall = time.perf_counter() - started
    stats = judge.stop()
    found = re.search(r"(\d+) turns in ([\d.]+)s", proc.stdout)
    if proc.returncode or not found:
        raise RuntimeError(f"eval failed ({proc.returncode}): {proc.stderr[-1500:]}")
    turns, seconds = int(found.group(1)), float(found.group(2))
    calls = _judge_calls(proc.stdout)
    scores = [s for line in out.read_text().splitlines() for s in json.loads(line)["scores"]]
    out.unlink()
    return {"rows_per_second": turns / seconds, "seconds": seconds, "process_seconds": wall,
            "ok": sum(s["outcome"] in ("pass", "defect") for s in scores),
            "errors": sum(s["outcome"] not in ("pass", "defect") for s in scores),
            "judge_errors": sum(n for k, n in calls.items() if k != "ok"),
            "requests": stats["requests"], "max_in_flight": stats["max_in_flight"],
            "calls_per_second": stats["requests"] / seconds,
            "judge_side_calls_per_second": stats["requests"] / stats["judge_seconds"]}


def _judge_calls(stdout: str) -> dict[str, int]:
    """``judge calls: ok 2560, server_error 3`` -> ``{"ok": 2560, "server_error": 3}``."""
    line = next((ln for ln in stdout.splitlines() if ln.startswith("judge calls: ")), "")
    return {k: int(n) for k, n in re.findall(r"(\w+) (\d+)", line.removeprefix("judge calls: "))}


def peer(python: str, name: str, rows: Path, latency: float, concurrency: int | None = None) -> dict[str, Any]:
    """One peer batch run in the peers' venv, against a fresh judge process."""
    judge = Judge(latency)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_", "PF_"))}
    proc = subprocess.run([python, __file__, "--peer-batch", name, judge.base_url, str(rows),
                           "default" if concurrency is None else str(concurrency)],
                          capture_output=True, text=True, timeout=1800, env=env, check=False)
    stats = judge.stop()
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        raise RuntimeError(f"{name} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    report: dict[str, Any] = json.loads(lines[-1])
    n = sum(1 for _ in rows.open())
    return {**report, "rows_per_second": n / report["seconds"], "requests": stats["requests"],
            "max_in_flight": stats["max_in_flight"], "calls_per_second": stats["requests"] / report["seconds"]}


def anchor(latency: float, level: int, waves: int) -> dict[str, Any]:
    """The judge client alone at ``level`` (judge_throughput's throughput level), same sitting."""
    sys.path.insert(0, str(REPO))
    from benchmarks.judge_throughput import throughput

    return throughput(latency, [level], waves)[0]


def sitting(args: argparse.Namespace, rows: dict[str, Path], level_rows: Path) -> dict[str, Any]:
    """One run of everything: the anchor, eval at the level, each peer at default vs ours."""
    result: dict[str, Any] = {"uptime": _uptime(), "anchor": anchor(args.latency, args.level, args.waves)}
    at_level = ours(level_rows, ["groundedness"], args.latency, args.level)
    ideal = args.level / args.latency
    result["eval_at_level"] = {**at_level, "of_ideal": at_level["calls_per_second"] / ideal,
                               "of_anchor": at_level["calls_per_second"] / result["anchor"]["per_second"],
                               "judge_side_of_ideal": at_level["judge_side_calls_per_second"] / ideal}
    for name, path in rows.items():
        theirs = peer(args.peers_python, name, path, args.latency)
        default = ours(path, SETS[name], args.latency, None)
        matched = ours(path, SETS[name], args.latency, max(1, theirs["max_in_flight"]))
        result[name] = {"peer_default": theirs, "ours_default": default, "ours_matched": matched}
    return result


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _print(i: int, r: dict[str, Any], level: int) -> None:
    a, e = r["anchor"], r["eval_at_level"]
    print(f"run {i}: {r['uptime']}")
    print(f"  judge client alone at {level}: {a['per_second']:.1f} calls/s ({a['efficiency']:.1%} of ideal); "
          f"eval end to end at {level}: {e['calls_per_second']:.1f} calls/s = {e['of_ideal']:.1%} of ideal, "
          f"{e['of_anchor']:.1%} of the anchor; as the judge saw it (first request to last reply) "
          f"{e['judge_side_calls_per_second']:.1f} calls/s = {e['judge_side_of_ideal']:.1%} of ideal "
          f"({e['errors']} errors, {e['max_in_flight']} max in flight)")
    for name in SETS:
        if name not in r:
            continue
        p, d, m = r[name]["peer_default"], r[name]["ours_default"], r[name]["ours_matched"]
        print(f"  {name:6} peer default ({PEER_DEFAULT_KNOB[name]}), {p['ok'] + p['errors']} scores: "
              f"{p['rows_per_second']:7.1f} rows/s, "
              f"{p['max_in_flight']:3d} in flight, {p['requests']} calls, {p['errors']} errors")
        for label, o in (("ours default:", d), ("ours matched:", m)):
            print(f"  {'':6} {label:14} {o['rows_per_second']:7.1f} rows/s, {o['max_in_flight']:3d} in flight, "
                  f"{o['requests']} calls, {o['errors']} errors = {o['rows_per_second'] / p['rows_per_second']:.2f}x")


def main(argv: list[str] | None = None) -> None:
    """Run the comparison (or, with ``--peer-batch`` / ``--serve-judge``, one side of it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-batch", nargs=4, metavar=("PEER", "BASE_URL", "ROWS", "CONCURRENCY"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--serve-judge", type=float, metavar="LATENCY", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.2, help="judge latency in seconds")
    parser.add_argument("--level", type=int, default=64, help="concurrency of the end-to-end efficiency run")
    parser.add_argument("--waves", type=int, default=40, help="rows of that run = waves x level")
    parser.add_argument("--rows", default="azure=160,tonic=320,opik=640",
                        help="peers to compare and rows per run (sized so the slowest run lasts about a minute)")
    parser.add_argument("--peers-python", default="/tmp/peers-venv/bin/python")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    if args.peer_batch:
        peer_batch(*args.peer_batch)
        return
    if args.serve_judge is not None:
        asyncio.run(serve_judge(args.serve_judge))
        return
    counts = {name: int(n) for name, _, n in (item.partition("=") for item in args.rows.split(","))}
    rows, level_rows = {name: _rows_file(n) for name, n in counts.items()}, _rows_file(args.waves * args.level)
    runs = []
    try:
        for i in range(1, args.repeat + 1):
            runs.append(sitting(args, rows, level_rows))
            _print(i, runs[-1], args.level)
    finally:
        for path in [*rows.values(), level_rows]:
            path.unlink()
        if args.json:
            args.json.write_text(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
