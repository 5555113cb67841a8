"""Judge-tier benchmark: throughput vs concurrency, and prompt tokens per metric vs the peers.

Everything talks to the scripted OpenAI-compatible judge in ``tests/support/judge_server.py`` on
127.0.0.1 (fixed latency, schema-valid replies); nothing needs the internet. Run it inside a
network namespace with only loopback to prove that (see ``benchmarks/README-judge.md``)::

    .venv/bin/python benchmarks/judge_throughput.py [--peers-python /tmp/peers-venv/bin/python]

1. Throughput: turns evaluated per second through the real ``JudgeClient`` and the real
   ``groundedness`` evaluator (one judge call per turn) at ``max_concurrency`` 1, 16, 64 with a
   200 ms judge; the ideal is concurrency / latency.
2. Tokens per row per metric (our usage, which the judge server computes as characters / 4 of
   the messages and ``response_format``), for the Azure set, Opik's answer_relevance, the Tonic
   metrics and the combined call (``combine_metrics``).
3. The same rows through ``azure-ai-evaluation`` and ``tonic-validate`` installed in a separate
   venv, pointed at the same judge; their prompt tokens are measured from the requests the server
   receives (characters / 4, same rule). This file is also their driver (``--peer-driver``):
   at module level it imports only the standard library, so the peers' venv can run it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OPIK_SEED = Path("/work/shared/seeds/003_de0133483c27e22d.txt")
# The Azure seed's question/answer example row; rows differ only by a number in the question.
SEED_ROW = {
    "question": "Which tent is the most waterproof?",
    "context": "From our product list, the Alpine Explorer tent is the most waterproof. "
               "The Adventure Dining Table has higher weight.",
    "answer": "The Alpine Explorer Tent is the most waterproof.",
    "ground_truth": "The Alpine Explorer Tent has the highest rainfly waterproof rating at 3000m",
}
AZURE_SET = ["groundedness", "relevance", "coherence", "fluency", "similarity", "retrieval_score",
             "hate_unfairness", "sexual", "violence", "self_harm", "jailbreak"]
TONIC_SET = ["answer_similarity", "retrieval_precision", "augmentation_accuracy", "augmentation_precision",
             "answer_consistency", "answer_consistency_binary"]
COMBINED = ["groundedness", "relevance", "coherence", "fluency", "hate_unfairness", "sexual", "violence", "self_harm"]
# Our metric -> the peer evaluator run on the same rows (None: the peer has no runnable equivalent).
AZURE_PEER = {"groundedness": "GroundednessEvaluator", "relevance": "RelevanceEvaluator",
              "coherence": "CoherenceEvaluator", "fluency": "FluencyEvaluator",
              "similarity": "SimilarityEvaluator", "retrieval_score": "RetrievalEvaluator"}
TONIC_PEER = {"answer_similarity": "AnswerSimilarityMetric", "retrieval_precision": "RetrievalPrecisionMetric",
              "augmentation_accuracy": "AugmentationAccuracyMetric",
              "augmentation_precision": "AugmentationPrecisionMetric",
              "answer_consistency": "AnswerConsistencyMetric",
              "answer_consistency_binary": "AnswerConsistencyBinaryMetric"}
REFERENCE = {"azure": 2100, "azure_retrieval": 4300, "opik": 1500, "tonic": 500}


# Extra retrieved chunks for --chunks > 1 (text from the seed's conversation example).
EXTRA_CHUNK = ("It's essential to check local regulations before using the EcoFire Camping Stove, as some "
               "areas may have restrictions on open fires or require a specific type of stove. To clean the "
               "EcoFire Camping Stove, allow it to cool completely, then wipe away any ash or debris.")


def bench_rows(n: int, chunks: int = 1) -> list[dict[str, Any]]:
    """``n`` copies of the seed row, numbered so no cache can serve one from another; with
    ``chunks`` > 1 the context is a list: the seed's context plus ``chunks - 1`` extra chunks."""
    rows = []
    for i in range(n):
        context: Any = SEED_ROW["context"] if chunks == 1 else [SEED_ROW["context"]] + [
            f"Chunk {k}: {EXTRA_CHUNK}" for k in range(1, chunks)]
        rows.append({**SEED_ROW, "question": f"{SEED_ROW['question']} (#{i})", "context": context})
    return rows


def _context_list(row: dict[str, Any]) -> list[str]:
    return row["context"] if isinstance(row["context"], list) else [row["context"]]


def prompt_chars(body: dict[str, Any]) -> int:
    """What the judge reads: message text plus the response_format (our JSON schema)."""
    chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    return chars + len(json.dumps(body["response_format"])) if body.get("response_format") else chars


# --- peer driver: runs in the peers' venv --------------------------------------------------------


def _azure_call(evaluator: Any, name: str, row: dict[str, Any]) -> Any:
    row = {**row, "context": "\n\n".join(_context_list(row))}  # Azure takes one context string
    if name == "FluencyEvaluator":
        return evaluator(response=row["answer"])
    if name in ("RelevanceEvaluator", "CoherenceEvaluator"):
        return evaluator(query=row["question"], response=row["answer"])
    if name == "SimilarityEvaluator":
        return evaluator(query=row["question"], response=row["answer"], ground_truth=row["ground_truth"])
    if name == "RetrievalEvaluator":
        return evaluator(query=row["question"], context=row["context"])
    return evaluator(query=row["question"], context=row["context"], response=row["answer"])


def _drive(report: dict[str, Any], peer: str, metric: str, run: Any) -> None:
    entry = report.setdefault(f"{peer}:{metric}", {"ok": 0, "errors": 0, "error": None, "seconds": 0.0})
    started = time.perf_counter()
    try:
        run()
        entry["ok"] += 1
    except Exception as exc:  # noqa: BLE001 - record why, keep measuring the others
        entry["errors"] += 1
        entry["error"] = entry["error"] or f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        entry["seconds"] += time.perf_counter() - started


def peer_driver(base_url: str, rows_path: str) -> None:
    """Run every peer evaluator on the rows; print a JSON report. The model name carries
    ``peer:<peer>:<metric>`` so the server can attribute each request."""
    os.environ.update(OPENAI_API_KEY="sk-local-benchmark", OPENAI_BASE_URL=base_url,
                      TONIC_VALIDATE_DO_NOT_TRACK="true", LITELLM_LOCAL_MODEL_COST_MAP="True")
    rows = [json.loads(line) for line in Path(rows_path).read_text().splitlines()]
    report: dict[str, Any] = {}
    try:
        import azure.ai.evaluation as azure_eval
        for ours, cls_name in AZURE_PEER.items():
            config = {"type": "openai", "base_url": base_url, "api_key": "sk-local", "model": f"peer:azure:{ours}"}
            evaluator = getattr(azure_eval, cls_name)(model_config=config)
            for row in rows:
                _drive(report, "azure", ours, lambda: _azure_call(evaluator, cls_name, row))
    except Exception as exc:  # noqa: BLE001
        report["azure:import"] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        _tonic(rows, report)
    except Exception as exc:  # noqa: BLE001
        report["tonic:import"] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))


class _WordEncoding:
    """Stands in for tiktoken's BPE, whose first use downloads a file from the internet.
    tonic-validate uses it only to count tokens locally, never for what it sends."""

    def encode(self, text: str, **_: Any) -> list[str]:
        return text.split()


def _tonic(rows: list[dict[str, Any]], report: dict[str, Any]) -> None:
    import tiktoken
    tiktoken.get_encoding = lambda name: _WordEncoding()  # type: ignore[assignment]
    tiktoken.encoding_for_model = lambda name: _WordEncoding()  # type: ignore[assignment]
    import tonic_validate.metrics as tonic_metrics
    from tonic_validate import BenchmarkItem, LLMResponse, ValidateScorer
    for ours, cls_name in TONIC_PEER.items():
        for row in rows:
            # A fresh scorer per metric and row: its prompt cache must not serve one row from
            # another, and its openai client is bound to the loop of the first score_responses.
            scorer = ValidateScorer([getattr(tonic_metrics, cls_name)()], model_evaluator=f"peer:tonic:{ours}",
                                    fail_on_error=True, quiet=True, max_llm_retries=1, max_parsing_retries=1)
            item = LLMResponse(llm_answer=row["answer"], llm_context_list=_context_list(row),
                               benchmark_item=BenchmarkItem(question=row["question"], answer=row["ground_truth"]))
            _drive(report, "tonic", ours, lambda: scorer.score_responses([item], parallelism=1))


# --- our side ------------------------------------------------------------------------------------


def _peer_content(text: str) -> str:
    """A reply each peer parses: bare true/number/bullets for Tonic, Azure's JSON otherwise."""
    lowered = text.lower()
    if "true or false" in lowered or "'true' or 'false'" in lowered:
        return "true"
    if "respond with just a number" in lowered:
        return "4"
    if "bulleted list" in lowered:
        return "* The Alpine Explorer Tent is the most waterproof."
    return json.dumps({"properties": {"thought_chain": "Let's think step by step: scripted."},
                       "reason": "scripted", "explanation": "scripted", "score": 4, "status": "completed"})


def judge_behaviour() -> Any:
    """schema_reply for our requests, the peers' formats for ``peer:*`` models."""
    from aiohttp import web

    from tests.support.judge_server import schema_reply

    ours = schema_reply()

    async def behave(server: Any, request: Any, rec: Any) -> Any:
        if not str(rec.body.get("model", "")).startswith("peer:"):
            return await ours(server, request, rec)
        content = _peer_content(" ".join(str(m.get("content", "")) for m in rec.body.get("messages", [])))
        prompt, completion = prompt_chars(rec.body) // 4, max(1, len(content) // 4)
        return web.json_response({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": rec.body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})

    return behave


class ServerThread:
    """The judge server on its own event loop in a thread, so the client's loop is not shared."""

    def __init__(self, latency: float) -> None:
        from tests.support.judge_server import JudgeServer

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server = JudgeServer(default=judge_behaviour(), latency=latency)

    def __enter__(self) -> Any:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.__aenter__(), self.loop).result(10)
        return self.server

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.__aexit__(None, None, None), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def _evaluate(base_url: str, rows: list[dict[str, Any]], metrics: list[str], concurrency: int,
                    combine: bool = False, warmup: int = 0) -> tuple[list[Any], float]:
    """Rows through the real JudgeClient + evaluators; (outcomes, seconds). ``warmup`` untimed
    turns first: connections, and the openai/pydantic code paths built on first use."""
    from monitor.offline.rows import parse_row
    from monitor.evaluation.config import EvaluationConfig
    from monitor.evaluation.registry import build_evaluators
    from monitor.judge.client import JudgeClient
    from monitor.judge.config import JudgeConfig
    from monitor.offline.evaluate import evaluate_rows

    judge = JudgeClient(JudgeConfig(base_url=base_url, model="bench", max_concurrency=concurrency, max_retries=0,
                                    circuit_breaker={"failure_threshold": 10_000}))
    config = EvaluationConfig(metrics=metrics, combine_metrics=combine)
    async with judge:
        evaluators = build_evaluators(config, judge)
        eval_rows = [parse_row(r, i + 1) for i, r in enumerate(rows)]
        if warmup:
            await evaluate_rows(eval_rows[:warmup], evaluators, concurrency)
        started = time.perf_counter()
        outcomes = await evaluate_rows(eval_rows, evaluators, concurrency)
        return outcomes, time.perf_counter() - started


async def serve_judge(latency: float) -> None:
    """``--serve-judge``: the judge server in this process until stdin closes; prints its base URL
    first and ``{"requests", "max_in_flight"}`` last."""
    from tests.support.judge_server import JudgeServer

    async with JudgeServer(default=judge_behaviour(), latency=latency) as server:
        print(server.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    print(json.dumps({"requests": len(server.requests), "max_in_flight": server.max_in_flight}), flush=True)


def throughput(latency: float, levels: list[int], waves: int) -> list[dict[str, Any]]:
    """Evaluations/s (one groundedness call per turn) per concurrency level. The judge runs in its
    own process: in-process it would take CPU (and the GIL) from the client being measured."""
    results = []
    for level in levels:
        server = subprocess.Popen([sys.executable, __file__, "--serve-judge", str(latency)], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdin is not None and server.stdout is not None
        base_url = server.stdout.readline().strip()
        n = waves * level
        outcomes, seconds = asyncio.run(_evaluate(base_url, bench_rows(n), ["groundedness"], level,
                                                    warmup=min(n, 2 * level)))
        server.stdin.close()
        stats = json.loads(server.stdout.read().strip().splitlines()[-1])
        server.wait(10)
        errors = sum(s.status != "ok" for o in outcomes for t in o.turn_scores for s in t)
        ideal = level / latency
        results.append({"concurrency": level, "turns": n, "warmup_turns": min(n, 2 * level), "seconds": round(seconds, 3),
                        "per_second": round(n / seconds, 1), "ideal": round(ideal, 1),
                        "efficiency": round(n / seconds / ideal, 3), "errors": errors,
                        "server_requests": stats["requests"], "server_max_in_flight": stats["max_in_flight"]})
    return results


def _usage_per_row(outcomes: list[Any], rows: int) -> dict[str, tuple[float, float]]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for outcome in outcomes:
        for scores in outcome.turn_scores:
            for s in scores:
                totals[s.metric][0] += s.usage.prompt_tokens
                totals[s.metric][1] += s.usage.completion_tokens
    return {m: (p / rows, c / rows) for m, (p, c) in totals.items()}


def our_tokens(base_url: str, rows: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
    """Prompt/completion tokens per row for each metric judged alone, plus the shared calls."""
    result: dict[str, tuple[float, float]] = {}
    for metric in [*AZURE_SET, "answer_relevance", *TONIC_SET]:
        outcomes, _ = asyncio.run(_evaluate(base_url, rows, [metric], 4))
        result[metric] = _usage_per_row(outcomes, len(rows)).get(metric, (0.0, 0.0))
    outcomes, _ = asyncio.run(_evaluate(base_url, rows, COMBINED, 4, combine=True))
    usage = _usage_per_row(outcomes, len(rows))
    # Two shared calls since issue 28: each call's usage is on its first metric.
    result["combined_rubrics (4 quality)"] = usage[COMBINED[0]]
    result["safety (4 severities)"] = usage[COMBINED[4]]
    both = (usage[COMBINED[0]][0] + usage[COMBINED[4]][0], usage[COMBINED[0]][1] + usage[COMBINED[4]][1])
    result["quality + safety calls (8 metrics)"] = both
    outcomes, _ = asyncio.run(_evaluate(base_url, rows, TONIC_SET, 4))
    result[TONIC_CALL] = _usage_per_row(outcomes, len(rows))[TONIC_SET[0]]  # the call's usage is on its first metric
    return result


def peer_tokens(server: Any, python: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the peer driver in ``python``; prompt tokens per row per metric from the server."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("\n".join(json.dumps(r) for r in rows))
    first = len(server.requests)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    proc = subprocess.run([python, __file__, "--peer-driver", server.base_url, f.name],
                          capture_output=True, text=True, timeout=900, env=env, check=False)
    os.unlink(f.name)
    lines = proc.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {"driver": {"error": proc.stderr[-2000:]}}
    chars: dict[str, list[int]] = defaultdict(list)
    for rec in server.requests[first:]:
        chars[str(rec.body.get("model", ""))].append(prompt_chars(rec.body))
    for key, entry in report.items():
        calls = chars.get(f"peer:{key}", [])
        if isinstance(entry, dict) and "ok" in entry:
            entry.update(requests=len(calls), prompt_tokens_per_row=sum(calls) / 4 / len(rows))
    return report


def peer_throughput(python: str, rows: list[dict[str, Any]], latency: float) -> list[dict[str, Any]]:
    """Evaluations/s of each peer metric at ``latency`` (they evaluate one row at a time when called
    directly), next to ours on the same rows at ``max_concurrency`` 1 against the same judge."""
    out = []
    with ServerThread(latency) as server:
        report = peer_tokens(server, python, rows)
        for key, entry in report.items():
            if not (isinstance(entry, dict) and entry.get("ok")):
                continue
            metric = key.split(":", 1)[1]
            ours, seconds = asyncio.run(_evaluate(server.base_url, rows, [metric], 1))
            our_rate = len(rows) / seconds
            peer_rate = entry["ok"] / entry["seconds"]
            out.append({"peer_metric": key, "peer_per_second": round(peer_rate, 2), "peer_requests": entry["requests"],
                        "ours_per_second": round(our_rate, 2), "ours_over_peer": round(our_rate / peer_rate, 2)})
    return out


def opik_tokens(row: dict[str, Any]) -> float | None:
    """Opik's answer-relevance prompt (template from the seed) filled with ``row``: chars / 4."""
    if not OPIK_SEED.exists():
        return None
    text = OPIK_SEED.read_text()
    template = text[text.index("YOU ARE AN EXPERT"):text.index("{contexts}") + len("{contexts}")]
    filled = (template.replace("{VERDICT_KEY}", "answer_relevance_score").replace("{REASON_KEY}", "reason")
              .replace("{{", "{").replace("}}", "}").replace("{user_input}", row["question"])
              .replace("{answer}", row["answer"]).replace("{contexts}", json.dumps(_context_list(row))))
    return len(filled) / 4


TONIC_CALL = "tonic set (6 metrics, one call)"


def _peer_prompt(peers: dict[str, Any], key: str) -> float | None:
    value = peers.get(key, {}).get("prompt_tokens_per_row")
    return float(value) if value else None


def _print_tonic_set(ours: dict[str, tuple[float, float]], peers: dict[str, Any]) -> None:
    """The Tonic set judged together: each metric's even share of the call against what
    tonic-validate spends on that metric, and the totals."""
    if TONIC_CALL not in ours:
        return
    share = ours[TONIC_CALL][0] / len(TONIC_SET)
    print(f"\nTonic set in one call: {ours[TONIC_CALL][0]:.0f} prompt tokens per row = {share:.0f} per metric")
    print(f"{'metric':32} {'ours (share)':>12} {'tonic':>7} {'ours/tonic':>10}")
    total = 0.0
    for metric in TONIC_SET:
        peer = _peer_prompt(peers, f"tonic:{metric}")
        total += peer or 0.0
        print(f"{metric:32} {share:12.0f} {peer or 0:7.0f} {(share / peer if peer else 0):10.2f}")
    if total:
        print(f"{'all six':32} {ours[TONIC_CALL][0]:12.0f} {total:7.0f} {ours[TONIC_CALL][0] / total:10.2f}")


def _print_tokens(ours: dict[str, tuple[float, float]], peers: dict[str, Any], opik: float | None) -> None:
    print("\nprompt tokens per row per metric (chars/4; completion = scripted replies)")
    print(f"{'metric':32} {'ours':>7} {'compl':>6} {'peer':>7} {'peer/ours':>9} {'reference':>9} {'ours/ref':>8}")
    for metric, (prompt, completion) in ours.items():
        peer_key = f"azure:{metric}" if metric in AZURE_PEER else f"tonic:{metric}" if metric in TONIC_PEER else None
        peer = peers.get(peer_key or "", {}).get("prompt_tokens_per_row") if peer_key else None
        if metric == "answer_relevance":
            peer = opik
        per_metric = (prompt / 8 if metric.startswith("quality + safety") else prompt / 4
                      if metric.startswith(("combined", "safety (")) else prompt / 6 if metric == TONIC_CALL else prompt)
        ref = (REFERENCE["azure_retrieval"] if metric == "retrieval_score" else REFERENCE["opik"]
               if metric == "answer_relevance" else REFERENCE["tonic"] if metric in TONIC_SET or "tonic" in metric
               else REFERENCE["azure"])
        ratio = f"{peer / prompt:9.1f}" if peer else f"{'-':>9}"
        print(f"{metric:32} {prompt:7.0f} {completion:6.0f} {peer or 0:7.0f} {ratio} {ref:9d} {per_metric / ref:8.2f}")
    print("combined_rubrics, safety / both / tonic set: ours/ref is per metric (the call / 4, / 8, / 6)")
    _print_tonic_set(ours, peers)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (or, with ``--peer-driver``, the peers' side of it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-driver", nargs=2, metavar=("BASE_URL", "ROWS"), help=argparse.SUPPRESS)
    parser.add_argument("--serve-judge", type=float, metavar="LATENCY", help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.2, help="judge latency in seconds")
    parser.add_argument("--levels", default="1,16,64", help="max_concurrency levels")
    parser.add_argument("--waves", type=int, default=40, help="turns per level = waves x concurrency")
    parser.add_argument("--rows", type=int, default=10, help="rows for the token comparison")
    parser.add_argument("--chunks", type=int, default=1, help="retrieved chunks per row (1 = the seed row)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--peers-python", default="/tmp/peers-venv/bin/python")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    if args.peer_driver:
        peer_driver(*args.peer_driver)
        return
    sys.path.insert(0, str(REPO))
    if args.serve_judge is not None:
        asyncio.run(serve_judge(args.serve_judge))
        return
    levels = [int(x) for x in args.levels.split(",")]
    results: dict[str, Any] = {
        "throughput": [] if args.skip_throughput else throughput(args.latency, levels, args.waves)}
    print(f"throughput at {args.latency * 1000:.0f} ms judge latency (groundedness, one call per turn)")
    for r in results["throughput"]:
        print(f"  concurrency {r['concurrency']:3d}: {r['per_second']:7.1f} evaluations/s of ideal {r['ideal']:6.1f}"
              f" = {r['efficiency']:.1%} ({r['turns']} turns, {r['errors']} errors,"
              f" {r['server_max_in_flight']} max in flight at the judge)")
    rows = bench_rows(args.rows, args.chunks)
    print(f"\ntoken comparison on {args.rows} rows of the Azure seed's example, {args.chunks} chunk(s) each")
    with ServerThread(0.0) as server:
        results["ours"] = our_tokens(server.base_url, rows)
        has_peers = Path(args.peers_python).exists()
        results["peers"] = peer_tokens(server, args.peers_python, rows) if has_peers else {
            "driver": {"error": f"{args.peers_python} not found"}}
    results["opik_template_tokens"] = opik_tokens(rows[0])
    _print_tokens(results["ours"], results["peers"], results["opik_template_tokens"])
    print("\npeer runs:")
    for key, entry in results["peers"].items():
        print(f"  {key}: {json.dumps(entry)}")
    if has_peers and not args.skip_throughput:
        results["peer_throughput"] = peer_throughput(args.peers_python, rows, args.latency)
        print(f"\nthroughput side by side at {args.latency * 1000:.0f} ms judge latency, one row at a time "
              "(peers called directly evaluate sequentially; ours at max_concurrency 1)")
        print(f"  {'peer:metric':<36}{'peer/s':>8}{'calls':>7}{'ours/s':>8}{'ours/peer':>10}")
        for r in results["peer_throughput"]:
            print(f"  {r['peer_metric']:<36}{r['peer_per_second']:>8.2f}{r['peer_requests']:>7}"
                  f"{r['ours_per_second']:>8.2f}{r['ours_over_peer']:>10.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
