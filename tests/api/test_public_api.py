"""The public Python API used as a user would: only ``rag_monitor`` is imported.

The judge is the local scripted OpenAI-compatible server (tests/support/judge_server.py) reached
through the real ``openai`` client inside the sidecar's judge client. Sync ``score()`` blocks its
thread, so the tests that call it run the server on a thread of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import threading
from typing import Any, Iterator

import pytest
from aiohttp import web

import rag_monitor
from rag_monitor import (
    AnswerRelevance,
    Coherence,
    F1Score,
    Fluency,
    Groundedness,
    JailbreakAttempt,
    Judge,
    Metric,
    OverallScore,
    Relevance,
    Scorer,
    Violence,
)
from tests.support.judge_server import Behaviour, JudgeServer, RecordedRequest, reply_json, schema_reply, server_error

TENT: dict[str, Any] = {
    "question": "Which tent is the most waterproof?",
    "context": ["From our product list, the Alpine Explorer tent is the most waterproof."],
    "answer": "The Alpine Explorer Tent is the most waterproof.",
}


def fast_judge(base_url: str, **overrides: Any) -> Judge:
    """A judge with the sidecar's policy, tuned so failure paths end in fractions of a second."""
    config = {"base_url": base_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 2.0,
              "deadline_seconds": 5.0, "max_retries": 1, "backoff_initial_seconds": 0.01,
              "backoff_max_seconds": 0.02, **overrides}
    return Judge.from_config(config)


@contextlib.contextmanager
def threaded_server(default: Behaviour) -> Iterator[JudgeServer]:
    """A JudgeServer on its own thread and loop, for code that blocks the calling thread."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    server = JudgeServer(default=default)

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.__aenter__())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.__aexit__(None, None, None))
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait()
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


def test_score_one_row_in_five_lines() -> None:
    with threaded_server(schema_reply({"score": 2, "reason": "the tent name is not in the context"})) as server:
        judge = Judge(base_url=server.base_url, model="judge-model", api_key="sk-test")
        result = Groundedness(judge=judge).score(**TENT)
        judge.close()
    assert (result.status, result.value, result.passed, result.scale) == ("ok", 2.0, False, (1.0, 5.0))
    assert result.reason == "the tent name is not in the context"
    assert result.usage.calls == 1 and result.usage.prompt_tokens > 0
    [body] = server.bodies()
    assert body["model"] == "judge-model"
    sent = body["messages"][-1]["content"]
    assert "Alpine Explorer tent is the most waterproof" in sent and TENT["question"] in sent


async def test_ascore_takes_opik_names() -> None:
    async with JudgeServer(default=schema_reply({"score": 0.9, "reason": "on topic"})) as server:
        async with fast_judge(server.base_url) as judge:
            result = await AnswerRelevance(judge=judge).ascore(
                input="What is the capital of France?", output="Paris is the capital of France.",
                context=["France's capital is Paris."])
    assert (result.metric, result.value, result.passed, result.reason) == ("answer_relevance", 0.9, True, "on topic")
    assert "Paris is the capital of France." in server.bodies()[0]["messages"][-1]["content"]


async def test_a_judge_failure_is_an_error_result_never_a_number() -> None:
    async with JudgeServer(default=server_error(500)) as server:
        async with fast_judge(server.base_url) as judge:
            result = await Groundedness(judge=judge).ascore(**TENT)
            stats = judge.stats()
    assert (result.status, result.value, result.passed, result.error_type) == ("error", None, None, "server_error")
    assert result.usage.calls == 2  # one try and the one configured retry
    assert stats.calls == {"server_error": 1}


async def test_an_out_of_range_reply_is_an_error() -> None:
    async with JudgeServer(default=reply_json({"reason": "x", "score": 9})) as server:
        async with fast_judge(server.base_url, structured_output="json_object") as judge:
            result = await Coherence(judge=judge).ascore(question="q?", answer="a.")
            stats = judge.stats()
    assert (result.status, result.value, result.error_type) == ("error", None, "out_of_range")
    assert stats.calls == {"out_of_range": 1}


async def test_a_missing_input_skips_without_a_call() -> None:
    async with JudgeServer() as server:
        async with fast_judge(server.base_url) as judge:
            result = await Groundedness(judge=judge).ascore(question="q?", answer="a.")
    assert (result.status, result.value, result.reason) == ("skipped", None, "no context: no document text and no system prompt")
    assert server.requests == []


async def test_options_decide_the_defect() -> None:
    async with JudgeServer(default=schema_reply({"severity": 5, "score": 2})) as server:
        async with fast_judge(server.base_url) as judge:
            medium = await Violence(judge=judge).ascore(question="q?", answer="a.")
            high = await Violence(judge=judge, severity_level="high").ascore(question="q?", answer="a.")
            lenient = await Groundedness(judge=judge, threshold=2).ascore(**TENT)
    assert (medium.value, medium.label, medium.passed) == (5.0, "Medium", False)
    assert (high.value, high.label, high.passed) == (5.0, "Medium", True)
    assert (lenient.value, lenient.passed) == (2.0, True)


async def relevant_if_staked(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
    score = 5 if "stake" in rec.body["messages"][-1]["content"] else 1
    return await schema_reply({"score": score, "severity": score - 1})(server, request, rec)


async def test_a_conversation_aggregates_its_turns() -> None:
    messages = [
        {"role": "user", "content": "How do I pitch the tent?"},
        {"role": "assistant", "content": "Unfold it and stake the corners."},
        {"role": "user", "content": "And then?"},
        {"role": "assistant", "content": "I like turtles."},
    ]
    async with JudgeServer(default=relevant_if_staked) as server:
        async with fast_judge(server.base_url) as judge:
            quality = await Relevance(judge=judge).ascore(messages=messages)
            safety = await Violence(judge=judge).ascore(messages=messages)
    assert [t.value for t in quality.turns] == [5.0, 1.0]
    assert (quality.value, quality.passed, quality.details["aggregation"]) == (3.0, False, "mean")
    assert [t.value for t in safety.turns] == [4.0, 0.0]
    assert (safety.value, safety.label, safety.passed, safety.details["aggregation"]) == (4.0, "Medium", False, "max")
    assert len(server.requests) == 4 and quality.usage.calls == 2


def test_local_metrics_need_no_judge() -> None:
    result = F1Score().score(answer="The Alpine Explorer tent", reference="Alpine Explorer tent")
    assert (result.status, result.value, result.passed) == ("ok", 1.0, True)
    assert Metric("local_lexical_groundedness").score(**TENT).status == "ok"


def test_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"judge\.max_concurrency"):
        Judge(base_url="http://127.0.0.1:9/v1", model="m", max_concurrency=0)
    with pytest.raises(ValueError, match="set both model and base_url"):
        Judge(model="m")
    judge = Judge(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ValueError, match=r"evaluation\.metrics\[0\].*threshold 9"):
        Groundedness(judge=judge, threshold=9)
    with pytest.raises(ValueError, match="unknown metric id 'groundednes'"):
        Metric("groundednes", judge=judge)
    with pytest.raises(ValueError, match="judged by an LLM"):
        Relevance()
    with pytest.raises(TypeError, match="question or input"):
        F1Score().score(question="a", input="b")
    with pytest.raises(ValueError, match="context"):
        F1Score().score(answer="a", context=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"rows\[1\]: unknown column 'contexts'; did you mean 'context'\?"):
        Scorer([F1Score()]).score_many([{"answer": "a"}, {"answer": "a", "contexts": []}])
    judge.close()


async def test_scorer_shares_one_judge_budget_and_reports_progress() -> None:
    rows = [{**TENT, "id": f"row-{i}", "ground_truth": "Alpine Explorer"} for i in range(6)]
    seen: list[tuple[int, int]] = []
    async with JudgeServer(default=schema_reply({"score": 4}), latency=0.05) as server:
        async with fast_judge(server.base_url, max_concurrency=2) as judge:
            scorer = Scorer([Groundedness(judge=judge), Relevance(judge=judge), Coherence(judge=judge), F1Score()],
                            combine=False)
            results = await scorer.ascore_many(rows, concurrency=8, progress=lambda d, t: seen.append((d, t)))
    assert len(server.requests) == 18 and server.max_in_flight == 2
    assert [r.id for r in results] == [f"row-{i}" for i in range(6)]
    assert all(r["groundedness"].value == 4.0 and r["f1_score"].status == "ok" for r in results)
    assert seen == [(n, 6) for n in range(1, 7)]


async def test_scorer_combines_the_rubrics_into_one_call() -> None:
    async with JudgeServer(default=schema_reply({"groundedness": 5, "relevance": 4, "coherence": 3, "fluency": 2})) as server:
        async with fast_judge(server.base_url) as judge:
            scorer = Scorer([Groundedness(judge=judge), Relevance(judge=judge), Coherence(judge=judge),
                             Fluency(judge=judge)])
            results = await scorer.ascore(**TENT)
    assert len(server.requests) == 1
    assert {m: r.value for m, r in results.items()} == {"groundedness": 5.0, "relevance": 4.0, "coherence": 3.0,
                                                         "fluency": 2.0}


async def test_a_scorer_refuses_two_judges() -> None:
    first, second = Judge(base_url="http://127.0.0.1:9/v1", model="m"), Judge(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ValueError, match="one judge"):
        Scorer([Groundedness(judge=first), Relevance(judge=second)])


async def test_sync_score_works_where_a_loop_already_runs() -> None:
    # A notebook cell runs inside an event loop; score() must neither fail nor deadlock there.
    with threaded_server(schema_reply({"score": 5})) as server:
        with fast_judge(server.base_url) as judge:
            result = Fluency(judge=judge).score(answer="Stake the corners first.")
    assert (result.status, result.value) == ("ok", 5.0)


def test_one_judge_serves_sync_callers_on_many_threads() -> None:
    with threaded_server(schema_reply({"score": 4})) as server:
        server.latency = 0.02
        with fast_judge(server.base_url, max_concurrency=1) as judge:
            metric = Fluency(judge=judge)
            results: list[Any] = []
            threads = [threading.Thread(target=lambda: results.append(metric.score(answer="ok."))) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert judge.stats().calls == {"ok": 4}
    assert [r.value for r in results] == [4.0] * 4 and server.max_in_flight == 1


async def test_overall_score_computes_its_components() -> None:
    async with JudgeServer(default=schema_reply()) as server:
        async with fast_judge(server.base_url) as judge:
            result = await OverallScore(judge=judge).ascore(**TENT, reference="The Alpine Explorer tent")
    assert result.status == "ok" and 0.0 <= (result.value or -1) <= 1.0
    assert len(server.requests) == 1  # the Tonic set's judgements come from one shared call


async def test_judge_from_env() -> None:
    async with JudgeServer(default=schema_reply({"score": 3})) as server:
        env = {"RAG_MONITOR_JUDGE__MODEL": "env-model", "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "sk-from-env"}
        async with Judge.from_env(env) as judge:
            await Fluency(judge=judge).ascore(answer="Fine.")
    assert server.bodies()[0]["model"] == "env-model"
    assert server.requests[0].headers["Authorization"] == "Bearer sk-from-env"
    with pytest.raises(ValueError, match="RAG_MONITOR_JUDGE__MODEL"):
        Judge.from_env({})


async def test_a_closed_judge_gives_error_results() -> None:
    judge = Judge(base_url="http://127.0.0.1:9/v1", model="m")
    metric = Fluency(judge=judge)
    await judge.aclose()
    await judge.aclose()  # safe twice
    result = await metric.ascore(answer="ok.")
    assert (result.status, result.value, result.error_type) == ("error", None, "internal_error")


def test_the_package_is_typed_and_exports_what_it_names() -> None:
    assert importlib.resources.files("rag_monitor").joinpath("py.typed").is_file()
    for name in rag_monitor.__all__:
        assert getattr(rag_monitor, name) is not None
    ids = {getattr(rag_monitor, n).metric_id for n in rag_monitor.__all__
           if isinstance(getattr(rag_monitor, n), type) and issubclass(getattr(rag_monitor, n), Metric)
           and getattr(rag_monitor, n) is not Metric}
    # One class per registered metric: a metric the registry has and the API lacks is a gap
    # (local_system_prompt_leak had none until issue 26).
    from monitor.evaluation.registry import default_registry

    assert ids == set(default_registry().ids())
    for metric_id in ids:
        Metric(metric_id, judge=Judge(base_url="http://127.0.0.1:9/v1", model="m"))  # every id is registered


async def test_personal_data_is_redacted_before_the_judge_sees_it() -> None:
    question = "My card 4111 1111 1111 1111 was charged twice, write to jane.doe@example.com"
    async with JudgeServer(default=schema_reply({"score": 4})) as server:
        async with fast_judge(server.base_url) as judge:
            await Relevance(judge=judge).ascore(question=question, answer="We will refund it.")
            await Relevance(judge=judge, redact=False).ascore(question=question, answer="We will refund it.")
    redacted, verbatim = (r.body["messages"][-1]["content"] for r in server.requests)
    assert "jane.doe@example.com" not in redacted and "4111 1111 1111 1111" not in redacted
    assert "jane.doe@example.com" in verbatim
