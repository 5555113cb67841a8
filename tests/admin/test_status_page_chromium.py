"""The status page rendered by headless Chromium: its numbers are the API's, every metric says its
scale, direction and defect rule, the pipeline strip tells an empty page from broken ingest, the
worst turns are one per turn with reasons and documents and follow the metric filter, times carry
their zone, hostile text stays text, and the token path works."""

from __future__ import annotations

import os

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from exporters.evaluation_metrics import PrometheusSamplingTelemetry
from exporters.prometheus import PrometheusTelemetry
from exporters.turn_queries import OutcomeReason, StoredDocument
from monitor.admin.diagnosis import Setting
from monitor.admin.health import PipelineStatus
from monitor.admin.pipeline import PipelineHealth
from monitor.assembly.assembler import TRACES_WITHOUT_TURN, TURNS_ASSEMBLED
from monitor.evaluation.catalogue import metric_catalogue
from monitor.evaluation.config import EvaluationConfig
from monitor.receivers.ingest import SPANS_RECEIVED
from tests.admin.dom import CHROMIUM, Node, Page, dump_dom
from tests.admin.doubles import (
    HOSTILE,
    NOW,
    FakeStore,
    FakeSummary,
    admin_server,
    page_mean,
    page_num,
    page_pct,
    page_rate,
    point,
    stored_turn,
    window,
)
from tests.admin.real_parts import real_sources

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"headless Chromium not installed at {CHROMIUM} (Debian package chromium)")

G, UNIT, SEV = (1.0, 5.0), (0.0, 1.0), (0.0, 7.0)
CATALOGUE = metric_catalogue(EvaluationConfig(metrics=("groundedness", "f1_score", "violence", "coherence")),
                             judge_enabled=True)


def fixture_summary() -> FakeSummary:
    # groundedness: a regression in the middle of the hour; f1: one point; violence: steady, clean.
    trend = [point(NOW - 3600 + 150 * i, 20, 1 if i < 12 else 9, 4.0) for i in range(24)]
    trend[5] = point(NOW - 3600 + 150 * 5, 0, 0)
    return FakeSummary(
        stats={
            "groundedness": {"5m": window("5m", 300, 40, 7, 3.4125), "1h": window("1h", 3600, 400, 20, 4.1)},
            "f1_score": {"5m": window("5m", 300, 0, 0, errors=2), "1h": window("1h", 3600, 9, 1, 0.8333333)},
            "violence": {"5m": window("5m", 300, 3, 0, 0.0), "1h": window("1h", 3600, 3, 0, 0.0)},
        },
        trends={"groundedness": trend, "f1_score": [point(NOW - 60, 1, 0, 1.0)]},
        since={"groundedness": NOW - 3500, "f1_score": NOW - 3500, "violence": NOW - 120},
    )


def fixture_store() -> FakeStore:
    docs = (StoredDocument("kb-7", "Refund policy", "Refunds take 5 to 7 business days.", 0.91),
            StoredDocument("kb-9", None, None, None))
    turns = [
        stored_turn(11, [("groundedness", "defect", 1.0, G), ("f1_score", "defect", 0.25, UNIT),
                         ("violence", "pass", 0.0, SEV)],
                    question=HOSTILE, answer="fine </script><b>bold</b>", reason="judge says <i>no</i>", documents=docs),
        stored_turn(12, [("violence", "defect", 6.0, SEV)], question="q2", answer="a2", reason="threatening"),
        stored_turn(13, [("coherence", "pass", 5.0, G)], question="q3", answer="a3", reason=None),
    ]
    reasons = [OutcomeReason("f1_score", "skipped", "no ground truth", 51, "no ground truth"),
               OutcomeReason("f1_score", "error", "JudgeTimeout", 2, "judge timed out")]
    return FakeStore([], turns=turns, reasons=reasons)


def fixture_pipeline() -> PipelineStatus:
    registry = CollectorRegistry(auto_describe=True)
    telemetry, sampling = PrometheusTelemetry(registry), PrometheusSamplingTelemetry(registry)
    telemetry.add(SPANS_RECEIVED, 120, transport="http")
    telemetry.add(TURNS_ASSEMBLED, convention="genai")
    telemetry.add(TRACES_WITHOUT_TURN, reason="no_message_content")
    sampling.decision("rate_limit", "not_sampled")
    setting = Setting("http://127.0.0.1:4318", True, "rate_limit: 0.2/s", {})
    setup = {"judge": "gpt-4o-mini at https://api.openai.com/v1", "sampling": "rate_limit: 0.2/s"}
    return PipelineStatus(PipelineHealth(registry, clock=lambda: NOW), setting, lambda: setup)


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
    assert [n.attrs["data-metric"] for n in rows] == list(summary["metrics"])
    for metric, doc in summary["metrics"].items():
        tr = dom.one("tr", data_metric=metric)
        longest = doc["windows"].get(summary["longest_window"])
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
            rising = w is not longest and w["lower"] is not None and w["lower"] > longest["upper"]
            assert bool(cell.find_all(data_field="rising")) == rising
        svg = tr.one("svg", data_field="trend")
        drawn = [p for line in svg.find_all("polyline") for p in line.attrs["points"].split()]
        drawn += svg.find_all("circle")
        scored = [p for p in doc["trend"] if p["defect_rate"] is not None]
        assert svg.attrs["data-points"] == str(len(scored)) and len(drawn) == len(scored), metric
        assert bool(svg.find_all(data_field="change")) == (doc["change"] is not None), metric
        info = doc["info"]
        if info is not None:
            assert tr.one(data_field="scale").text == f"{page_num(info['scale'][0])}\u2013{page_num(info['scale'][1])}"
            assert tr.one(data_field="rule").text == info["defect_rule"]


def check_turns(dom: Node, turns: dict) -> None:
    cards = dom.find_all("article", data_field="turn")
    assert [c.attrs["data-id"] for c in cards] == [str(i["result_id"]) for i in turns["items"]]
    for card, item in zip(cards, turns["items"]):
        assert card.one(data_field="failing").text == (", ".join(item["failing"]) or "no defect")
        assert card.one(data_field="conversation_id").text == item["conversation_id"]
        assert card.one(data_field="question").text == item["question"]
        assert card.one(data_field="answer").text == item["answer"]
        assert card.one("code", data_field="trace_id").text == item["trace_id"]
        assert sorted(li.attrs["data-score"] for li in card.find_all("li") if "data-score" in li.attrs) == sorted(
            s["metric"] for s in item["scores"])
        assert len(card.find_all(data_field="document")) == len(item["documents"])


async def test_page_shows_the_api_numbers_meanings_and_hostile_text_as_text(tmp_path):
    store = fixture_store()
    async with admin_server(summary=fixture_summary(), store=store, catalogue=CATALOGUE,
                            pipeline=fixture_pipeline()) as server:
        _, summary = await api(server.port, "/api/summary")
        _, turns = await api(server.port, "/api/turns?limit=20")
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
    check_rates(dom, summary)
    check_turns(dom, turns)
    # Rubric and severity read differently: scale, direction and rule on each row.
    g, v = dom.one("tr", data_metric="groundedness"), dom.one("tr", data_metric="violence")
    assert g.one(data_field="direction").text == "\u2191 higher is better"
    assert v.one(data_field="direction").text == "\u2191 higher is worse"
    assert v.one(data_field="rule").text == "defect when severity \u2265 4 (Medium or worse)"
    # A metric configured but never evaluated has its row; skipped evaluations and their causes show.
    assert dom.one("tr", data_metric="coherence").one("td", data_window="5m").text == "no data"
    f1 = dom.one("tr", data_metric="f1_score")
    assert f1.one(data_field="skipped").text == "0" and f1.one(data_field="errors").text == "0"
    assert [c.text for c in f1.find_all(data_field="cause")] == ["no ground truth (51)", "JudgeTimeout (2)"]
    # 5m and 1h are told apart: violence has only two minutes of data, so its 1h says so.
    assert "= 5m: data only from the last 2 min" == v.one(data_field="same-as").text
    assert not g.find_all(data_field="same-as")
    # The regression is marked on the trend, with its band.
    assert g.one(data_field="change-text").text.startswith("\u25b2 5.0% \u2192 45.0% from ")
    assert g.find_all("polygon", data_field="band")
    # Worst turns: one card per turn with all failing metrics, reasons, and documents.
    bad = dom.one("article", data_id="11")
    assert bad.one(data_field="failing").text == "groundedness, f1_score"
    assert bad.one("li", data_score="groundedness").one(data_field="reason").text == "judge says <i>no</i>"
    heads = [d.text for d in bad.find_all(data_field="document-head")]
    assert heads == ["Refund policy \u00b7 score 0.91", "kb-9"]
    assert [d.text for d in bad.find_all(data_field="document-content")] == [
        "Refunds take 5 to 7 business days.", "(no text in the spans)"]
    # The hostile question, answer and reason were rendered as text: no element came of them.
    assert not dom.find_all("img") and not dom.find_all("b") and not dom.find_all("i")
    assert len(dom.find_all("script")) == 1
    assert dom.one("head").one("title").text == "rag-monitor status"  # no script ran to retitle it
    assert HOSTILE in bad.text
    assert dom.one(data_field="status").text.startswith("updated ")
    assert all(m.text == "" for m in dom.find_all(data_field="message"))
    assert dom.one("form", id="auth").attrs.get("hidden") is not None


async def test_pipeline_strip_and_findings_tell_an_empty_page_from_broken_ingest(tmp_path):
    async with admin_server(summary=FakeSummary(stats={}), store=FakeStore([]), catalogue=CATALOGUE,
                            pipeline=fixture_pipeline()) as server:
        _, doc = await api(server.port, "/api/pipeline")
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
    strip = dom.one(data_section="pipeline")
    assert strip.one(data_stage="spans_received").one(data_field="total").text == "120"
    assert strip.one(data_stage="spans_received").one(data_field="recent").text == "120"  # young: since start
    assert strip.one(data_stage="turns_assembled").one(data_field="without-turn").text == \
        "without a turn: no_message_content 1"
    assert strip.one(data_stage="sampling").one(data_field="total").text == "0"
    assert strip.one(data_stage="sampling").one(data_field="policy").text == "rate_limit: 0.2/s"
    assert strip.one(data_stage="judge").one(data_field="circuit").text == "circuit closed"
    assert strip.one(data_stage="judge").one(data_field="model").text == "gpt-4o-mini at https://api.openai.com/v1"
    findings = {li.attrs["data-finding"]: li for li in strip.find_all("li")}
    assert list(findings) == [f["code"] for f in doc["findings"]]
    assert "{type: always}" in findings["nothing_sampled"].text
    assert findings["nothing_sampled"].attrs["class"] == "warning"
    # Every configured metric has its row, none evaluated yet, and the page points at the strip.
    assert [n.attrs["data-metric"] for n in dom.iter() if "data-metric" in n.attrs] == list(CATALOGUE)
    assert dom.one(data_field="empty").text == "no scored evaluation in this period"


async def test_metric_filter_from_the_address_and_times_in_the_named_zone(tmp_path):
    store = fixture_store()
    async with admin_server(summary=fixture_summary(), store=store, catalogue=CATALOGUE) as server:
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/#metric=violence", tmp_path / "p",
                                   time_zone="Europe/Berlin"))
    assert ("worst_turns", {"since": NOW - 3600, "metric": "violence", "limit": 20}) in store.calls
    assert [c.attrs["data-id"] for c in dom.find_all("article")] == ["11", "12"]
    select = dom.one("select", data_field="filter")
    assert [o.attrs["value"] for o in select.find_all("option") if "selected" in o.attrs] == ["violence"]
    assert dom.one(data_field="zone").text == "times in Europe/Berlin"
    when = dom.one("article", data_id="12").one(data_field="when").text
    assert "GMT+1" in when or "CET" in when, when  # 2027-01-15: winter time, zone named


async def test_token_in_the_fragment_unlocks_the_page(tmp_path):
    async with admin_server(token="s3cret t0ken", summary=fixture_summary(), store=fixture_store(),
                            catalogue=CATALOGUE) as server:
        status, _ = await api(server.port, "/api/summary")
        assert status == 401
        _, summary = await api(server.port, "/api/summary", token="s3cret t0ken")
        _, turns = await api(server.port, "/api/turns", token="s3cret t0ken")
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/#token=s3cret%20t0ken", tmp_path / "with"))
        locked = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "without"))
    check_rates(dom, summary)
    check_turns(dom, turns)
    assert "s3cret" not in str(dom.text)  # read, then dropped from the address bar; never shown
    # Without it: no data, a visible prompt for the token, the API's reason.
    assert not [n for n in locked.iter() if "data-metric" in n.attrs]
    assert not locked.find_all("article")
    assert locked.one("form", id="auth").attrs.get("hidden") is None
    messages = {m.attrs["id"]: m.text for m in locked.find_all(data_field="message")}
    assert all("HTTP 401" in m for m in messages.values()), messages
    assert sorted(messages) == ["incidents-message", "pipeline-message", "rates-message", "releases-message",
                                "worst-message"]


async def test_page_says_when_the_store_is_off_and_when_nothing_was_evaluated(tmp_path):
    async with admin_server(summary=FakeSummary(stats={})) as server:
        dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
    assert dom.one(data_field="empty").text == "no evaluations yet: see the pipeline above for why"
    messages = {m.attrs.get("id"): m.text for m in dom.find_all(data_field="message")}
    assert messages["rates-message"] == "" and "result store is off" in messages["worst-message"]
    assert "not wired" in messages["pipeline-message"]


async def test_page_over_the_real_rolling_stats_and_store(tmp_path):
    async with real_sources(tmp_path) as (rolling, store, _clock):
        async with admin_server(summary=rolling, store=store, catalogue=CATALOGUE) as server:
            _, summary = await api(server.port, "/api/summary")
            _, turns = await api(server.port, "/api/turns?limit=20")
            dom = clean(await dump_dom(f"http://127.0.0.1:{server.port}/", tmp_path / "profile"))
            rows = await store.worst_turns(since=NOW - 3600, limit=20)
    check_rates(dom, summary)
    check_turns(dom, turns)
    assert [c.attrs["data-id"] for c in dom.find_all("article")] == [str(r.result_id) for r in rows]
    # An f1_score stored without a reason (results from before local evidence): the rule that made it a defect.
    f1_reasons = [li.one(data_field="reason") for li in dom.find_all("li", data_score="f1_score")]
    assert any(r.attrs["data-kind"] == "rule" and r.text == "by its rule: defect when < 0.5"
               for r in f1_reasons)
    assert not dom.find_all("img") and not dom.find_all("b") and len(dom.find_all("script")) == 1
