"""Three `rag-monitor serve` processes sharing a real Redis and a real PostgreSQL, fed conversations
whose turns are spread over the replicas (as trace-id routing or a pod load balancer spreads them).

Each scenario is short (2 cores run all of it): whole conversations or none, the fleet's weighted
turn count, every replica's API showing the fleet, one judge budget, Redis stopped mid-run and a
replica killed with -9 whose backlog the others finish exactly once.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import aiohttp
import psycopg
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.support.daemon import free_port
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.postgres_server import postgres_server, postgres_url  # noqa: F401  (fixtures)
from tests.support.sdk_spans import emit_genai_turn, provider_with
from tests.test_serve_cli import wait_ready

GOOD = reply_json({"reason": "clear", "score": 4}, prompt_tokens=400, completion_tokens=20)


def counted(server, request, rec):
    """A reply whose usage is the prompt's size as a tokenizer would count it (~4 characters a token)."""
    chars = sum(len(str(m.get("content", ""))) for m in rec.body.get("messages", []))
    return reply_json({"reason": "clear", "score": 4}, prompt_tokens=chars // 4, completion_tokens=20)(
        server, request, rec)


def slow(seconds: float):
    async def behave(server, request, rec):
        await asyncio.sleep(seconds)
        return await GOOD(server, request, rec)

    return behave


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not met in {timeout:g} s: {what}")
        await asyncio.sleep(0.2)


def query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())


class Fleet:
    """N replicas as subprocesses: ``serve -c`` with a config of their own, stopped by PID."""

    def __init__(self, tmp_path: Path, redis_url: str, store_url: str, judge_urls: list[str], *,
                 sampling: dict[str, Any], judge: dict[str, Any] | None = None,
                 fleet: dict[str, Any] | None = None) -> None:
        self.tmp_path = tmp_path
        self.redis_url = redis_url
        self.store_url = store_url
        self.judge_urls = judge_urls
        self.sampling = sampling
        self.judge = judge or {}
        self.fleet = fleet or {}
        n = len(judge_urls)
        self.http = [free_port() for _ in range(n)]
        self.admin = [free_port() for _ in range(n)]
        self.procs: list[asyncio.subprocess.Process | None] = [None] * n
        self.providers = [provider_with(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{p}/v1/traces"))
                          for p in self.http]

    def config(self, i: int) -> dict[str, Any]:
        return {
            "receivers": {"http": {"port": self.http[i]}, "grpc": {"enabled": False}},
            "admin": {"port": self.admin[i]},
            "assembly": {"decision_wait_seconds": 0.2},
            "judge": {"base_url": self.judge_urls[i], "model": "judge-model", "api_key": "sk-test",
                      "timeout_seconds": 60, "max_concurrency": 8, **self.judge},
            "evaluation": {"metrics": ["coherence"], "combine_metrics": False, "workers": 8},
            "sampling": self.sampling,
            "fleet": {"redis_url": self.redis_url, "replica_id": f"r{i}", "timeout_seconds": 0.5,
                      "sync_seconds": 0.2, "heartbeat_seconds": 0.5, **self.fleet},
            "exporters": {"store": {"url": self.store_url, "flush_interval_seconds": 0.1, "lease_seconds": 3,
                                    "backlog_flush_seconds": 0.1}},
            "shutdown_deadline_seconds": 5,
        }

    async def start(self, i: int) -> None:
        path = self.tmp_path / f"replica-{i}.yaml"
        path.write_text(json.dumps(self.config(i)))
        log = (self.tmp_path / f"replica-{i}.log").open("ab")
        self.procs[i] = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor.cli", "serve", "-c", str(path), cwd=self.tmp_path,
            stdout=log, stderr=log)
        log.close()
        proc = self.procs[i]
        assert proc is not None
        try:
            await wait_ready(self.admin[i], proc)
        except AssertionError:
            raise AssertionError(f"replica {i} not ready: {self.log(i)}") from None

    def log(self, i: int) -> str:
        path = self.tmp_path / f"replica-{i}.log"
        return path.read_text()[-3000:] if path.exists() else ""

    async def start_all(self) -> None:
        await asyncio.gather(*(self.start(i) for i in range(len(self.procs))))

    async def stop(self, i: int, sig: int = signal.SIGTERM) -> int | None:
        proc, self.procs[i] = self.procs[i], None
        if proc is None or proc.returncode is not None:
            return None
        proc.send_signal(sig)
        return await proc.wait()

    async def stop_all(self) -> None:
        for provider in self.providers:
            await asyncio.to_thread(provider.shutdown)
        await asyncio.gather(*(self.stop(i) for i in range(len(self.procs))))

    def send(self, i: int, conversation: str, turn: int) -> str:
        return emit_genai_turn(self.providers[i], conversation, f"Question {turn} of {conversation}?",
                               f"Answer {turn}.")

    async def flush(self) -> None:
        for provider in self.providers:
            assert await asyncio.to_thread(provider.force_flush, 10_000)

    async def api(self, i: int, path: str) -> Any:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{self.admin[i]}{path}") as r:
            assert r.status == 200, await r.text()
            return await r.json()

    async def metrics(self, i: int) -> str:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{self.admin[i]}/metrics") as r:
            return await r.text()


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture
async def judge():
    async with JudgeServer(default=GOOD) as server:
        yield server


async def test_conversations_spread_over_replicas_are_evaluated_whole_and_weighted(
        tmp_path, redis_server, postgres_url, judge):
    # A fleet cap that sheds: 8 conversations/s with bursts of 16 (each replica holds a third), against
    # 12 new conversations per second of 1-8 turns; ~60 kept, so the estimate's noise is a few per cent.
    sampling = {"policies": [{"type": "rate_limit", "conversations_per_second": 8, "burst": 16,
                              "adjust_seconds": 2}], "weight_interval_seconds": 1}
    fleet = Fleet(tmp_path, redis_server.url, postgres_url, [judge.base_url] * 3, sampling=sampling)
    rng = random.Random(11)
    sent_turns = 0
    where: dict[str, int] = {}  # trace id -> replica it was sent to
    turns_of: dict[str, int] = {}
    try:
        await fleet.start_all()
        open_: dict[str, int] = {}
        for tick in range(32):  # 0.25 s ticks: 8 s of traffic, 3 new conversations a tick
            for _ in range(3):
                c = f"conv-{tick}-{rng.random():.6f}"
                open_[c] = rng.randint(1, 8)
                turns_of[c] = open_[c]
            for c in list(open_):
                replica = rng.randrange(3)  # each turn to any replica
                where[fleet.send(replica, c, turns_of[c] - open_[c])] = replica
                sent_turns += 1
                open_[c] -= 1
                if not open_[c]:
                    del open_[c]
            await asyncio.sleep(0.25)
        while open_:  # finish the conversations still talking
            for c in list(open_):
                where[fleet.send(rng.randrange(3), c, turns_of[c] - open_[c])] = 0
                sent_turns += 1
                open_[c] -= 1
                if not open_[c]:
                    del open_[c]
        await fleet.flush()

        async def settled() -> bool:
            texts = [await fleet.metrics(i) for i in range(3)]
            assembled = sum(metric(t, "rag_monitor_turns_assembled_total") for t in texts)
            held = sum(metric(t, "rag_monitor_weights_held") for t in texts)
            evaluated = sum(metric(t, "rag_monitor_evaluations_total") for t in texts)
            stored = query(postgres_url, "SELECT count(*) FROM results")[0][0]
            return assembled == sent_turns and held == 0 and evaluated > 0 and stored == evaluated

        await until(settled, what="every turn assembled, evaluated and stored")
        rows = query(postgres_url, "SELECT conversation_id, trace_id, weight FROM results")
        evaluated_turns: dict[str, int] = {}
        for conversation, _, _ in rows:
            evaluated_turns[conversation] = evaluated_turns.get(conversation, 0) + 1
        partial = {c: (n, turns_of[c]) for c, n in evaluated_turns.items() if n != turns_of[c]}
        assert not partial, f"conversations evaluated in part: {partial}"
        assert 0 < len(evaluated_turns) < len(turns_of), "the cap should keep some conversations, not all"
        estimate = sum(w for _, _, w in rows)
        assert abs(estimate - sent_turns) / sent_turns < 0.15, (estimate, sent_turns, len(rows))
        # The yardstick: without post-stratification the kept turns of the first interval weigh 1.
        texts = [await fleet.metrics(i) for i in range(3)]
        assert sum(metric(t, "rag_monitor_fleet_decisions_total", source="fleet") for t in texts) > 0
        assert sum(metric(t, "rag_monitor_sampling_decisions_total", decision="shed") for t in texts) > 0

        # Every replica's API shows the fleet: replica 0 lists a turn evaluated on replica 2, and
        # every /api/summary counts the fleet's evaluations.
        on_two = [t for _, t, _ in rows if where.get(t) == 2]
        assert on_two
        listed = await fleet.api(0, "/api/evaluations?limit=1000")
        listed_ids = {e["trace_id"] for e in listed["items"]}
        assert set(on_two) <= listed_ids

        async def summaries_agree() -> bool:
            counts = []
            for i in range(3):
                summary = await fleet.api(i, "/api/summary")
                window = summary["metrics"]["coherence"]["windows"][summary["longest_window"]]
                counts.append(window["evaluations"] + window["errors"] + window["skipped"])
            return counts == [len(rows)] * 3

        await until(summaries_agree, timeout=20, what="every replica's summary counts the fleet")
    finally:
        await fleet.stop_all()


async def test_one_judge_budget_for_the_fleet(tmp_path, redis_server, postgres_url):
    # 3 replicas, each with more work than the whole budget allows in a minute; the judge reports the
    # prompt's real size (within the client's estimate, which is charged before the call).
    judge = JudgeServer(default=counted)
    await judge.__aenter__()
    sampling = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
    fleet = Fleet(tmp_path, redis_server.url, postgres_url, [judge.base_url] * 3, sampling=sampling,
                  judge={"tokens_per_minute": 5000, "on_budget_exhausted": "shed"})
    try:
        await fleet.start_all()
        for i in range(3):
            for n in range(20):
                fleet.send(i, f"budget-{i}-{n}", 0)
        await fleet.flush()

        async def all_decided() -> bool:
            texts = [await fleet.metrics(i) for i in range(3)]
            return sum(metric(t, "rag_monitor_evaluations_total") for t in texts) == 60

        await until(all_decided, what="every turn evaluated or shed by the budget")
        texts = [await fleet.metrics(i) for i in range(3)]
    finally:
        await fleet.stop_all()
        await judge.__aexit__(None, None, None)
    spent = sum(sum(len(str(m.get("content", ""))) for m in r.body["messages"]) // 4 + 20 for r in judge.requests)
    assert judge.requests, "some calls fit the budget"
    assert spent <= 5000, f"{spent} tokens reached the judge within one minute (budget 5,000 for the fleet)"
    # Demand was three replicas' worth: the rest was refused by the fleet's budget, not sent.
    assert sum(metric(t, "rag_monitor_judge_requests_total", outcome="budget_exhausted") for t in texts) > 0


async def test_redis_stopped_mid_run_loses_no_accepted_turn(tmp_path, redis_server, postgres_url, judge):
    sampling = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
    fleet = Fleet(tmp_path, redis_server.url, postgres_url, [judge.base_url] * 3, sampling=sampling)
    try:
        await fleet.start_all()
        for n in range(10):
            fleet.send(n % 3, f"before-{n}", 0)
        await fleet.flush()
        await redis_server.stop()
        outage_began = time.monotonic()
        for n in range(30):
            fleet.send(n % 3, f"during-{n}", 0)
        await fleet.flush()

        async def degraded() -> bool:
            docs = [await fleet.api(i, "/api/pipeline") for i in range(3)]
            return all(d["fleet"]["degraded"] for d in docs)

        await until(degraded, timeout=20, what="every replica says the fleet is degraded")
        async with aiohttp.ClientSession() as s:
            for port in fleet.admin:
                async with s.get(f"http://127.0.0.1:{port}/readyz") as r:
                    assert r.status == 200
        finding = (await fleet.api(0, "/api/pipeline"))["findings"][0]
        assert finding["code"] == "fleet_degraded"
        # The outage: Redis away for 30 s, traffic and judge calls going on meanwhile.
        await asyncio.sleep(max(0.0, 30.0 - (time.monotonic() - outage_began)))
        async with aiohttp.ClientSession() as s:
            for port in fleet.admin:
                async with s.get(f"http://127.0.0.1:{port}/readyz") as r:
                    assert r.status == 200
        await redis_server.start()
        for n in range(10):
            fleet.send(n % 3, f"after-{n}", 0)
        await fleet.flush()

        async def all_stored() -> bool:
            return query(postgres_url, "SELECT count(*) FROM results")[0][0] == 50

        await until(all_stored, what="all 50 turns evaluated and stored")

        async def healthy() -> bool:
            docs = [await fleet.api(i, "/api/pipeline") for i in range(3)]
            return not any(d["fleet"]["degraded"] for d in docs)

        await until(healthy, timeout=20, what="the fleet recovers")
        texts = [await fleet.metrics(i) for i in range(3)]
        assert sum(metric(t, "rag_monitor_fleet_decisions_total", source="local") for t in texts) >= 30
        assert sum(metric(t, "rag_monitor_queue_dropped_total") for t in texts) == 0
    finally:
        await fleet.stop_all()


async def test_a_killed_replicas_backlog_is_finished_by_the_others_once(tmp_path, redis_server, postgres_url):
    sampling = {"policies": [{"type": "probabilistic", "rate": 1.0}]}
    n = 12
    async with JudgeServer(default=slow(120.0)) as stuck, JudgeServer(default=GOOD) as good:
        fleet = Fleet(tmp_path, redis_server.url, postgres_url, [good.base_url, good.base_url, stuck.base_url],
                      sampling=sampling)
        try:
            await fleet.start_all()
            traces = {fleet.send(2, f"doomed-{k}", 0) for k in range(n)}
            await fleet.flush()

            async def durable() -> bool:
                return query(postgres_url, "SELECT count(*) FROM pending")[0][0] == n

            await until(durable, what="replica 2's sampled turns are in the fleet's backlog")
            await fleet.stop(2, signal.SIGKILL)

            async def finished() -> bool:
                stored = query(postgres_url, "SELECT count(*) FROM results")[0][0]
                pending = query(postgres_url, "SELECT count(*) FROM pending")[0][0]
                return stored == n and pending == 0

            await until(finished, timeout=60, what="the others evaluate the dead replica's backlog")
            rows = query(postgres_url, "SELECT trace_id, count(*) FROM results GROUP BY trace_id")
            assert {r[0] for r in rows} == traces and all(r[1] == 1 for r in rows)
            scores = query(postgres_url, "SELECT count(*), count(DISTINCT result_id) FROM scores")[0]
            assert scores[0] == scores[1] == n  # one coherence score per turn
            assert len(good.requests) == n  # each claimed turn judged once by the survivors
            texts = [await fleet.metrics(i) for i in range(2)]
            assert sum(metric(t, "rag_monitor_backlog_total", event="claimed") for t in texts) == n
        finally:
            await fleet.stop_all()

