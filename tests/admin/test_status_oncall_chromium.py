"""The status page as an on-call tool (issue 29), in headless Chromium with screenshots: the incident
banner names each active regression (metric, since when, before → after with its interval, the label
values that carry it, the runbook) and each release worse than the one before; a monitor without
those endpoints shows no banner and no error; metrics that are off sit on one line; every trend
shares one y-scale and a time axis; "no spans for N s" once traffic stops; turn cards carry route,
model and version.

The page's rendering is tested on documents shaped as ``/api/regressions`` and ``/api/releases``
define them (the contract of issue 29), served next to the page; then on the real admin server's
endpoints over a release board holding the engine's own records; and end to end, the demo's
regression through the real pipeline to the banner.
"""

from __future__ import annotations

import dataclasses
import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from exporters.prometheus import PrometheusTelemetry
from exporters.release_metrics import ReleaseBoard, ReleaseSnapshot, ServiceReleases
from monitor.admin.diagnosis import Setting
from monitor.admin.health import PipelineStatus
from monitor.admin.pipeline import PipelineHealth
from monitor.admin.status_page import page_response
from monitor.evaluation.catalogue import metric_catalogue
from monitor.evaluation.config import EvaluationConfig
from monitor.receivers.ingest import SPANS_RECEIVED
from monitor.regression.results import Driver, Regression, ReleaseComparison, VersionInfo
from monitor.regression_config import RUNBOOKS
from tests.admin.dom import CHROMIUM, Node, Page, dump_dom
from tests.admin.doubles import HOSTILE, NOW, FakeStore, FakeSummary, admin_server, point, stored_turn, window

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"headless Chromium not installed at {CHROMIUM} (Debian package chromium)")

PNG = b"\x89PNG\r\n\x1a\n"
RUNBOOK = "https://example.org/runbooks.md#ragmonitorqualitydefectrateregressed"


def driver(label: str, value: str, before: float, after: float, share: float, n: int) -> dict[str, Any]:
    return {"label": label, "value": value, "before": before, "after": after, "share": share, "n": n}


def regression(metric: str, statistic: str = "defect_rate", **changes: Any) -> dict[str, Any]:
    doc = {"service": "shop", "metric": metric, "statistic": statistic, "since": NOW - 240, "before": 0.17,
           "after": 0.81, "lower": 0.55, "upper": 0.72, "evidence": 4.25, "threshold": 2.0, "active": True,
           "drivers": [driver("route", "/chat/billing", 0.15, 0.9, 0.72, 120),
                       driver("model", "gpt-4o-mini", 0.17, 0.8, 0.4, 300)],
           "runbook_url": RUNBOOK}
    return {**doc, **changes}


def comparison(metric: str, regressed: bool, **changes: Any) -> dict[str, Any]:
    doc = {"service": "shop", "metric": metric, "baseline": "2.3.0", "candidate": "2.4.0", "mode": "canary",
           "n_baseline": 900, "n_candidate": 300, "defect_rate_baseline": 0.05, "defect_rate_candidate": 0.1,
           "difference": 0.05, "lower": 0.012, "upper": 0.088, "score_baseline": 0.8, "score_candidate": 0.7,
           "score_difference": -0.1, "score_lower": -0.2, "score_upper": -0.01, "regressed": regressed,
           "drivers": [driver("version", "2.4.0", 0.05, 0.1, 1.0, 300)] if regressed else []}
    return {**doc, **changes}


RELEASES = {"services": [{
    "service": "shop",
    "versions": [{"version": "2.3.0", "first_seen": NOW - 7200, "last_seen": NOW - 10, "evaluations": 900},
                 {"version": "2.4.0", "first_seen": NOW - 1800, "last_seen": NOW - 5, "evaluations": 300}],
    "comparisons": [comparison("groundedness", True),
                    comparison("f1_score", False, difference=0.004, lower=-0.03, upper=0.04)]}]}


@asynccontextmanager
async def contract_page(documents: Mapping[str, Any]) -> AsyncIterator[int]:
    """The page, and each ``/api`` path of ``documents`` answering its document (others: 404)."""
    app = web.Application()

    async def page(request: web.Request) -> web.Response:
        return page_response()

    app.router.add_get("/", page)
    for path, doc in documents.items():
        async def answer(request: web.Request, doc: Any = doc) -> web.Response:
            return web.json_response(doc)
        app.router.add_get(path, answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


async def admin_documents(**kwargs: Any) -> dict[str, Any]:
    """The real admin server's documents for the paths the page reads (the banner's aside)."""
    import aiohttp
    out: dict[str, Any] = {}
    async with admin_server(**kwargs) as server, aiohttp.ClientSession() as s:
        for path in ("/api/summary", "/api/pipeline", "/api/turns"):
            async with s.get(f"http://127.0.0.1:{server.port}{path}") as r:
                if r.status == 200:
                    out[path] = await r.json()
    return out


def clean(page: Page) -> Node:
    assert page.console == [], page.console
    return page.dom


async def shoot(port: int, tmp_path: Path, name: str, **kwargs: Any) -> Node:
    shot = tmp_path / f"{name}.png"
    page = await dump_dom(f"http://127.0.0.1:{port}/", tmp_path / f"profile-{name}", screenshot=shot, **kwargs)
    assert shot.read_bytes()[:8] == PNG
    return clean(page)


def summary_fixture() -> FakeSummary:
    # groundedness jumps from 17% to 81%; f1 wobbles around 10%; judge metrics are off.
    rise = [point(NOW - 3600 + 150 * i, 40, 7 if i < 16 else 32) for i in range(24)]
    wobble = [point(NOW - 3600 + 150 * i, 40, 3 + i % 3) for i in range(24)]
    return FakeSummary(
        stats={"local_lexical_groundedness": {"5m": window("5m", 300, 40, 32), "1h": window("1h", 3600, 960, 400)},
               "f1_score": {"5m": window("5m", 300, 40, 4), "1h": window("1h", 3600, 960, 96)}},
        trends={"local_lexical_groundedness": rise, "f1_score": wobble},
        since={"local_lexical_groundedness": NOW - 3600, "f1_score": NOW - 3600})


OFF_CATALOGUE = metric_catalogue(EvaluationConfig(metrics=(
    "local_lexical_groundedness", "f1_score", "groundedness", "relevance", "coherence", "fluency")), judge_enabled=False)


async def test_banner_names_each_regression_with_interval_drivers_and_runbook(tmp_path):
    hostile = regression("f1_score", "score", before=0.82, after=0.61, lower=-0.3, upper=-0.12,
                         drivers=[driver("route", HOSTILE, 0.8, 0.5, 0.9, 40)], runbook_url="javascript:alert(1)")
    docs = {"/api/regressions": {"active": [regression("local_lexical_groundedness"), hostile],
                                 "watching": [regression("coherence", active=False, evidence=0.8)], "at": NOW},
            "/api/releases": RELEASES,
            **await admin_documents(summary=summary_fixture(), catalogue=OFF_CATALOGUE, store=FakeStore([]))}
    async with contract_page(docs) as port:
        dom = await shoot(port, tmp_path, "banner")
    area = dom.one(data_section="incidents")
    assert "hidden" not in area.attrs
    banners = area.find_all(data_incident="regression")
    assert [b.attrs["data-metric"] for b in banners] == ["local_lexical_groundedness", "f1_score"]  # watching: no banner
    first = banners[0]
    assert first.one(data_field="change").text == "17.0% \u2192 81.0%"
    assert first.one(data_field="interval").text == "[+55.0 pts, +72.0 pts]"
    assert first.one(data_field="since").attrs["data-ts"] == str(int(NOW - 240))
    assert first.one(data_field="lasting").text == " (for 4 min)"
    assert [(d.attrs["data-label"], d.attrs["data-value"]) for d in first.find_all(data_field="driver")] == [
        ("route", "/chat/billing"), ("model", "gpt-4o-mini")]
    assert first.find_all(data_field="driver")[0].one(data_field="driver-change").text == "15.0% \u2192 90.0%"
    assert "72% of the change" in first.find_all(data_field="driver")[0].text
    assert first.one("a", data_field="runbook").attrs["href"] == RUNBOOK
    assert first.one(data_field="evidence").text == "evidence 10^4.3 \u2265 alarm level 10^2.0"
    # A score regression reads as means; a label value that is markup stays text; no javascript: link.
    second = banners[1]
    assert second.one(data_field="change").text == "0.82 \u2192 0.61"
    assert second.one(data_field="interval").text == "[\u22120.30, \u22120.12]"
    assert HOSTILE in second.one(data_field="driver").text
    assert not second.find_all("a") and not dom.find_all("img")
    # The release that the interval says is worse is a banner too, with its versions.
    release = area.one(data_incident="release")
    assert release.attrs["data-metric"] == "groundedness" and release.attrs["data-candidate"] == "2.4.0"
    assert release.one(data_field="change").text == "5.0% \u2192 10.0%"
    assert release.one(data_field="interval").text == "[+1.2 pts, +8.8 pts]"
    assert "release 2.4.0 worse than 2.3.0 (canary)" in release.text
    # The banner is the first thing on the page, before the pipeline.
    order = [n.attrs.get("data-section") for n in dom.iter() if n.attrs.get("data-section")]
    assert order[0] == "incidents"


async def test_release_view_compares_versions_on_one_interval_scale(tmp_path):
    docs = {"/api/releases": RELEASES, "/api/regressions": {"active": [], "watching": []},
            **await admin_documents(summary=summary_fixture(), store=FakeStore([]))}
    async with contract_page(docs) as port:
        dom = await shoot(port, tmp_path, "releases")
    view = dom.one(data_section="releases")
    service = view.one(data_service="shop")
    assert [v.attrs["data-version"] for v in service.iter() if "data-version" in v.attrs] == ["2.4.0", "2.3.0"]
    rows = {r.attrs["data-comparison"]: r for r in service.find_all("tr") if "data-comparison" in r.attrs}
    assert list(rows) == ["groundedness", "f1_score"]
    g, f = rows["groundedness"], rows["f1_score"]
    assert g.one(data_field="difference").text == "+5.0 pts"
    assert g.one(data_field="interval").text == "[+1.2 pts, +8.8 pts]"
    assert g.one(data_field="verdict").text == "worse" and g.attrs["class"] == "regressed"
    assert f.one(data_field="verdict").text == "no change shown"
    assert g.one(data_field="n").text == "900 vs 300"
    assert g.one(data_field="scores").text == "0.80 \u2192 0.70 (\u22120.10)"
    # One scale for the table: both interval plots draw ±10 points.
    titles = [r.one("svg", data_field="interval-plot").one("title").text for r in rows.values()]
    assert all(t.endswith("scale \u00b110.0%") for t in titles), titles
    # Only the regressed comparison is in the banner.
    assert [b.attrs["data-metric"] for b in dom.find_all(data_incident="release")] == ["groundedness"]


async def test_without_release_endpoints_the_page_shows_no_banner_and_no_error(tmp_path):
    # A monitor that serves neither /api/regressions nor /api/releases (404): nothing to say.
    docs = await admin_documents(summary=summary_fixture(), store=FakeStore([]))
    async with contract_page(docs) as port:
        dom = await shoot(port, tmp_path, "older")
    assert dom.one(data_section="incidents").attrs.get("hidden") is not None
    assert not dom.find_all(data_incident="regression")
    assert dom.one(id="releases-head").attrs.get("hidden") is not None
    assert dom.one(data_section="releases").attrs.get("hidden") is not None
    assert all(m.text == "" for m in dom.find_all(data_field="message") if m.attrs["id"] != "pipeline-message")
    assert dom.one(data_field="status").text.startswith("last attempt ")  # the pipeline is not wired here


async def test_release_tracking_off_is_said_quietly_not_as_an_error(tmp_path):
    # The real admin server without a release board: both endpoints answer 503 "off".
    async with admin_server(summary=summary_fixture(), store=FakeStore([]),
                            pipeline=quiet_pipeline(NOW - 5.0)) as server:
        dom = await shoot(server.port, tmp_path, "off")
    assert dom.one(data_section="incidents").attrs.get("hidden") is not None
    assert dom.one(data_field="off-note").text == "release comparisons are off (regressions.enabled)"
    assert dom.one(id="releases-head").attrs.get("hidden") is None
    assert all(m.text == "" for m in dom.find_all(data_field="message"))
    assert dom.one(data_field="status").text.startswith("updated ")


async def test_off_metrics_on_one_line_and_every_trend_on_one_scale_and_time_axis(tmp_path):
    async with admin_server(summary=summary_fixture(), catalogue=OFF_CATALOGUE, store=FakeStore([])) as server:
        dom = await shoot(server.port, tmp_path, "metrics", time_zone="UTC")
    rows = [n.attrs["data-metric"] for n in dom.iter() if "data-metric" in n.attrs and n.tag == "tr"]
    assert rows == ["local_lexical_groundedness", "f1_score"]
    off = dom.one(data_field="off-metrics")
    assert off.attrs["data-count"] == "4"
    reason = OFF_CATALOGUE["groundedness"].off_reason
    assert reason and reason.startswith("no judge configured")
    assert off.text == f"off: {reason} \u2014 4 metrics: groundedness, relevance, coherence, fluency"
    assert [n.attrs["data-off-metric"] for n in off.iter() if "data-off-metric" in n.attrs] == [
        "groundedness", "relevance", "coherence", "fluency"]
    # One y-scale for all: 80% (the highest rate) rounds up to 100%; f1's wobble is drawn on it too.
    charts = dom.find_all("svg", data_field="trend")
    assert [c.attrs["data-top"] for c in charts] == ["1", "1"]
    assert all(c.one(data_field="trend-scale").text.startswith("0\u2013100.0% (all metrics)")
               for c in dom.find_all("td", **{"class": "trendcell"}))
    # A time axis in the browser's zone, 24-hour clock: 15-minute ticks over the hour (NOW is 08:00 UTC).
    ticks = [t.text for t in charts[0].find_all(data_field="time-tick")]
    assert ticks == ["07:15", "07:30", "07:45", "08:00"], ticks
    # The reference is the longest window's rate; the change line is drawn where it changed.
    ref = charts[0].one("line", data_field="reference")
    assert float(ref.attrs["data-rate"]) == pytest.approx(400 / 960)
    assert charts[0].find_all(data_field="change") and charts[0].find_all(data_field="band")


def quiet_pipeline(last_span_at: float) -> PipelineStatus:
    """Pipeline health whose readings saw 40 spans arrive at ``last_span_at`` and none since."""
    registry = CollectorRegistry(auto_describe=True)
    clock = [last_span_at]
    health = PipelineHealth(registry, clock=lambda: clock[0])
    PrometheusTelemetry(registry).add(SPANS_RECEIVED, 40, transport="http")
    health.sample()  # the admin server's periodic reading sees the spans come in...
    clock[0] = NOW  # ...and nothing more arrives
    return PipelineStatus(health, Setting("http://127.0.0.1:4318", False, "always", {}), lambda: {})


async def test_no_spans_for_n_seconds_once_traffic_stops(tmp_path):
    status = quiet_pipeline(NOW - 125.0)
    async with admin_server(summary=summary_fixture(), store=FakeStore([]), pipeline=status) as server:
        dom = await shoot(server.port, tmp_path, "quiet")
    line = dom.one(data_incident="no-spans")
    assert line.attrs["data-seconds"] == "125"
    assert line.text.startswith("no spans for 2 min (last at ")
    assert dom.one(data_section="incidents").attrs.get("hidden") is None


async def test_turn_cards_carry_route_model_version_and_local_evidence(tmp_path):
    evidence = "3 of 8 answer terms not in the documents: moon, twelve, invoice"
    turn = stored_turn(21, [("local_lexical_groundedness", "defect", 0.625, (0.0, 1.0))], reason=evidence)
    turn = dataclasses.replace(turn, labels={"version": "2.4.0", "tenant": "acme", "model": "gpt-4o-mini",
                                             "route": "/chat/billing"})
    async with admin_server(summary=summary_fixture(), store=FakeStore([], turns=[turn])) as server:
        dom = await shoot(server.port, tmp_path, "turns")
    card = dom.one("article", data_id="21")
    tags = card.one(data_field="labels").find_all("span", **{"class": "tag"})
    assert [(t.attrs["data-label"], t.text) for t in tags] == [
        ("route", "route /chat/billing"), ("model", "model gpt-4o-mini"), ("version", "version 2.4.0"),
        ("tenant", "tenant acme")]
    reason = card.one("li", data_score="local_lexical_groundedness").one(data_field="reason")
    assert reason.attrs["data-kind"] == "reason" and reason.text == evidence


async def test_banner_over_the_admin_servers_own_endpoints(tmp_path):
    # The engine's records on the board the regression feed publishes to, read by the real routes.
    drivers = (Driver("route", "/chat/billing", 0.15, 0.9, 0.72, 120), Driver("version", "2.4.0", 0.17, 0.8, 0.4, 300))
    board = ReleaseBoard()
    board.publish(ReleaseSnapshot(
        at=NOW,
        services=(ServiceReleases("shop", (VersionInfo("2.3.0", NOW - 7200, NOW - 900, 900),
                                           VersionInfo("2.4.0", NOW - 1800, NOW - 5, 300))),),
        comparisons=(ReleaseComparison("shop", "local_lexical_groundedness", "2.3.0", "2.4.0", "adjacent", 900, 300,
                                       0.17, 0.81, 0.64, 0.5, 0.75, 0.8, 0.4, -0.4, -0.5, -0.3, True, drivers),),
        regressions=(Regression("shop", "local_lexical_groundedness", "defect_rate", NOW - 1500, 0.17, 0.81,
                                0.55, 0.72, 6.0, 2.3, True, drivers),
                     Regression("shop", "f1_score", "defect_rate", None, 0.1, 0.1, -0.05, 0.05, 0.4, 2.3, False)),
        runbook_base_url=RUNBOOKS))
    async with admin_server(summary=summary_fixture(), store=FakeStore([]), releases=board) as server:
        dom = await shoot(server.port, tmp_path, "real-endpoints")
    banner = dom.one(data_incident="regression")
    assert banner.attrs["data-metric"] == "local_lexical_groundedness"
    assert banner.one(data_field="change").text == "17.0% \u2192 81.0%"
    assert banner.one(data_field="lasting").text == " (for 25 min)"
    assert banner.one("a", data_field="runbook").attrs["href"] == RUNBOOKS + "#ragmonitorqualitydefectrateregressed"
    assert [d.attrs["data-value"] for d in banner.find_all(data_field="driver")] == ["/chat/billing", "2.4.0"]
    release = dom.one(data_incident="release")
    assert release.one(data_field="interval").text == "[+50.0 pts, +75.0 pts]"
    row = dom.one("tr", data_comparison="local_lexical_groundedness")
    assert row.one(data_field="verdict").text == "worse"
    assert all(m.text == "" for m in dom.find_all(data_field="message") if m.attrs["id"] != "pipeline-message")
