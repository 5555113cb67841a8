"""The status page rendered by headless Chromium: its numbers are ``/api/summary``'s, its worst
turns are ``worst_recent``'s, hostile text stays text, and the token path works."""

from __future__ import annotations

import math
import os

import aiohttp
import pytest

from tests.admin.doubles import (
    HOSTILE,
    NOW,
    FakeStore,
    FakeSummary,
    Point,
    admin_server,
    page_mean,
    page_pct,
    page_rate,
    page_score,
    row,
    window,
)
from tests.admin.dom import CHROMIUM, Node, Page, dump_dom
from tests.admin.real_parts import real_sources

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"headless Chromium not installed at {CHROMIUM} (Debian package chromium)")


def fixture_summary() -> FakeSummary:
    trend = [Point(NOW - 3600 + 60 * i, 10, (i % 7) / 10, 4.0) for i in range(50)]
    trend[20:23] = [Point(NOW - 3600 + 60 * i, 0, math.nan, math.nan) for i in range(20, 23)]
    return FakeSummary(
        stats={
            "groundedness": {"5m": window("5m", 300, 40, 7, 3.4125), "1h": window("1h", 3600, 400, 20, 4.1)},
            "f1_score": {"5m": window("5m", 300, 0, 0, errors=2), "1h": window("1h", 3600, 9, 1, 0.8333333)},
            "violence": {"5m": window("5m", 300, 3, 0, 0.0), "1h": window("1h", 3600, 3, 0, 0.0)},
        },
        trends={"groundedness": trend, "f1_score": [Point(NOW - 60, 1, 0.0, 1.0)]},
    )


def fixture_store() -> FakeStore:
    worst = [
        row(11, question=HOSTILE, answer="fine </script><b>bold</b>", reason="judge says <i>no</i>"),
        row(12, metric="f1_score", value=0.25, scale=(0.0, 1.0), question="q2", answer="a2", reason=None),
        row(13, metric="violence", value=6.0, scale=(0.0, 7.0), question="q3", answer="a3"),
    ]
    return FakeStore(worst, worst=worst)


async def api(port: int, path: str, token: str | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as s:
        async with s.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r:
            return r.status, await r.json()


def clean(page: Page) -> Node:
    """The page ran without an uncaught error, a console message or a CSP refusal."""
    assert page.console == [], page.console
    return page.dom


def check_rates(dom: Node, summary: dict) -> None:
    rows = [n for n in dom.iter() if "data-metric" in n.attrs]
    assert sorted(n.attrs["data-metric"] for n in rows) == sorted(summary["metrics"])
    for metric, doc in summary["metrics"].items():
        tr = dom.one("tr", data_metric=metric)
        longest = doc["windows"][summary["trend_window"]]
        for name, w in doc["windows"].items():
            cell = tr.one("td", data_window=name)
            assert cell.one(data_field="defect_rate").text == page_rate(w["defect_rate"]), (metric, name)
            assert cell.one(data_field="n").text == str(w["evaluations"])
            assert cell.one(data_field="mean").text == page_mean(w["mean"])
            if w["lower"] is None:
                assert not cell.find_all(data_field="lower") and not cell.find_all(data_field="upper")
            else:
                assert cell.one(data_field="lower").text == page_pct(w["lower"])
                assert cell.one(data_field="upper").text == page_pct(w["upper"])
            errors = cell.find_all(data_field="errors")
            assert [e.text for e in errors] == ([str(w["errors"])] if w["errors"] else [])
            rising = w is not longest and w["lower"] is not None and w["lower"] > longest["upper"]
            assert bool(cell.find_all(data_field="rising")) == rising
        svg = tr.one("svg", data_field="trend")
        drawn = [p for line in svg.find_all("polyline") for p in line.attrs["points"].split()]
        drawn += svg.find_all("circle")
        scored = [p for p in doc["trend"] if p["defect_rate"] is not None]
        assert svg.attrs["data-points"] == str(len(scored)) and len(drawn) == len(scored), metric


def check_worst(dom: Node, worst: dict) -> None:
    cards = dom.find_all("article", data_field="turn")
    assert [c.attrs["data-id"] for c in cards] == [str(i["id"]) for i in worst["items"]]
    for card, item in zip(cards, worst["items"]):
        assert card.one(data_field="metric").text == item["metric"]
        assert card.one(data_field="outcome").text == item["outcome"]
        assert card.one(data_field="conversation_id").text == item["conversation_id"]
        assert card.one(data_field="score").text == page_score(item)
        assert card.one(data_field="question").text == item["question"]
        assert card.one(data_field="answer").text == item["answer"]
        assert card.one(data_field="reason").text == (item["reason"] if item["reason"] is not None else "\u2013")
        assert card.one("code", data_field="trace_id").text == item["trace_id"]


async def test_page_shows_the_api_numbers_and_hostile_text_as_text(tmp_path):
    store = fixture_store()
    async with admin_server(summary=fixture_summary(), store=store) as server:
        _, summary = await api(server.port, "/api/summary")
        _, worst = await api(server.port, "/api/worst?limit=20")
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
    check_rates(dom, summary)
    check_worst(dom, worst)
    assert store.calls[-1] == ("worst_recent", {"since": NOW - 3600, "limit": 20})
    # The hostile question, answer and reason were rendered as text: no element came of them.
    assert not dom.find_all("img") and not dom.find_all("b") and not dom.find_all("i")
    assert len(dom.find_all("script")) == 1
    assert dom.one("head").one("title").text == "rag-monitor status"  # no script ran to retitle it
    assert HOSTILE in dom.one("article", data_id="11").text
    assert dom.one(data_field="status").text.startswith("updated ")
    assert all(m.text == "" for m in dom.find_all(data_field="message"))
    assert dom.one("form").attrs.get("hidden") is not None


async def test_token_in_the_fragment_unlocks_the_page(tmp_path):
    async with admin_server(token="s3cret t0ken", summary=fixture_summary(), store=fixture_store()) as server:
        status, _ = await api(server.port, "/api/summary")
        assert status == 401
        _, summary = await api(server.port, "/api/summary", token="s3cret t0ken")
        _, worst = await api(server.port, "/api/worst", token="s3cret t0ken")
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/#token=s3cret%20t0ken", tmp_path / "with"))
        locked = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "without"))
    check_rates(dom, summary)
    check_worst(dom, worst)
    assert "s3cret" not in str(dom.text)  # read, then dropped from the address bar; never shown
    # Without it: no data, a visible prompt for the token, the API's reason.
    assert not [n for n in locked.iter() if "data-metric" in n.attrs]
    assert not locked.find_all("article")
    assert locked.one("form").attrs.get("hidden") is None
    assert all("HTTP 401" in m.text for m in locked.find_all(data_field="message"))


async def test_page_says_when_the_store_is_off_and_when_nothing_was_evaluated(tmp_path):
    async with admin_server(summary=FakeSummary(stats={})) as server:
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
    assert dom.one(data_field="empty").text == "no evaluations yet"
    messages = [m.text for m in dom.find_all(data_field="message")]
    assert messages[0] == "" and "result store is off" in messages[1]


async def test_page_over_the_real_rolling_stats_and_store(tmp_path):
    async with real_sources(tmp_path) as (rolling, store, _clock):
        async with admin_server(summary=rolling, store=store) as server:
            _, summary = await api(server.port, "/api/summary")
            _, worst = await api(server.port, "/api/worst?limit=20")
            dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
            rows = await store.worst_recent(since=NOW - 3600, limit=20)
    check_rates(dom, summary)
    check_worst(dom, worst)
    assert [c.attrs["data-id"] for c in dom.find_all("article")] == [str(r.id) for r in rows]
    assert not dom.find_all("img") and not dom.find_all("b") and len(dom.find_all("script")) == 1
