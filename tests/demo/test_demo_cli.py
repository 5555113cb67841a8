"""``rag-monitor demo`` as a process: a full timed run checked against ``/api/summary``, Ctrl-C,
usage errors."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sys
from typing import Any

import aiohttp

from monitor.demo.report import FINAL_PREFIX
from monitor.demo.traffic import AFTER, BEFORE

COUNTS = ("evaluations", "defects", "errors", "skipped")
RATES = ("defect_rate", "lower", "upper", "mean", "weight", "defect_weight", "effective_n")
# Local metrics that score every turn (never skipped for these turns).
EVERY_TURN = ("local_jailbreak_attempt", "local_offensive_language", "local_lexical_groundedness")


class Demo:
    """The demo subprocess; stderr is drained in the background so a chatty run cannot block."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.stdout: list[str] = []
        self._stderr = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]

    @classmethod
    async def start(cls, *args: str) -> "Demo":
        # The run must not depend on the developer's RAG_MONITOR_* settings.
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_MONITOR_")}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "monitor.cli", "demo", *args, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        return cls(proc)

    async def line_starting(self, prefix: str, timeout: float) -> str:
        async def read() -> str:
            assert self.proc.stdout is not None
            while True:
                raw = await self.proc.stdout.readline()
                assert raw, f"demo ended before a line starting {prefix!r}:\n" + "\n".join(self.stdout)
                line = raw.decode().rstrip("\n")
                self.stdout.append(line)
                if line.startswith(prefix):
                    return line

        return await asyncio.wait_for(read(), timeout)

    async def finish(self, timeout: float) -> tuple[int, str]:
        assert self.proc.stdout is not None
        rest = await asyncio.wait_for(self.proc.stdout.read(), timeout)
        self.stdout += rest.decode().splitlines()
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        return code, (await self._stderr).decode()

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0, abs_tol=1e-9)


async def test_timed_demo_prints_what_the_api_serves_and_shows_the_regression() -> None:
    demo = await Demo.start("--duration", "30", "--rate", "10", "--admin-port", "0", "--linger", "8", "--seed", "3")
    try:
        line = await demo.line_starting(FINAL_PREFIX, timeout=75)
        final = json.loads(line[len(FINAL_PREFIX):])
        async with aiohttp.ClientSession() as session:
            async with session.get(final["admin_url"] + "api/summary") as response:
                assert response.status == 200, await response.text()
                api = await response.json()
        code, err = await demo.finish(timeout=30)
    finally:
        demo.kill()
    assert code == 0, err
    assert "Traceback" not in err, err
    assert not final["interrupted"]

    # The printed numbers are the API's, metric by metric and window by window.
    assert api["windows"] == final["windows"]
    # The API also lists the configured metrics that never ran (the judge tier without a judge).
    assert {m for m, e in api["metrics"].items() if e["windows"]} == set(final["metrics"])
    assert all(not e["info"]["enabled"] for m, e in api["metrics"].items() if m not in final["metrics"])
    for metric, entry in final["metrics"].items():
        assert set(entry["windows"]) == set(api["metrics"][metric]["windows"]), metric
        for window, printed in entry["windows"].items():
            served = api["metrics"][metric]["windows"][window]
            for key in COUNTS:
                assert printed[key] == served[key], (metric, window, key)
            for key in RATES:
                assert _same(printed[key], served[key]), (metric, window, key, printed[key], served[key])

    # Every turn sent was evaluated once, by every local metric that applies to it.
    traffic = final["traffic"]
    assert traffic["turns"] > 0 and traffic["spans_flushed"]
    assert final["turns_evaluated"] == traffic["turns"] and final["turns_not_evaluated"] == 0
    five = {metric: entry["windows"]["5m"] for metric, entry in final["metrics"].items()}
    for metric in EVERY_TURN:
        assert five[metric]["evaluations"] == traffic["turns"], metric
    assert five["f1_score"]["evaluations"] == traffic["with_reference"] > 0
    assert five["local_jailbreak_attempt"]["defects"] == traffic["jailbreak_attempts"] > 0
    assert five["local_offensive_language"]["defects"] >= traffic["variants"].get("rude", 0) > 0

    # The regression is visible: grounding collapses for turns sent after it.
    phases = final["metrics"]["local_lexical_groundedness"]["phases"]
    assert phases[BEFORE]["evaluations"] == traffic["turns_before_regression"] > 0
    assert phases[AFTER]["evaluations"] == traffic["turns_after_regression"] > 0
    assert phases[AFTER]["defect_rate"] > phases[BEFORE]["defect_rate"] + 0.4
    assert final["regression_at_seconds"] == 10.0 and final["regression_started_at"] is not None
    assert any(line.startswith("*** +10s REGRESSION INJECTED") for line in demo.stdout)


async def test_ctrl_c_stops_cleanly_with_exit_0() -> None:
    demo = await Demo.start("--admin-port", "0", "--rate", "20")
    try:
        await demo.line_starting("traffic ", timeout=30)
        demo.proc.send_signal(signal.SIGINT)
        code, err = await demo.finish(timeout=20)
    finally:
        demo.kill()
    assert code == 0, err  # the normal end of an unbounded demo, as for serve
    assert "Traceback" not in err, err
    final = next(line for line in demo.stdout if line.startswith(FINAL_PREFIX))
    assert json.loads(final[len(FINAL_PREFIX):])["interrupted"] is True


async def test_usage_and_config_errors_exit_2(tmp_path) -> None:
    bad = await Demo.start("--duration", "5", "--regression-at", "6")
    code, err = await bad.finish(timeout=30)
    assert code == 2 and "--regression-at" in err
    (tmp_path / "c.yaml").write_text("assembly: {decison_wait_seconds: 1}\n")
    bad = await Demo.start("-c", str(tmp_path / "c.yaml"))
    code, err = await bad.finish(timeout=30)
    assert code == 2 and "assembly.decison_wait_seconds" in err and "unknown key" in err
