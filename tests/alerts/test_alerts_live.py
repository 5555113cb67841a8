"""Alerts end to end: the demo's traffic into a sidecar, scraped by a real Prometheus that loads
the chart's alert rules, which notifies a real Alertmanager routed as the chart's README says, which
posts to a local webhook — the path that pages an on-call engineer.

The shipped rules look at windows of minutes and wait 5-15 minutes; here they are rendered by
``hack/gen_rules.py`` with every window and ``for:`` cut to seconds (one threshold aside, see
``TEST_VALUES``), and the test first proves that only those durations differ from the shipped
rules. Every guard (minimum evaluations, calls, spans) and the release margin keep their shipped
values.

The sidecar's regression engine is scaled the same way (``ENGINE_SCALE``): its five-minute steps
become seconds, its alpha, alarm level and minimum evaluations stay as shipped.

Phases: healthy traffic as release v1, then as v2 with nothing changed, until the v2-vs-v1
comparison has met its guard for longer than the release rule's ``for:`` — nothing may fire; then
release v3 with the demo's retrieval regression — ``RagMonitorReleaseRegressed`` (v3 against v2)
and the change detector's ``RagMonitorQualityScoreRegressed`` and
``RagMonitorQualityDefectRateRegressed`` must reach the webhook for the regressed metric with
labels, summary and runbook link, and nothing but release and regression alerts may arrive; then
the judge answers 503 — the judge's own alert must arrive.
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
from monitor.regression_config import RegressionsConfig
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
RELEASE_ALERT = "RagMonitorReleaseRegressed"
REGRESSION_ALERTS = {RELEASE_ALERT, "RagMonitorQualityScoreRegressed", "RagMonitorQualityDefectRateRegressed"}
JUDGE_OUTAGE_ALERT = "RagMonitorJudgeCircuitOpen"
WINDOW, FOR = "20s", "5s"
# The sidecar's regression engine on the same footing: its steps (5 minutes shipped) become one
# second and its other durations shrink alike; alpha, the margin, the alarm level and every
# minimum number of evaluations keep their shipped values.
ENGINE_SCALE = 1 / 300
RATE_PER_SECOND = 15.0
# Durations only, plus one threshold: the demo's model is rude in 5 % of its answers by design (a
# steady defect the demo shows, not an incident), which sits right at the shipped 5 %
# local_offensive_language threshold; the test moves that one threshold above the demo's rate.
TEST_VALUES: dict[str, Any] = {"alerts": {
    "safetyDefectRate": {"window": WINDOW, "for": FOR, "thresholds": {"local_offensive_language": 0.15}},
    "releaseRegression": {"for": FOR},
    "qualityRegression": {"for": FOR},
    "judgeErrors": {"window": WINDOW, "for": FOR},
    "judgeBudgetExhausted": {"window": WINDOW, "for": FOR},
    "judgeCircuitOpen": {"window": "10s", "for": FOR},
    "judgeAgreement": {"for": FOR},
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


def _scaled_regressions() -> dict[str, Any]:
    """The sidecar's ``regressions`` section with every duration cut by ``ENGINE_SCALE`` and
    nothing else changed: the same comparisons and detector, counted in steps of a second."""
    shipped = RegressionsConfig()
    durations = ("release_bucket_seconds", "canary_grace_seconds", "reactivation_gap_seconds")
    detector = ("step_seconds", "reference_seconds", "rebaseline_seconds", "hold_seconds")
    return {
        **{name: getattr(shipped, name) * ENGINE_SCALE for name in durations},
        "detector": {name: getattr(shipped.detector, name) * ENGINE_SCALE for name in detector},
        # How often the feed reads new results: not part of the statistics.
        "refresh_seconds": 0.5,
    }


def _sidecar_config(judge_url: str, scratch: Path) -> MonitorConfig:
    base = test_config().model_dump(mode="json")
    base["judge"] = {"base_url": judge_url, "model": "judge-model", "api_key": "sk-test", "timeout_seconds": 5}
    config, _ = demo_config(MonitorConfig.model_validate(base), admin_port=0, scratch_dir=scratch)
    data = config.model_dump(mode="json")
    data["judge"]["api_key"] = "sk-test"  # model_dump masks secrets
    scaled, shipped = _scaled_regressions(), data["regressions"]
    data["regressions"] = {**shipped, **scaled, "detector": {**shipped["detector"], **scaled["detector"]}}
    return MonitorConfig.model_validate(data)


def _assert_paged(alert: Mapping[str, Any], name: str, path: str, fired: list[tuple[str, Mapping[str, Any]]]) -> None:
    named = [(p, a) for p, a in fired if a["labels"]["alertname"] == name]
    assert named, f"{name} did not arrive"
    matches = [(p, a) for p, a in named if all(a["labels"].get(k) == v for k, v in alert.items())]
    assert matches, (name, dict(alert), [a["labels"] for _, a in named])
    got_path, got = matches[0]
    assert got_path == path, (name, got_path)
    url = got["annotations"]["runbook_url"]
    assert url.endswith("#" + name.lower()), url
    assert f"## {name}\n" in RUNBOOKS.read_text(encoding="utf-8"), f"no runbook section for {name}"
    assert got["annotations"]["summary"] and got["annotations"]["description"], got["annotations"]


class _Scenario:
    def __init__(self, prom: PrometheusServer, webhook: WebhookReceiver, endpoint: str) -> None:
        self.prom, self.webhook, self.endpoint = prom, webhook, endpoint
        self.stop = asyncio.Event()
        self.traffic: asyncio.Task[Any] | None = None

    def start_traffic(self, version: str, regression_at: float | None) -> None:
        self.stop = asyncio.Event()
        self.traffic = asyncio.create_task(run_traffic(
            self.endpoint, rate_per_second=RATE_PER_SECOND, stop=self.stop, regression_at=regression_at, seed=5,
            service_version=version))

    async def stop_traffic(self) -> None:
        self.stop.set()
        if self.traffic is not None:
            await self.traffic

    async def rules_healthy(self) -> None:
        """A rule that fails to evaluate never fires: every loaded rule must evaluate cleanly."""
        groups = (await self.prom.api("rules"))["groups"]
        rules = [r for g in groups for r in g["rules"]]
        assert len({r["name"] for r in rules}) == 11, [r["name"] for r in rules]
        broken = {r["name"]: r.get("lastError") for r in rules if r["health"] != "ok"}
        assert not broken, broken

    async def firing_alerts(self) -> list[str]:
        return [f"{r['metric']['alertname']}({r['metric'].get('metric', '')})"
                for r in await self.prom.query('ALERTS{alertstate="firing"}')]

    async def healthy_phase(self, baseline: str, candidate: str) -> None:
        """Healthy traffic until the release rule has compared ``candidate`` with ``baseline``,
        its guard met, for twice its ``for:`` — with no alert firing at any point (pending, a
        condition true for less than its ``for:``, is what ``for:`` exists to absorb)."""
        pair = f'metric="{REGRESSED_METRIC}", baseline="{baseline}", candidate="{candidate}"'
        # A comparison not yet computable is NaN, which no comparison (here > -1) lets through.
        guard = (f"max(rag_monitor_release_defect_rate_difference_lower{{{pair}}}) > -1 and on () "
                 f'max(rag_monitor_release_evaluations{{metric="{REGRESSED_METRIC}", version="{candidate}"}}) >= 30')
        held_since: float | None = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            firing = await self.firing_alerts()
            assert not firing, f"alerts firing on healthy traffic: {firing}"
            if await self.prom.query(guard):
                held_since = held_since or time.monotonic()
                if time.monotonic() - held_since >= 10:
                    break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError(f"the release comparison never held its guard for 10 s: {guard}")
        await self.rules_healthy()
        assert not self.webhook.notifications, [n.body for n in self.webhook.notifications]


async def test_release_regression_and_judge_outage_page_and_healthy_releases_do_not(tmp_path: Path) -> None:
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
                # Healthy v1, then healthy v2: a release that changes nothing pages no one.
                scenario.start_traffic("v1", regression_at=None)
                await prom.wait_for(f'rag_monitor_release_evaluations{{metric="{REGRESSED_METRIC}", version="v1"}} '
                                    ">= 200", bool, timeout=90)
                await scenario.stop_traffic()
                scenario.start_traffic("v2", regression_at=None)
                await scenario.healthy_phase("v1", "v2")

                # Release v3 brings the demo's regression: its retriever searches the wrong collection.
                await scenario.stop_traffic()
                scenario.start_traffic("v3", regression_at=0.0)
                labels = {"severity": "warning", "service": SERVICE, "job": "rag-monitor", "metric": REGRESSED_METRIC,
                          "baseline": "v2", "candidate": "v3"}

                def all_paged(f: list[tuple[str, Mapping[str, Any]]]) -> bool:
                    return REGRESSION_ALERTS <= {a["labels"]["alertname"] for _, a in f
                                                 if a["labels"].get("metric") == REGRESSED_METRIC}

                fired = await webhook.wait_for(all_paged, timeout=120)
                _assert_paged(labels, RELEASE_ALERT, "/rag-monitor-chat", fired)
                for name in REGRESSION_ALERTS - {RELEASE_ALERT}:
                    _assert_paged({k: v for k, v in labels.items() if k not in ("baseline", "candidate")}, name,
                                  "/rag-monitor-chat", fired)
                assert {a["labels"]["alertname"] for _, a in fired} <= REGRESSION_ALERTS, "only regressions fired"
                assert {(a["labels"].get("baseline"), a["labels"].get("candidate")) for _, a in fired
                        if a["labels"]["alertname"] == RELEASE_ALERT} == {("v2", "v3")}
                paged = next(a for _, a in fired if a["labels"]["alertname"] == RELEASE_ALERT
                             and a["labels"]["metric"] == REGRESSED_METRIC)
                assert paged["annotations"]["summary"].startswith(
                    f"{SERVICE}: {REGRESSED_METRIC} defect rate of v3 is at least "), paged["annotations"]

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
