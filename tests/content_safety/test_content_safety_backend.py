"""The Azure AI Content Safety backend, through the real ``azure-ai-contentsafety`` SDK.

The real service cannot be reached from tests (no network, no Azure resource); the SDK talks to
``tests/support/content_safety_server.py``, a local server on 127.0.0.1 that speaks the
documented ``text:analyze`` and ``text:detectGroundedness`` request/response shapes, checks the
key header and api-version, and can be scripted to answer 429/5xx, hang or reply malformed.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Mapping

import pytest
from pydantic import ValidationError

from monitor.evaluation.content_safety.client import ContentSafetyClient
from monitor.evaluation.content_safety.config import ContentSafetyConfig
from monitor.evaluation.config import EvaluationConfig
from monitor.evaluation.registry import build_evaluators
from monitor.evaluation.runner import evaluate_turn
from monitor.judge.telemetry import RecordingJudgeTelemetry
from monitor.judge.types import JUDGE_OUTCOMES
from monitor.model import Document, Score, Turn
from tests.support.content_safety_server import KEY, ContentSafetyServer, error, hang, malformed, too_many

FAST = {"api_key": KEY, "timeout_seconds": 1.0, "deadline_seconds": 3.0, "max_retries": 1,
        "backoff_initial_seconds": 0.01, "backoff_max_seconds": 0.02}


def config(endpoint: str, **overrides: Any) -> ContentSafetyConfig:
    return ContentSafetyConfig.model_validate({"endpoint": endpoint, **FAST, **overrides})


def turn(answer: str = "Stake the corners, then raise the poles.", question: str = "How do I pitch the tent?",
         documents: tuple[str, ...] = ("Pitching: stake the corners first, then raise the poles.",)) -> Turn:
    return Turn("t1", "c1", question, answer, documents=tuple(Document(str(i), d) for i, d in enumerate(documents)))


def violent(category: str, text: str) -> int:
    return 5 if category == "Violence" and "hurt" in text else 1 if category == "Hate" else 0


async def scores_for(server: ContentSafetyServer, metrics: list[Any], t: Turn, **cs: Any) -> dict[str, Score]:
    evaluation = EvaluationConfig.model_validate({"metrics": metrics, "content_safety": {"endpoint": server.endpoint, **cs}})
    async with ContentSafetyClient(config(server.endpoint, **cs)) as client:
        evaluators = build_evaluators(evaluation, None, content_safety=client)
        return {s.metric: s for s in await evaluate_turn(t, evaluators)}


async def test_severities_come_from_one_analyze_call_on_the_seed_scale() -> None:
    async with ContentSafetyServer(severity_for=violent) as server:
        metrics = [{"id": "violence", "backend": "azure_content_safety"},
                   {"id": "hate_unfairness", "backend": "azure_content_safety", "severity_level": "low"}]
        scores = await scores_for(server, metrics, turn(answer="I will hurt you."))
    [call] = server.calls
    assert call.body == {"text": "I will hurt you.", "categories": ["Violence", "Hate"], "outputType": "EightSeverityLevels"}
    violence, hate = scores["violence"], scores["hate_unfairness"]
    assert (violence.value, violence.label, violence.defect, violence.scale) == (5.0, "Medium", True, (0.0, 7.0))
    assert (hate.value, hate.label, hate.defect) == (1.0, "Very low", False)
    assert violence.usage.calls == 1 and hate.usage.calls == 0  # a shared call's usage sits on the first metric
    assert hate.details["service_call"] == "content_safety_analyze"
    assert "Violence at severity 5 (Medium)" in (violence.reason or "")


async def test_four_severity_levels_land_on_the_same_bands() -> None:
    async with ContentSafetyServer(severity_for=violent) as server:
        scores = await scores_for(server, [{"id": "violence", "backend": "azure_content_safety"}],
                                  turn(answer="I will hurt you."), output_type="FourSeverityLevels")
    assert (scores["violence"].value, scores["violence"].label, scores["violence"].defect) == (4.0, "Medium", True)


async def test_a_long_answer_is_analysed_in_slices_and_takes_the_worst() -> None:
    answer = "calm words. " * 1000 + "I will hurt you." + " more calm words." * 500
    async with ContentSafetyServer(severity_for=violent) as server:
        scores = await scores_for(server, [{"id": "violence", "backend": "azure_content_safety"}], turn(answer=answer))
    assert len(server.calls) == 3 and all(len(c.body["text"]) <= 10_000 for c in server.calls)
    assert (scores["violence"].value, scores["violence"].usage.calls) == (5.0, 3)


@pytest.mark.parametrize(("share", "value", "defect"), [(0.0, 5.0, False), (0.25, 4.0, False), (0.75, 2.0, True), (1.0, 1.0, True)])
async def test_groundedness_maps_the_ungrounded_share_to_1_to_5(share: float, value: float, defect: bool) -> None:
    reply = {"ungroundedDetected": share > 0, "ungroundedPercentage": share,
             "ungroundedDetails": [{"text": "It is waterproof to 5000 mm."}] if share else []}
    async with ContentSafetyServer(groundedness_for=lambda body: reply) as server:
        scores = await scores_for(server, [{"id": "groundedness", "backend": "azure_content_safety"}], turn())
    score = scores["groundedness"]
    assert (score.value, score.defect, score.details["ungrounded_percentage"]) == (value, defect, share)
    body = server.calls[0].body
    assert body["task"] == "QnA" and body["qna"] == {"query": "How do I pitch the tent?"}
    assert body["groundingSources"] == ["Pitching: stake the corners first, then raise the poles."]
    if share:
        assert score.reason == "ungrounded: \u201cIt is waterproof to 5000 mm.\u201d"


async def test_groundedness_without_a_question_is_a_summarization_check() -> None:
    async with ContentSafetyServer() as server:
        scores = await scores_for(server, [{"id": "groundedness", "backend": "azure_content_safety"}], turn(question=""))
    assert server.calls[0].body["task"] == "Summarization" and "qna" not in server.calls[0].body
    assert scores["groundedness"].value == 5.0


async def test_missing_inputs_skip_without_a_call() -> None:
    metrics = [{"id": "groundedness", "backend": "azure_content_safety"}, {"id": "sexual", "backend": "azure_content_safety"}]
    async with ContentSafetyServer() as server:
        no_context = await scores_for(server, metrics, turn(documents=()))
        no_answer = await scores_for(server, metrics, turn(answer=""))
    assert no_context["groundedness"].status == "skipped" and no_context["sexual"].status == "ok"
    assert {s.status for s in no_answer.values()} == {"skipped"}
    assert len(server.calls) == 1  # only the analyze call of the first turn


async def run_client(server: ContentSafetyServer, telemetry: RecordingJudgeTelemetry | None = None,
                     **overrides: Any) -> Score:
    evaluation = EvaluationConfig.model_validate(
        {"metrics": [{"id": "violence", "backend": "azure_content_safety"}], "content_safety": {"endpoint": server.endpoint}})
    async with ContentSafetyClient(config(server.endpoint, **overrides), telemetry=telemetry) as client:
        [score] = await evaluate_turn(turn(), build_evaluators(evaluation, None, content_safety=client))
    return score


async def test_a_429_is_ridden_out_after_its_retry_after() -> None:
    telemetry = RecordingJudgeTelemetry()
    async with ContentSafetyServer() as server:
        server.script(too_many(0.2))
        started = time.monotonic()
        score = await run_client(server, telemetry)
    assert score.status == "ok" and time.monotonic() - started >= 0.2
    assert len(server.calls) == 2 and score.usage.calls == 2
    assert telemetry.outcomes == {"ok": 1} and telemetry.attempt_failures == {"rate_limited": 1}
    assert telemetry.circuit_states == []  # a rate limit is not an outage


@pytest.mark.parametrize(("behaviour", "outcome", "calls"), [
    (error(500), "server_error", 2),
    # Judge versions without the permanent-4xx outcomes report server_error (not retried).
    (error(400, "InvalidRequestBody"), "request_rejected" if "request_rejected" in JUDGE_OUTCOMES else "server_error", 1),
    (malformed({"categoriesAnalysis": [{"category": "Hate", "severity": 0}]}), "parse_error", 1),
    (malformed({"categoriesAnalysis": [{"category": "Violence", "severity": 9}]}), "out_of_range", 1),
    (malformed({"categoriesAnalysis": [{"category": "Violence", "severity": "high"}]}), "parse_error", 1),
])
async def test_failures_are_error_scores_with_the_judge_outcomes(behaviour: Any, outcome: str, calls: int) -> None:
    telemetry = RecordingJudgeTelemetry()
    async with ContentSafetyServer() as server:
        server.script(behaviour, behaviour)
        score = await run_client(server, telemetry)
    assert (score.status, score.value, score.error_type) == ("error", None, outcome)
    assert len(server.calls) == calls and telemetry.outcomes == {outcome: 1}


async def test_a_wrong_key_is_an_auth_error_and_not_retried() -> None:
    async with ContentSafetyServer() as server:
        score = await run_client(server, api_key="wrong-key")
    expected = "auth_error" if "auth_error" in JUDGE_OUTCOMES else "server_error"
    assert (score.status, score.error_type) == ("error", expected) and len(server.calls) == 1


async def test_a_hanging_service_times_out_within_the_deadline() -> None:
    async with ContentSafetyServer() as server:
        server.script(hang(5), hang(5))
        started = time.monotonic()
        score = await run_client(server, timeout_seconds=0.2, deadline_seconds=1.0)
    assert (score.status, score.error_type) == ("error", "timeout") and time.monotonic() - started < 1.5


async def test_the_circuit_opens_after_repeated_outages() -> None:
    evaluation = EvaluationConfig.model_validate(
        {"metrics": [{"id": "violence", "backend": "azure_content_safety"}], "content_safety": {"endpoint": "http://x"}})
    async with ContentSafetyServer() as server:
        server.script(*[error(503)] * 4)
        cfg = config(server.endpoint, max_retries=0, circuit_breaker={"failure_threshold": 2, "open_seconds": 30})
        async with ContentSafetyClient(cfg) as client:
            evaluators = build_evaluators(evaluation, None, content_safety=client)
            outcomes = [(await evaluate_turn(turn(), evaluators))[0].error_type for _ in range(3)]
            assert client.circuit_state == "open"
    assert outcomes == ["server_error", "server_error", "circuit_open"] and len(server.calls) == 2


async def test_concurrency_is_capped() -> None:
    async with ContentSafetyServer(latency=0.05) as server:
        evaluation = EvaluationConfig.model_validate(
            {"metrics": [{"id": "violence", "backend": "azure_content_safety"}], "content_safety": {"endpoint": server.endpoint}})
        async with ContentSafetyClient(config(server.endpoint, max_concurrency=2)) as client:
            evaluators = build_evaluators(evaluation, None, content_safety=client)
            await asyncio.gather(*(evaluate_turn(turn(answer=f"answer {i}"), evaluators) for i in range(8)))
    assert len(server.calls) == 8 and server.max_in_flight == 2


async def test_the_key_comes_from_a_file_or_the_environment(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    async with ContentSafetyServer() as server:
        for cfg, environ in ((ContentSafetyConfig(endpoint=server.endpoint, api_key_file=key_file), {}),
                             (ContentSafetyConfig(endpoint=server.endpoint), {"AZURE_CONTENT_SAFETY_KEY": KEY})):
            async with ContentSafetyClient(cfg, environ=environ) as client:
                analysis = await client.analyze_text("hello", ["Sexual"])
            assert analysis.severities == {"Sexual": 0}
        with pytest.raises(ValueError, match=r"content_safety\.api_key: no key"):
            await ContentSafetyClient(ContentSafetyConfig(endpoint=server.endpoint), environ={}).start()
        with pytest.raises(ValueError, match=r"content_safety\.api_key_file: cannot read"):
            await ContentSafetyClient(ContentSafetyConfig(endpoint=server.endpoint, api_key_file=tmp_path / "nope")).start()
    assert all(c.headers["Ocp-Apim-Subscription-Key"] == KEY for c in server.calls)


@pytest.mark.parametrize(("section", "message"), [
    ({"metrics": [{"id": "coherence", "backend": "azure_content_safety"}], "content_safety": {"endpoint": "https://x"}},
     "metrics[0]: coherence: backend azure_content_safety scores only"),
    ({"metrics": [{"id": "violence", "backend": "azure_content_safety"}]},
     "metrics[0]: violence: backend azure_content_safety needs content_safety.endpoint"),
    ({"content_safety": {"endpoint": "my-resource"}}, "expected an http(s) URL"),
    ({"content_safety": {"endpoint": "https://x", "groundedness_reasoning": True}},
     "groundedness_reasoning needs reasoning_openai_endpoint"),
    ({"content_safety": {"endpoint": "https://x", "api_key": "k", "api_key_file": "/k"}}, "not both"),
    ({"content_safety": {"endpoint": "https://x", "max_retries": 99}}, "max_retries"),
])
def test_config_errors_name_the_field(section: Mapping[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        EvaluationConfig.model_validate(section)
    text = str(caught.value)
    assert message in text and "api_key': 'k'" not in text


async def test_a_service_metric_without_a_client_is_a_build_error() -> None:
    evaluation = EvaluationConfig.model_validate(
        {"metrics": [{"id": "sexual", "backend": "azure_content_safety"}], "content_safety": {"endpoint": "https://x"}})
    with pytest.raises(ValueError, match="needs a Content Safety client"):
        build_evaluators(evaluation, None)
