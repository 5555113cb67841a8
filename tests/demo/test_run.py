"""``run_demo`` in process: with a judge configured the judge tier runs too; a stop signal
mid-run still drains and reports."""

from __future__ import annotations

import asyncio
import io
import json

from monitor.config import MonitorConfig
from monitor.demo.live_table import TerminalView
from monitor.demo.report import FINAL_PREFIX
from monitor.demo.run import DemoOptions, run_demo
from monitor.demo.settings import demo_config
from tests.support.judge_server import JudgeServer, schema_reply


def _config(tmp_path, **extra: object) -> MonitorConfig:
    base = MonitorConfig.model_validate({"shutdown_deadline_seconds": 5, **extra})
    return demo_config(base, admin_port=0, scratch_dir=tmp_path)[0]


def _final(out: io.StringIO) -> dict:
    line = next(line for line in out.getvalue().splitlines() if line.startswith(FINAL_PREFIX))
    return json.loads(line[len(FINAL_PREFIX):])


async def test_with_a_judge_the_judge_metrics_are_reported_next_to_the_local_ones(tmp_path) -> None:
    async with JudgeServer(default=schema_reply({"groundedness": 2})) as judge:
        config = _config(tmp_path, judge={"base_url": judge.base_url, "model": "judge-model", "api_key": "sk-test"},
                         evaluation={"metrics": ["local_lexical_groundedness", "groundedness", "relevance"]})
        out = io.StringIO()
        outcome = await run_demo(config, DemoOptions(duration_seconds=1.5, rate_per_second=10, refresh_seconds=0.5),
                                 stop=asyncio.Event(), view=TerminalView(out, live=False))
    assert not outcome.interrupted
    final = _final(out)
    assert final == outcome.final
    turns = final["traffic"]["turns"]
    assert turns > 0 and final["turns_not_evaluated"] == 0
    assert "judge tier          on (judge-model)" in out.getvalue()
    for metric in ("local_lexical_groundedness", "groundedness", "relevance"):
        window = final["metrics"][metric]["windows"]["5m"]
        assert window["evaluations"] + window["errors"] == turns, metric
    assert final["metrics"]["groundedness"]["windows"]["5m"]["defects"] == turns  # the judge said 2 < 3
    assert judge.requests


async def test_a_stop_mid_run_drains_reports_and_says_interrupted(tmp_path) -> None:
    stop = asyncio.Event()
    out = io.StringIO()

    class StopOnFirstTable(TerminalView):
        def show(self, lines):  # called from a worker thread
            super().show(lines)
            loop.call_soon_threadsafe(stop.set)

    loop = asyncio.get_running_loop()
    outcome = await run_demo(_config(tmp_path), DemoOptions(rate_per_second=20, refresh_seconds=0.3, linger_seconds=30),
                             stop=stop, view=StopOnFirstTable(out, live=False))
    assert outcome.interrupted and outcome.final["interrupted"]
    assert outcome.final["turns_not_evaluated"] == 0
    assert outcome.final["traffic"]["turns"] == outcome.final["turns_evaluated"] > 0
    assert "admin server stays up" not in out.getvalue()


async def test_the_status_page_outlives_a_timed_run_until_a_stop(tmp_path) -> None:
    """``--duration`` then no ``--linger``: on a terminal the page stays up until Ctrl-C."""
    import aiohttp

    stop = asyncio.Event()
    out = io.StringIO()
    lingering = asyncio.Event()

    class Watch(TerminalView):
        def message(self, lines):  # called from a worker thread
            super().message(lines)
            if any("stays up until Ctrl-C" in line for line in lines):
                loop.call_soon_threadsafe(lingering.set)

    loop = asyncio.get_running_loop()
    config = _config(tmp_path)
    run = asyncio.create_task(run_demo(config, DemoOptions(duration_seconds=2, rate_per_second=10,
                                                           refresh_seconds=0.5, linger_seconds=None),
                                       stop=stop, view=Watch(out, live=False)))
    await asyncio.wait_for(lingering.wait(), 60)
    admin = [ln for ln in out.getvalue().splitlines() if ln.startswith("status page")][0].split()[-1]
    async with aiohttp.ClientSession() as session:
        async with session.get(admin + "api/summary") as r:  # served after the final summary
            assert r.status == 200 and (await r.json())["metrics"]
        await asyncio.sleep(1.0)
        assert not run.done()
        async with session.get(admin) as r:
            assert r.status == 200
    stop.set()
    outcome = await asyncio.wait_for(run, 30)
    assert outcome.final["turns_evaluated"] > 0
