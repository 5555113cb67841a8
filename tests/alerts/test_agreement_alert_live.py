"""The agreement alert end to end: a sidecar judges turns, people's verdicts that disagree with
the judge arrive over ``POST /api/feedback``, a real Prometheus scrapes the agreement gauges and
evaluates the chart's rules, and a real Alertmanager routed as the chart's README says posts
``RagMonitorJudgeAgreementLow`` to a local webhook.

The rules are rendered by ``hack/gen_rules.py`` with ``for:`` cut to seconds; the floor (0.7) and
the minimum number of reviews (30) keep their shipped values. Below 30 reviews nothing fires,
however low the agreement; at 30 and more it pages.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Mapping

import pytest
import yaml
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from tests.alerts.alertmanager import AlertmanagerServer, WebhookReceiver, alertmanager_binary
from tests.alerts.test_alerts_live import RUNBOOKS, _alertmanager_config, _test_rule_groups
from tests.feedback.harness import App, Results, feedback_config, post_verdict, store_path
from tests.support.judge_server import JudgeServer, reply_json
from tests.support.pipeline import RecordingSink
from tests.support.prometheus_server import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.skipif(
    prometheus_binary() is None or alertmanager_binary() is None,
    reason="needs the Debian packages 'prometheus' and 'prometheus-alertmanager' (.ci/run installs them)")

ALERT = "RagMonitorJudgeAgreementLow"
SHIPPED = yaml.safe_load((Path(__file__).resolve().parents[2] / "helm" / "rag-monitor" / "alerts" /
                          "rag-monitor-rules.yaml").read_text(encoding="utf-8"))
DEFECT = {"reason": "muddled", "score": 2}  # coherence < 3: the judge calls every turn a defect
BELOW_GUARD, ENOUGH = 20, 36


def _agreement_rule(groups: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for g in groups for r in g["rules"] if r.get("alert") == ALERT)


async def _judged_turns(app: App, results: Results, n: int) -> list[str]:
    traces = [app.turn() for _ in range(n)]
    await app.flush()
    for t in traces:
        await results.wait_for(t)
    return traces


async def _disagree(sidecar: Sidecar, traces: list[str]) -> None:
    for i, t in enumerate(traces):
        status, doc = await post_verdict(sidecar, {"trace_id": t, "metric": "coherence", "verdict": "pass",
                                                   "reviewer": f"reviewer-{i % 3}"})
        assert status == 202 and doc["join"]["agreement"] == "disagree", doc


async def test_people_disagreeing_with_the_judge_page_once_there_are_enough_reviews(tmp_path: Path) -> None:
    groups = _test_rule_groups()
    shipped = _agreement_rule(SHIPPED["groups"])
    rule = _agreement_rule(groups)
    assert rule["expr"] == shipped["expr"] and "< 0.7" in rule["expr"] and ">= 30" in rule["expr"]
    assert rule["for"] == "5s" and shipped["for"] == "15m"
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")

    async with WebhookReceiver() as webhook, \
            AlertmanagerServer(tmp_path / "am", _alertmanager_config(webhook)) as alertmanager, \
            JudgeServer(default=reply_json(DEFECT)) as judge:
        results = Results()
        sidecar = Sidecar(feedback_config(judge.base_url, store=store_path(tmp_path)), sink=RecordingSink(),
                          registry=CollectorRegistry(), result_consumers=[results])
        await sidecar.start()
        app = App(sidecar.http.port)
        try:
            async with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{sidecar.admin.port}"],
                                        rule_files=[rules_file], evaluation_interval="1s",
                                        alertmanagers=[alertmanager.address]) as prom:
                traces = await _judged_turns(app, results, ENOUGH)
                series = 'metric="coherence", judge_model="judge-model"'

                # 20 reviews, none agreeing: the interval's upper end is far below the floor, but
                # the guard holds the alert back — for longer than its for: (5 s).
                await _disagree(sidecar, traces[:BELOW_GUARD])
                await prom.wait_for(f"rag_monitor_judge_agreement_reviews{{{series}}} == {BELOW_GUARD}", bool)
                await prom.wait_for(f"rag_monitor_judge_agreement_rate_upper{{{series}}} < 0.7", bool)
                held_until = time.monotonic() + 10
                while time.monotonic() < held_until:
                    assert not await prom.query(f'ALERTS{{alertname="{ALERT}"}}'), "fired below minReviews"
                    await asyncio.sleep(0.5)
                health = {r["name"]: r["health"] for g in (await prom.api("rules"))["groups"] for r in g["rules"]}
                assert health[ALERT] == "ok", health

                # 36 reviews: past the guard, the alert reaches the on-call route.
                await _disagree(sidecar, traces[BELOW_GUARD:])
                fired = await webhook.wait_for(
                    lambda f: ALERT in {a["labels"]["alertname"] for _, a in f}, timeout=90)
        finally:
            await app.close()
            await sidecar.shutdown()
    paged: list[tuple[str, Mapping[str, Any]]] = [(p, a) for p, a in fired if a["labels"]["alertname"] == ALERT]
    path, alert = paged[0]
    assert path == "/rag-monitor-chat"
    assert {k: alert["labels"].get(k) for k in ("severity", "job", "metric", "judge_model")} == {
        "severity": "warning", "job": "rag-monitor", "metric": "coherence", "judge_model": "judge-model"}
    assert alert["annotations"]["summary"].startswith("coherence: the judge judge-model agrees with people at most ")
    assert alert["annotations"]["runbook_url"].endswith("#ragmonitorjudgeagreementlow")
    assert f"## {ALERT}\n" in RUNBOOKS.read_text(encoding="utf-8")
    assert {a["labels"]["alertname"] for _, a in fired} == {ALERT}, "nothing else fired"
