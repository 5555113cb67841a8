"""The status page's review view in headless Chromium, driven over the DevTools protocol: a real
sidecar judges turns with a scripted judge, the page lists them for review only when a review
token is configured, the reviewer types that token (never in the page) and agrees, disagrees or
gives a value, and the verdicts reach the sidecar's agreement figures and leave the queue."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from tests.admin.dom import CHROMIUM
from tests.feedback.harness import (READ_TOKEN, REVIEW_TOKEN, App, Results, feedback_config, get_json, store_path,
                                    until_async)
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.pipeline import RecordingSink

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"headless Chromium not installed at {CHROMIUM} (Debian package chromium)")

PNG = b"\x89PNG\r\n\x1a\n"
DEFECT = {"reason": "jumps between topics", "score": 2}  # coherence < 3: a defect
PASS = {"reason": "clear and ordered", "score": 4}


class Browser:
    """Headless Chromium with one page, over the DevTools protocol (a websocket). Console messages,
    uncaught exceptions and CSP refusals are collected in ``problems``."""

    def __init__(self, profile: Path) -> None:
        self._profile = profile
        self.problems: list[str] = []
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

    async def __aenter__(self) -> Browser:
        self._proc = await asyncio.create_subprocess_exec(
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--remote-debugging-port=0", "--remote-allow-origins=*", f"--user-data-dir={self._profile}",
            "--window-size=1400,2400", "--hide-scrollbars", "about:blank",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        assert self._proc.stderr is not None
        endpoint = await asyncio.wait_for(self._devtools_line(), 30)
        port = int(re.search(r"ws://127\.0\.0\.1:(\d+)/", endpoint).group(1))  # type: ignore[union-attr]
        self._drain = asyncio.create_task(self._proc.stderr.read())  # keep the pipe from filling
        self._session = aiohttp.ClientSession()
        async with self._session.get(f"http://127.0.0.1:{port}/json/list") as r:
            target = next(t for t in await r.json() if t["type"] == "page")
        self._ws = await self._session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        for domain in ("Page", "Runtime", "Log"):
            await self.send(f"{domain}.enable")
        return self

    async def _devtools_line(self) -> str:
        assert self._proc.stderr is not None
        while line := (await self._proc.stderr.readline()).decode(errors="replace"):
            if "DevTools listening on" in line:
                return line
        raise AssertionError("Chromium exited before opening DevTools")

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()
        self._reader.cancel()
        await self._session.close()
        self._proc.kill()
        await self._proc.wait()
        self._drain.cancel()

    async def _read(self) -> None:
        async for message in self._ws:
            data = json.loads(message.data)
            if "id" in data:
                self._waiting.pop(data["id"]).set_result(data)
            elif data.get("method") == "Runtime.consoleAPICalled":
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in data["params"]["args"])
                self.problems.append(f"console.{data['params']['type']}: {args}")
            elif data.get("method") == "Runtime.exceptionThrown":
                self.problems.append("exception: " + json.dumps(data["params"]["exceptionDetails"])[:500])
            elif data.get("method") == "Log.entryAdded" and data["params"]["entry"]["level"] in ("error", "warning"):
                entry = data["params"]["entry"]
                # The page asks for no favicon; anything else logged (a CSP refusal) is a problem.
                if "favicon" not in entry.get("url", ""):
                    self.problems.append(f"log.{entry['level']}: {entry['text']}")

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        await self._ws.send_str(json.dumps({"id": self._next, "method": method, "params": params or {}}))
        reply = await asyncio.wait_for(future, 30)
        assert "error" not in reply, reply
        return reply["result"]

    async def js(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True})
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    async def until(self, expression: str, timeout: float = 30.0) -> Any:
        """Waits for ``expression`` to be truthy in the page."""
        async def _wait() -> Any:
            while not (value := await self.js(expression)):
                await asyncio.sleep(0.05)
            return value

        return await asyncio.wait_for(_wait(), timeout)

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", {"url": url})
        await self.until("document.readyState === 'complete'")

    async def screenshot(self, path: Path) -> bytes:
        shot = base64.b64decode((await self.send("Page.captureScreenshot", {"format": "png"}))["data"])
        path.write_bytes(shot)
        return shot


CARDS = "[...document.querySelectorAll('[data-field=review-item]')]"


def card(trace_id: str) -> str:
    return f"document.querySelector('[data-field=review-item][data-trace=\"{trace_id}\"]')"


async def judged_sidecar(judge: JudgeServer, tmp_path: Path, admin: dict[str, Any], n: int) -> tuple[Sidecar, list[str]]:
    """A started sidecar that judged ``n`` turns (defect, pass, defect, …), all in its store."""
    results = Results()
    sidecar = Sidecar(feedback_config(judge.base_url, store=store_path(tmp_path), admin=admin), sink=RecordingSink(),
                      registry=CollectorRegistry(), result_consumers=[results])
    await sidecar.start()
    app = App(sidecar.http.port)
    traces = []
    try:
        for i in range(n):
            judge.script(reply_json(DEFECT if i % 2 == 0 else PASS))
            traces.append(app.turn())
            await app.flush()
            await results.wait_for(traces[-1])  # one at a time: the scripted replies go in order
    finally:
        await app.close()
    token = admin.get("bearer_token")

    async def all_stored() -> bool:
        status, doc = await get_json(sidecar, "/api/review", token)
        return status == 200 and doc["count"] == n

    await until_async(all_stored)
    return sidecar, traces


async def test_a_reviewer_agrees_disagrees_and_gives_a_value_from_the_page(tmp_path: Path) -> None:
    admin = {"bearer_token": READ_TOKEN, "review_token": REVIEW_TOKEN}
    async with JudgeServer(default=reply_json(PASS)) as judge:
        sidecar, traces = await judged_sidecar(judge, tmp_path, admin, 4)
        try:
            async with Browser(tmp_path / "profile") as browser:
                await browser.open(f"http://127.0.0.1:{sidecar.admin.port}/#token={READ_TOKEN}")
                await browser.until(f"{CARDS}.length === 4")
                assert await browser.js("document.getElementById('review-head').hidden") is False
                # Each card: the judge's verdict, value, reason and model, and its inclusion probability.
                first = await browser.js(f"{card(traces[0])}.innerText")
                assert "judge: defect 2 on 1\u20135" in first and "jumps between topics" in first
                assert "judge-model" in first and "drawn with p = 1" in first
                assert "judge: pass 4 on 1\u20135" in await browser.js(f"{card(traces[1])}.innerText")
                # The write token is nowhere in the page until typed, and not kept after.
                assert REVIEW_TOKEN not in await browser.js("document.documentElement.outerHTML")

                # No token typed yet: nothing is sent, the page says why.
                await browser.js(f"{card(traces[0])}.querySelector('[data-action=agree]').click()")
                assert "review token" in await browser.js("document.getElementById('review-message').textContent")

                # A wrong token: the sidecar refuses it, the card stays.
                await browser.js("document.getElementById('review-token').value = 'not-the-token';"
                                 "document.getElementById('reviewer').value = 'ana@example.com';"
                                 "document.getElementById('review-form').requestSubmit()")
                await browser.js(f"{card(traces[0])}.querySelector('[data-action=agree]').click()")
                await browser.until("document.getElementById('review-message').textContent.startsWith('HTTP 401')")
                assert await browser.js(f"{card(traces[0])}.dataset.sent") is None

                await browser.js(f"document.getElementById('review-token').value = '{REVIEW_TOKEN}';"
                                 "document.getElementById('review-form').requestSubmit()")
                assert await browser.js("document.getElementById('review-token').value") == ""
                await browser.js(f"{card(traces[0])}.querySelector('[data-action=agree]').click()")
                await browser.js(f"{card(traces[1])}.querySelector('[data-action=disagree]').click()")
                await browser.js(f"{card(traces[2])}.querySelector('[data-field=value-input]').value = '5';"
                                 f"{card(traces[2])}.querySelector('[data-action=value]').click()")
                await browser.until(f"{CARDS}.filter(c => c.dataset.sent).length === 3")
                sent = await browser.js(f"Object.fromEntries({CARDS}.map(c => [c.dataset.trace, c.dataset.sent || '']))")
                assert sent == {traces[0]: "agree", traces[1]: "disagree", traces[2]: "value", traces[3]: ""}
                # Defects and passes interleaved, the newest of each first.
                assert await browser.js(f"{CARDS}.map(c => c.dataset.stratum)") == ["defect", "pass", "defect", "pass"]
                assert "sent: agree" in await browser.js(f"{card(traces[0])}.innerText")
                assert REVIEW_TOKEN not in await browser.js("document.documentElement.outerHTML")

                # The sidecar joined them with the judge: agree on turn 0; disagree on turn 1 (the
                # person calls a pass a defect) and on turn 2 (5 is a pass, the judge said defect).
                async def three_verdicts() -> Any:
                    status, doc = await get_json(sidecar, "/api/agreement", READ_TOKEN)
                    coherence = doc.get("metrics", {}).get("coherence", {}) if status == 200 else {}
                    return coherence if coherence.get("n") == 3 else None

                coherence = await until_async(three_verdicts)
                assert coherence["agree"] == 1

                # Reloaded, the queue holds only the turn nobody reviewed.
                await browser.js("document.getElementById('review-reload').click()")
                await browser.until(f"{CARDS}.length === 1")
                assert await browser.js(f"{CARDS}[0].dataset.trace") == traces[3]
                assert (await browser.screenshot(tmp_path / "review.png")).startswith(PNG)
                assert [p for p in browser.problems if "401" not in p] == [], browser.problems
        finally:
            await sidecar.shutdown()


async def test_without_a_review_token_the_page_has_no_review_view(tmp_path: Path) -> None:
    async with JudgeServer(default=reply_json(PASS)) as judge:
        sidecar, _ = await judged_sidecar(judge, tmp_path, {}, 2)
        try:
            async with Browser(tmp_path / "profile") as browser:
                await browser.open(f"http://127.0.0.1:{sidecar.admin.port}/")
                # The queue was read (writable: false) and the page settled.
                await browser.until("'review-message' in shown && document.getElementById('status')"
                                    ".textContent.startsWith('updated')")
                hidden = await browser.js("['review-head', 'review-form', 'review']"
                                          ".map(id => document.getElementById(id).hidden)")
                assert hidden == [True, True, True]
                assert await browser.js(f"{CARDS}.length") == 0
                assert await browser.js("document.getElementById('review-message').textContent") == ""
                assert browser.problems == []
        finally:
            await sidecar.shutdown()
