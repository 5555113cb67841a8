"""Allow-listed labels with a cardinality cap, on the Prometheus instruments."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from exporters.evaluation_metrics import PrometheusResults
from exporters.labels import LABEL_VALUES_CAPPED, OTHER, LabelFanOut, LabelledResult, LabelPolicy
from exporters.prometheus import PrometheusTelemetry
from monitor.telemetry import CountingTelemetry
from tests.exporters.results import result, score


def test_values_follow_the_allow_list_order_and_builtins() -> None:
    policy = LabelPolicy(["route", "model", "jailbreak_attempt", "sampling_policy"], max_values=10)
    r = result(score("groundedness", 4.0), labels={"route": "/search", "user": "alice"}, model="gpt-x",
               policy="always")
    assert policy.names == ("service", "route", "model", "jailbreak_attempt", "sampling_policy")
    assert policy.values(r) == ("rag-app", "/search", "gpt-x", "false", "always")
    assert policy.values(result(score("groundedness", 4.0), labels={}, model=None))[1:3] == ("unknown", "unknown")


def test_100000_routes_make_a_bounded_number_of_series() -> None:
    registry = CollectorRegistry()
    telemetry = PrometheusTelemetry(registry)
    policy = LabelPolicy(["route"], max_values=50, telemetry=telemetry)
    results = PrometheusResults(registry, policy)
    for i in range(100_000):
        results.consume_result(result(score("groundedness", 2.0, defect=True), labels={"route": f"/item/{i}"}))
    routes = {s.labels["route"] for fam in registry.collect() if fam.name == "rag_monitor_evaluations"
              for s in fam.samples}
    assert len(routes) == 51 and OTHER in routes
    series = [s for fam in registry.collect() for s in fam.samples if s.name == "rag_monitor_score_bucket"]
    assert len(series) == 51 * 22  # 21 buckets + +Inf per route value
    assert registry.get_sample_value("rag_monitor_evaluations_total",
                                     {"metric": "groundedness", "service": "rag-app", "route": OTHER,
                                      "judge_model": "", "prompt_version": "", "outcome": "defect"}) == 100_000 - 50
    assert registry.get_sample_value("rag_monitor_label_values_capped_total", {"label": "route"}) == 100_000 - 50


def test_no_label_outside_the_allow_list_reaches_a_series() -> None:
    registry = CollectorRegistry()
    PrometheusResults(registry, LabelPolicy(["route"], 5)).consume_result(
        result(score("coherence", 4.0), labels={"route": "/a", "tenant": "acme"}))
    keys = {k for fam in registry.collect() for s in fam.samples for k in s.labels}
    assert keys <= {"metric", "service", "route", "judge_model", "prompt_version", "outcome", "le"}


def test_long_values_are_cut() -> None:
    policy = LabelPolicy(["route"], 5)
    assert len(policy.values(result(score("coherence", 4.0), labels={"route": "x" * 10_000}))[1]) == 120


def test_a_capped_value_is_counted_once_per_result_across_prometheus_and_rolling_windows() -> None:
    from monitor.app import Sidecar
    from tests.support.pipeline import test_config

    config = test_config().model_copy(update={"exporters": test_config().exporters.model_copy(
        update={"max_label_values": 5})})
    sidecar = Sidecar(config, registry=CollectorRegistry())
    for i in range(8):  # 8 services, 5 admitted: 3 results carry a capped service
        r = result(score("coherence", 4.0), service=f"svc-{i}")
        for consumer in (sidecar.results, sidecar.rolling):  # as the evaluation stage fans out
            consumer.consume_result(r)
    assert sidecar.registry.get_sample_value("rag_monitor_label_values_capped_total", {"label": "service"}) == 3


def test_label_values_are_computed_once_and_shared_by_every_labelling_exporter() -> None:
    telemetry = CountingTelemetry()
    policy = LabelPolicy(["route"], max_values=1, telemetry=telemetry)
    seen: list[list[LabelledResult]] = [[], []]

    class Exporter:
        def __init__(self, into: list[LabelledResult]) -> None:
            self.into = into

        def consume_labelled(self, item: LabelledResult) -> None:
            self.into.append(item)

    fan_out = LabelFanOut(policy, [Exporter(seen[0]), Exporter(seen[1])])
    fan_out.consume_result(result(score("groundedness", 2.0), labels={"route": "/a"}))
    fan_out.consume_result(result(score("groundedness", 2.0), labels={"route": "/b"}))
    assert seen[0] == seen[1]  # the very same values for both exporters
    assert [dict(i.labels) for i in seen[0]] == [{"service": "rag-app", "route": "/a"},
                                                 {"service": "rag-app", "route": OTHER}]
    assert telemetry.value(LABEL_VALUES_CAPPED, label="route") == 1  # one overflow, counted once


def test_one_failing_exporter_does_not_starve_the_others() -> None:
    got: list[LabelledResult] = []

    class Broken:
        def consume_labelled(self, item: LabelledResult) -> None:
            raise RuntimeError("bug")

    class Fine:
        def consume_labelled(self, item: LabelledResult) -> None:
            got.append(item)

    LabelFanOut(LabelPolicy([], max_values=5), [Broken(), Fine()]).consume_result(result(score("fluency", 4.0)))
    assert len(got) == 1
