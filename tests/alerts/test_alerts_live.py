"""Alerts end to end: the demo's traffic into a sidecar, scraped by a real Prometheus that loads
the chart's alert rules, which notifies a real Alertmanager routed as the chart's README says, which
posts to a local webhook — the path that pages an on-call engineer.

The shipped rules compare hours with yesterday's and wait 5-15 minutes; here they are rendered by
``hack/gen_rules.py`` with every window, ``for:`` and the baseline offset cut to seconds (one
threshold aside, see ``TEST_VALUES``), and the test first proves that only those durations differ
from the shipped rules. Every guard (minimum evaluations, calls, spans) keeps its shipped value.

Phases: healthy traffic until the regression rule has had full windows (and its guards held) for
longer than its ``for:`` — nothing may fire; then the demo's retrieval regression — the regression
alerts must reach the webhook with labels, summary and runbook link, and nothing else; then the
judge answers 503 — the judge's own alert must arrive.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import time
from pathlib import Path
from typing import Any, Mapping

import pytest
import yaml
from prometheus_client import CollectorRegistry

from monitor.app import Sidecar
from monitor.config import MonitorConfig
from monitor.demo import demo_config, run_traffic
from tests.alerts.alertmanager import AlertmanagerServer, WebhookReceiver, alertmanager_binary
from tests.support.helm import CHART_DIR
from tests.support.judge_server import JudgeServer, schema_reply, server_error
from tests.support.pipeline import test_config
from tests.support.prometheus_server import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.skipif(
    prometheus_binary() is None or alertmanager_binary() is None,
    reason="needs the Debian packages 'prometheus' and 'prometheus-alertmanager' (.ci/run installs them)")

SHIPPED_RULES = CHART_DIR / "alerts" / "rag-monitor-rules.yaml"
CHART_README = CHART_DIR / "README.md"
RUNBOOKS = CHART_DIR / "docs" / "runbooks.md"
SERVICE = "skylark-support"  # the demo app's service.name
REGRESSED_METRIC = "local_lexical_groundedness"  # what the demo's wrong-collection retriever breaks
REGRESSION_ALERTS = {"RagMonitorQualityScoreRegressed", "RagMonitorQualityDefectRateRegressed"}
JUDGE_OUTAGE_ALERT = "RagMonitorJudgeCircuitOpen"
# Windows long enough that the healthy traffic's sampling noise stays well inside the rules'
# margins (f1_score's mean, the noisiest, ~3 standard errors from the 10 % drop at 15 turns/s).
WINDOW, OFFSET, FOR = "20s", "25s", "5s"
RATE_PER_SECOND = 15.0
# Durations only, plus one threshold: the demo's model is rude in 5 % of its answers by design (a
# steady defect the demo shows, not an incident), which sits right at the shipped 5 %
# local_offensive_language threshold; the test moves that one threshold above the demo's rate.
TEST_VALUES: dict[str, Any] = {"alerts": {
    "safetyDefectRate": {"window": WINDOW, "for": FOR, "thresholds": {"local_offensive_language": 0.15}},
    "qualityRegression": {"window": WINDOW, "baselineWindow": WINDOW, "baselineOffset": OFFSET, "for": FOR},
    "judgeErrors": {"window": WINDOW, "for": FOR},
    "judgeBudgetExhausted": {"window": WINDOW, "for": FOR},
    "judgeCircuitOpen": {"window": "10s", "for": FOR},
    "spansDropped": {"window": WINDOW, "for": FOR},
    "noSpansReceived": {"window": WINDOW, "for": FOR},
    "evaluationQueueSaturated": {"window": WINDOW, "for": FOR},
}}
_DURATION = re.compile(r"\b\d+(?:ms|s|m|h|d)\b")


def _test_rule_groups() -> list[dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("gen_rules", CHART_DIR / "hack" / "gen_rules.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    groups: list[dict[str, Any]] = module.rule_groups(TEST_VALUES)
    return groups


def _shape(rule: Mapping[str, Any]) -> str:
    """The rule with every duration (and the one threshold the test moves) blanked out."""
    text = json.dumps(rule, sort_keys=True)
    if rule.get("labels", {}).get("metric") == "local_offensive_language":
        text = re.sub(r"\b0\.(?:05|15)\b", "<threshold>", text)
    return _DURATION.sub("<duration>", text)


def _alertmanager_config(webhook: WebhookReceiver) -> dict[str, Any]:
    """The README's sample route, its receivers pointed at the webhook (path = receiver name) and
    its waits cut to a second."""
    section = CHART_README.read_text(encoding="utf-8").split("#### Alertmanager route", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found, "the chart README's Alertmanager route section has no yaml block"
    config: dict[str, Any] = yaml.safe_load(found.group(1))
    for receiver in config["receivers"]:
        for hook in receiver["webhook_configs"]:
            hook["url"] = f"{webhook.base_url}/{receiver['name']}"
    config["route"].update(group_wait="1s", group_interval="1s")
    return config


def _sidecar_config(judge_url: str, scratch: Path) -> MonitorConfig:
    base = test_config().model_dump(mode="json")
    base["judge"] = {"base_url": judge_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 5}
    config, _ = demo_config(MonitorConfig.model_validate(base), admin_port=0, scratch_dir=scratch)
    return config


def _assert_paged(alert: Mapping[str, Any], name: str, path: str, fired: list[tuple[str, Mapping[str, Any]]]) -> None:
    matches = [(p, a) for p, a in fired if a["labels"]["alertname"] == name]
    assert matches, f"{name} did not arrive"
    got_path, got = matches[0]
    assert got_path == path, (name, got_path)
    assert {k: got["labels"].get(k) for k in alert} == dict(alert), (name, got["labels"])
    url = got["annotations"]["runbook_url"]
    assert url.endswith("#" + name.lower()), url
    assert f"## {name}\n" in RUNBOOKS.read_text(encoding="utf-8"), f"no runbook section for {name}"
    assert got["annotations"]["summary"] and got["annotations"]["description"], got["annotations"]


class _Scenario:
    def __init__(self, prom: PrometheusServer, webhook: WebhookReceiver, endpoint: str) -> None:
        self.prom, self.webhook, self.endpoint = prom, webhook, endpoint
        self.stop = asyncio.Event()
        self.traffic: asyncio.Task[Any] | None = None

    def start_traffic(self, regression_at: float | None) -> None:
        self.stop = asyncio.Event()
        self.traffic = asyncio.create_task(run_traffic(
            self.endpoint, rate_per_second=RATE_PER_SECOND, stop=self.stop, regression_at=regression_at, seed=5))

    async def stop_traffic(self) -> None:
        self.stop.set()
        if self.traffic is not None:
            await self.traffic

    async def rules_healthy(self) -> None:
        """A rule that fails to evaluate never fires: every loaded rule must evaluate cleanly."""
        groups = (await self.prom.api("rules"))["groups"]
        rules = [r for g in groups for r in g["rules"]]
        assert len({r["name"] for r in rules}) == 9, [r["name"] for r in rules]
        broken = {r["name"]: r.get("lastError") for r in rules if r["health"] != "ok"}
        assert not broken, broken

    async def firing_alerts(self) -> list[str]:
        return [f"{r['metric']['alertname']}({r['metric'].get('metric', '')})"
                for r in await self.prom.query('ALERTS{alertstate="firing"}')]

    async def healthy_phase(self) -> None:
        """Healthy traffic until the regression rules have compared full windows, with their
        guards met, for twice their ``for:`` — with no alert firing at any point (pending, a
        condition true for less than its ``for:``, is what ``for:`` exists to absorb)."""
        by = "namespace, job, service, metric"
        guard = " and ".join(
            f"sum by ({by}) (increase(rag_monitor_score_count{{metric=\"{REGRESSED_METRIC}\"}}[{WINDOW}]{extra})) >= 50"
            for extra in ("", f" offset {OFFSET}"))
        held_since: float | None = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            firing = await self.firing_alerts()
            assert not firing, f"alerts firing on healthy traffic: {firing}"
            if await self.prom.query(guard):
                held_since = held_since or time.monotonic()
                if time.monotonic() - held_since >= 10:
                    break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError(f"the regression rule's guards never held for 10 s: {guard}")
        await self.rules_healthy()
        assert not self.webhook.notifications, [n.body for n in self.webhook.notifications]


async def test_regression_and_judge_outage_page_and_healthy_traffic_does_not(tmp_path: Path) -> None:
    shipped = [r for g in yaml.safe_load(SHIPPED_RULES.read_text(encoding="utf-8"))["groups"] for r in g["rules"]]
    groups = _test_rule_groups()
    assert [_shape(r) for g in groups for r in g["rules"]] == [_shape(r) for r in shipped], (
        "the test's rules differ from the shipped ones by more than their durations")
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")

    async with WebhookReceiver() as webhook, \
            AlertmanagerServer(tmp_path / "am", _alertmanager_config(webhook)) as alertmanager, \
            JudgeServer(default=schema_reply()) as judge:
        sidecar = Sidecar(_sidecar_config(judge.base_url, tmp_path), registry=CollectorRegistry())
        await sidecar.start()
        assert sidecar.http is not None and sidecar.admin is not None
        scenario: _Scenario | None = None
        try:
            async with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{sidecar.admin.port}"],
                                        rule_files=[rules_file], evaluation_interval="1s",
                                        alertmanagers=[alertmanager.address]) as prom:
                scenario = _Scenario(prom, webhook, f"http://127.0.0.1:{sidecar.http.port}")
                scenario.start_traffic(regression_at=None)
                await scenario.healthy_phase()

                # The demo's regression: the retriever searches the wrong collection from now on.
                await scenario.stop_traffic()
                scenario.start_traffic(regression_at=0.0)
                labels = {"severity": "warning", "service": SERVICE, "job": "rag-monitor", "metric": REGRESSED_METRIC}
                fired = await webhook.wait_for(
                    lambda f: REGRESSION_ALERTS <= {a["labels"]["alertname"] for _, a in f}, timeout=90)
                for name in REGRESSION_ALERTS:
                    _assert_paged(labels, name, "/rag-monitor-chat", fired)
                assert {(a["labels"]["alertname"], a["labels"].get("metric")) for _, a in fired} == {
                    (name, REGRESSED_METRIC) for name in REGRESSION_ALERTS}, "only the regression fired"
                summary = next(a for _, a in fired if a["labels"]["alertname"] == "RagMonitorQualityScoreRegressed")
                assert summary["annotations"]["summary"].startswith(f"{SERVICE}: mean {REGRESSED_METRIC} fell to ")

                # A judge outage: every judge call now ends in 503.
                judge.default = server_error(503)
                fired = await webhook.wait_for(
                    lambda f: JUDGE_OUTAGE_ALERT in {a["labels"]["alertname"] for _, a in f}, timeout=90)
                _assert_paged({"severity": "warning", "job": "rag-monitor"}, JUDGE_OUTAGE_ALERT,
                              "/rag-monitor-chat", fired)
                assert not [a for path, a in fired if path != "/rag-monitor-chat"], "nothing critical fired"
        finally:
            if scenario is not None:
                await scenario.stop_traffic()
            await sidecar.shutdown()
