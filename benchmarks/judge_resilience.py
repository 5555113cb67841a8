"""Judge resilience and redaction figures (issue 14): the budget under a hostile judge, a 429
storm through ``evaluate_rows``, and what redaction costs per turn.

Everything runs against the scripted OpenAI-compatible judge of ``tests/support/judge_server.py``
on 127.0.0.1, with the real ``JudgeClient`` (real ``openai`` client, aiohttp transport):

1. **budget** — ``tokens_per_minute: 5000`` (the issue's figure), ``on_budget_exhausted: wait``,
   ``max_concurrency`` 16, a burst of 60 groundedness calls at once, and a judge answering in
   turn 429, 429 + ``Retry-After: 1``, 503, an HTML page and a valid reply. Measured at the
   server: the most prompt tokens received in any 60-second window (the real minute, not a scaled
   one) and in the first second, counting characters / 4 of the messages and the
   ``response_format`` — the rule the judge server reports usage with.
   **burst** — the issue's ``wait``-mode case: 30 calls at once, the same budget, a judge that
   answers every call after 200 ms; how many are judged within the default 90 s deadline.
2. **storm** — ``monitor.offline.evaluate.evaluate_rows`` over 40 rows (groundedness, one call per row) while
   the judge answers 429 + ``Retry-After: 1`` for 10 s from the first request, then valid replies
   after 200 ms. Default judge settings except ``max_concurrency``. Reported: rows scored, HTTP
   requests per evaluation (mean and max, from the server's log), the client's storm probes
   (requests owned by no evaluation), all requests per evaluation, wall time.
3. **redaction** — microseconds per turn for ``Redactor.redact_turn`` on three turns: prose with
   no personal data (four 1.5 kB documents), the same with a phone number in every paragraph, and
   a short turn full of personal data.

Run from the repository root (``--only budget|storm|redaction`` to pick one; the budget scenario
takes ~130 s because it measures a real minute). To measure an older tree, put it first on
``PYTHONPATH`` (e.g. ``git archive <commit> | tar -x -C /tmp/old``); scenarios that need what it
lacks are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aiohttp import web  # noqa: E402

from monitor.evaluation.config import EvaluationConfig  # noqa: E402
from monitor.evaluation.registry import build_evaluators  # noqa: E402
from monitor.offline.rows import parse_row  # noqa: E402
from monitor.judge.client import JudgeClient  # noqa: E402
from monitor.judge.config import JudgeConfig  # noqa: E402
from monitor.judge.telemetry import RecordingJudgeTelemetry  # noqa: E402
from monitor.offline.evaluate import evaluate_rows  # noqa: E402
from tests.support.judge_server import (  # noqa: E402
    Behaviour,
    JudgeServer,
    RecordedRequest,
    rate_limited,
    schema_reply,
    server_error,
)

CONTEXT = ("The Alpine Explorer Tent boasts a detachable divider for privacy, numerous mesh windows and "
           "adjustable vents for ventilation, and a waterproof design. It even has a built-in gear loft.")
ANSWER = "The Alpine Explorer Tent is the most waterproof."


def rows(n: int) -> list[Any]:
    return [parse_row({"question": f"Question {i}: which tent is the most waterproof?", "context": CONTEXT,
                       "answer": ANSWER}, i + 1) for i in range(n)]


def received_prompt_tokens(rec: RecordedRequest) -> int:
    chars = sum(len(str(m.get("content", ""))) for m in rec.body.get("messages", []))
    chars += len(json.dumps(rec.body.get("response_format", "")))
    return chars // 4


def max_in_window(points: list[tuple[float, int]], window: float) -> int:
    points = sorted(points)
    best, total, low = 0, 0, 0
    for t, w in points:
        total += w
        while points[low][0] <= t - window:
            total -= points[low][1]
            low += 1
        best = max(best, total)
    return best


def html_page() -> Behaviour:
    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        return web.Response(text="<html><body>Proxy login</body></html>", content_type="text/html")
    return behave


def rotating(*behaviours: Behaviour) -> Behaviour:
    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        return await behaviours[rec.index % len(behaviours)](server, request, rec)
    return behave


def judge_config(server: JudgeServer, **overrides: Any) -> JudgeConfig:
    return JudgeConfig(base_url=server.base_url, model="judge-model", api_key="sk-bench", **overrides)


async def evaluate_all(client: JudgeClient, n: int, concurrency: int) -> list[Any]:
    evaluators = build_evaluators(EvaluationConfig(metrics=["groundedness"], combine_metrics=False), client)
    return await evaluate_rows(rows(n), evaluators, concurrency)


async def bench_budget(duration: float) -> dict[str, Any]:
    judge = rotating(rate_limited(), rate_limited(retry_after=1), server_error(503), html_page(), schema_reply())
    async with JudgeServer(default=judge, latency=0.05) as server:
        telemetry = RecordingJudgeTelemetry()
        client = JudgeClient(judge_config(server, tokens_per_minute=5000, max_concurrency=16), telemetry=telemetry)
        await client.start()
        started = asyncio.get_running_loop().time()
        task = asyncio.ensure_future(evaluate_all(client, 60, 60))
        try:
            await asyncio.wait_for(asyncio.shield(task), duration)
        except TimeoutError:
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.shutdown(asyncio.get_running_loop().time() + 1)
    points = [(r.arrived_at - started, received_prompt_tokens(r)) for r in server.requests]
    return {"requests": len(points), "max_prompt_tokens_any_60s": max_in_window(points, 60.0),
            "prompt_tokens_first_second": sum(w for t, w in points if t < 1.0),
            "elapsed_s": round(min(duration, asyncio.get_running_loop().time() - started), 1),
            "outcomes": dict(telemetry.outcomes)}


async def bench_burst(n: int = 30) -> dict[str, Any]:
    """The issue's ``on_budget_exhausted: wait`` case: a burst of ``n`` calls at once against
    5,000 tokens/minute and a judge that answers every call; how many are judged, how many shed."""
    async with JudgeServer(default=schema_reply(), latency=0.2) as server:
        telemetry = RecordingJudgeTelemetry()
        client = JudgeClient(judge_config(server, tokens_per_minute=5000, max_concurrency=16), telemetry=telemetry)
        await client.start()
        started = time.monotonic()
        await evaluate_all(client, n, n)
        elapsed = time.monotonic() - started
        await client.shutdown(asyncio.get_running_loop().time() + 1)
    points = [(r.arrived_at, received_prompt_tokens(r)) for r in server.requests]
    return {"calls": n, "judged": telemetry.outcomes["ok"], "shed": telemetry.outcomes["budget_exhausted"],
            "max_prompt_tokens_any_60s": max_in_window(points, 60.0), "elapsed_s": round(elapsed, 1)}


def storm(seconds: float) -> Behaviour:
    throttled, served = rate_limited(retry_after=1), schema_reply({"groundedness": 4})
    first: list[float] = []

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        first[:] = first or [rec.arrived_at]
        if rec.arrived_at - first[0] < seconds:
            return await throttled(server, request, rec)
        await asyncio.sleep(0.2)
        return await served(server, request, rec)
    return behave


async def bench_storm(concurrency: int, n: int = 40, seconds: float = 10.0) -> dict[str, Any]:
    async with JudgeServer(default=storm(seconds)) as server:
        telemetry = RecordingJudgeTelemetry()
        client = JudgeClient(judge_config(server, max_concurrency=concurrency), telemetry=telemetry)
        await client.start()
        started = time.monotonic()
        outcomes = await evaluate_all(client, n, concurrency)
        elapsed = time.monotonic() - started
        await client.shutdown(asyncio.get_running_loop().time() + 1)
    # The storm probe (one short user message, no system prompt) belongs to no evaluation.
    probes = [r for r in server.requests if len(r.body["messages"]) == 1]
    evaluations = [r for r in server.requests if len(r.body["messages"]) > 1]
    per_row = Counter(int(re.search(r"Question (\d+):", r.body["messages"][1]["content"]).group(1))  # type: ignore[union-attr]
                      for r in evaluations)
    scored = sum(1 for o in outcomes for scores in o.turn_scores for s in scores if s.status == "ok")
    return {"concurrency": concurrency, "rows": n, "scored": scored, "requests": len(server.requests),
            "probes": len(probes), "requests_per_evaluation": round(len(evaluations) / n, 2),
            "all_requests_per_evaluation": round(len(server.requests) / n, 2),
            "max_requests_one_evaluation": max(per_row.values()), "elapsed_s": round(elapsed, 1),
            "outcomes": dict(telemetry.outcomes)}


def bench_redaction() -> dict[str, Any]:
    try:
        from monitor.model import Document, Turn
        from monitor.redaction import RedactionConfig, Redactor
    except ImportError:
        return {"skipped": "no monitor.redaction in this tree"}
    paragraph = ("The Alpine Explorer tent is waterproof with a rainfly rated 3000 mm, weighs 2.5 kg and costs "
                 "$349.99; the pack measures 50x20 cm. Model AE-2000, released in 2021. ")
    phone = "Questions? Call support at 1-800-555-0199. "
    turns = {
        "prose, 6 kB, no personal data": Turn("t", "c", "Which tent is the most waterproof?", ANSWER, documents=tuple(
            Document(str(i), paragraph * 9) for i in range(4))),
        "6 kB, a phone number per paragraph": Turn("t", "c", "Which tent is the most waterproof?", ANSWER,
                                                   documents=tuple(Document(str(i), (paragraph + phone) * 7)
                                                                   for i in range(4))),
        "short turn full of personal data": Turn(
            "t", "c", "I'm jane.doe@example.com, +1 202 555 0143, card 4111 1111 1111 1111, SSN 123-45-6789, "
            "IBAN DE89 3704 0044 0532 0130 00, from 203.0.113.42. Refund please?",
            "We will refund DE89 3704 0044 0532 0130 00 and write to jane.doe@example.com.",
            documents=(Document("d", CONTEXT),)),
    }
    redactor = Redactor(RedactionConfig())
    result = {}
    for name, turn in turns.items():
        for _ in range(50):
            redactor.redact_turn(turn)
        runs = []
        for _ in range(5):
            n, t = 400, time.perf_counter()
            for _ in range(n):
                redactor.redact_turn(turn)
            runs.append((time.perf_counter() - t) / n * 1e6)
        chars = len(turn.question) + len(turn.answer) + sum(len(d.content or "") for d in turn.documents)
        result[name] = {"chars": chars, "us_per_turn_median": round(statistics.median(runs)),
                        "us_per_turn_best": round(min(runs))}
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=["budget", "burst", "storm", "redaction"])
    parser.add_argument("--budget-seconds", type=float, default=130.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    if args.only in (None, "redaction"):
        report["redaction"] = bench_redaction()
    if args.only in (None, "storm"):
        report["storm"] = [await bench_storm(c) for c in (4, 16)]
    if args.only in (None, "budget"):
        report["budget"] = await bench_budget(args.budget_seconds)
    if args.only in (None, "burst"):
        report["burst"] = await bench_burst()
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
