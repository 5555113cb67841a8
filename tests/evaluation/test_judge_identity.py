"""Judge identity on results: the judge model and prompt version travel with each judge score,
into the result store and onto the evaluation series, so a provider's silent model update or a
prompt change shows as a change in the numbers."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.judge_identity import JudgeIdentity
from monitor.evaluation.registry import build_evaluators, prompt_versions
from monitor.judge.config import JudgeConfig
from monitor.model import EvaluationResult, Score
from tests.support.judge_server import Behaviour, JudgeServer, RecordedRequest
from tests.support.pipeline import RecordingSink, test_config
from tests.support.sdk_spans import emit_genai_turn, provider_with


def _score(metric: str, **details: Any) -> Score:
    return Score(metric, 4.0, (1.0, 5.0), defect=False, details=details)


def test_stamp_marks_judge_metrics_only_and_reads_the_model_each_time() -> None:
    served = ["gpt-4o-2024-08-06"]
    identity = JudgeIdentity(lambda: served[0], {"groundedness": "p1", "relevance": "p2"})
    first = identity.stamp([_score("groundedness", prompt_version="p1"), _score("f1_score")])
    assert first[0].details == {"judge_model": "gpt-4o-2024-08-06", "prompt_version": "p1"}
    assert first[1].details == {}  # a local metric: no judge
    served[0] = "gpt-4o-2024-11-20"
    second = identity.stamp([_score("relevance", prompt_version="p2", judge_call="combined")])
    assert second[0].details == {"judge_model": "gpt-4o-2024-11-20", "prompt_version": "p2",
                                 "judge_call": "combined"}
    # What an evaluator set itself is kept.
    kept = identity.stamp([_score("relevance", judge_model="own", prompt_version="p9")])
    assert kept[0].details == {"judge_model": "own", "prompt_version": "p9"}


class NoJudge:
    async def complete_json(self, request: Any) -> Any:
        raise AssertionError("not called")


def test_prompt_versions_change_with_the_prompt() -> None:
    judge = JudgeConfig.model_validate({"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"})
    single = prompt_versions(build_evaluators(
        EvaluationConfig.model_validate({"metrics": ["groundedness", "relevance"], "combine_metrics": False}), NoJudge()))
    combined = prompt_versions(build_evaluators(
        EvaluationConfig.model_validate({"metrics": ["groundedness", "relevance"], "combine_metrics": True}), NoJudge()))
    assert set(single) == set(combined) == {"groundedness", "relevance"}
    # One shared call asks differently from two single calls: another prompt, another version.
    assert single["groundedness"] != combined["groundedness"]
    assert judge.effective_model == "m"


def served_by(model: str, score: int) -> Behaviour:
    """A chat completion whose ``model`` names ``model`` (not the requested one: an alias the
    provider moved) with ``score`` as the verdict."""

    async def behave(server: JudgeServer, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        content = json.dumps({"reason": f"{model} says {score}", "score": score})
        return web.json_response({
            "id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    return behave


class Results:
    def __init__(self) -> None:
        self.items: list[EvaluationResult] = []
        self.changed = asyncio.Event()

    def consume_result(self, result: EvaluationResult) -> None:
        self.items.append(result)
        self.changed.set()

    async def wait(self, n: int) -> None:
        while len(self.items) < n:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 20)


def _config(base_url: str, store: Path) -> MonitorConfig:
    data = test_config().model_dump(mode="json")
    data["judge"] = {"base_url": base_url, "model": "gpt-4o", "api_key": "sk-test", "timeout_seconds": 5,
                     "max_concurrency": 1}
    data["evaluation"] = {"metrics": ["coherence", "local_jailbreak_attempt"], "combine_metrics": False,
                          "workers": 1}
    data["sampling"] = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
    data["exporters"]["store"] = {"enabled": True, "path": str(store)}
    return MonitorConfig.model_validate(data)


def _samples(sidecar: Sidecar, name: str) -> dict[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for fam in sidecar.registry.collect():
        for s in fam.samples:
            if s.name == name and s.value:
                key = (s.labels["metric"], s.labels["judge_model"], s.labels.get("outcome", ""))
                out[key] = out.get(key, 0.0) + s.value
    return out


async def test_a_silent_model_update_splits_the_series_and_shows_in_the_store(tmp_path: Path) -> None:
    # judge.model stays "gpt-4o" throughout; the provider moves the alias after three calls and
    # the new snapshot is harsher. The series and the stored rows tell the two apart.
    async with JudgeServer(default=served_by("gpt-4o-2026-06-01", 2)) as judge:
        judge.script(*(served_by("gpt-4o-2026-01-15", 4) for _ in range(3)))
        results = Results()
        store = tmp_path / "results.db"
        sidecar = Sidecar(_config(judge.base_url, store), sink=RecordingSink(), registry=CollectorRegistry(),
                          result_consumers=[results])
        await sidecar.start()
        try:
            provider = provider_with(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{sidecar.http.port}/v1/traces"))
            for i in range(6):
                emit_genai_turn(provider, f"conv-{i}", f"Question {i}?", f"Answer {i}.")
                assert await asyncio.to_thread(provider.force_flush, 10_000)
                await results.wait(i + 1)  # one at a time: the scripted replies go in order
            await asyncio.to_thread(provider.shutdown)
            counts = _samples(sidecar, "rag_monitor_evaluations_total")

            async def stored(n: int) -> dict[str, Any]:  # the store writes in batches, off the results' path
                async with aiohttp.ClientSession() as session:
                    while True:
                        url = f"http://127.0.0.1:{sidecar.admin.port}/api/evaluations?metric=coherence"
                        async with session.get(url) as r:
                            doc: dict[str, Any] = await r.json()
                        if doc.get("count") == n:
                            return doc
                        await asyncio.sleep(0.05)

            api = await asyncio.wait_for(stored(6), 20)
            version = prompt_versions(build_evaluators(_config(judge.base_url, store).evaluation, NoJudge()))
        finally:
            await sidecar.shutdown()
    assert counts == {("coherence", "gpt-4o-2026-01-15", "pass"): 3.0,
                      ("coherence", "gpt-4o-2026-06-01", "defect"): 3.0,
                      ("local_jailbreak_attempt", "", "pass"): 6.0}
    coherence = [s for r in results.items for s in r.scores if s.metric == "coherence"]
    assert {s.details["prompt_version"] for s in coherence} == {version["coherence"]}
    with closing(sqlite3.connect(store)) as conn:
        rows = conn.execute("SELECT metric, outcome, judge_model, prompt_version FROM scores ORDER BY id").fetchall()
    assert sorted((m, o, j) for m, o, j, _ in rows if m == "coherence") == (
        [("coherence", "defect", "gpt-4o-2026-06-01")] * 3 + [("coherence", "pass", "gpt-4o-2026-01-15")] * 3)
    assert {p for m, _, _, p in rows if m == "coherence"} == {version["coherence"]}
    assert {(j, p) for m, _, j, p in rows if m != "coherence"} == {(None, None)}
    # /api/evaluations names them too, newest first.
    assert [(i["judge_model"], i["prompt_version"]) for i in api["items"]] == (
        [("gpt-4o-2026-06-01", version["coherence"])] * 3 + [("gpt-4o-2026-01-15", version["coherence"])] * 3)
