from __future__ import annotations

from monitor.judge.breaker import CircuitBreaker
from monitor.judge.telemetry import RecordingJudgeTelemetry
from tests.judge.fakes import FakeClock


def make() -> tuple[CircuitBreaker, FakeClock, RecordingJudgeTelemetry]:
    clock, telemetry = FakeClock(), RecordingJudgeTelemetry()
    return CircuitBreaker(3, 30.0, clock, telemetry), clock, telemetry


def fail(breaker: CircuitBreaker, times: int = 1) -> None:
    for _ in range(times):
        admission = breaker.allow()
        assert admission is not None
        breaker.failure(admission)


def test_opens_after_consecutive_failures_only() -> None:
    breaker, _, _ = make()
    fail(breaker, 2)
    ok = breaker.allow()
    assert ok is not None
    breaker.success(ok)  # resets the streak
    fail(breaker, 2)
    assert breaker.state == "closed"
    fail(breaker)
    assert breaker.state == "open"
    assert breaker.allow() is None


def test_half_open_lets_one_probe_and_closes_on_success() -> None:
    breaker, clock, telemetry = make()
    fail(breaker, 3)
    clock.advance(29.9)
    assert breaker.allow() is None
    clock.advance(0.1)
    probe = breaker.allow()
    assert probe is not None and probe.probe
    assert breaker.allow() is None  # only one probe at a time
    breaker.success(probe)
    assert breaker.state == "closed"
    assert telemetry.circuit_states == ["open", "half_open", "closed"]


def test_failed_probe_reopens_for_a_full_cool_down() -> None:
    breaker, clock, _ = make()
    fail(breaker, 3)
    clock.advance(30)
    fail(breaker)  # the probe
    assert breaker.state == "open"
    clock.advance(29)
    assert breaker.allow() is None


def test_released_probe_frees_the_slot() -> None:
    breaker, clock, _ = make()
    fail(breaker, 3)
    clock.advance(30)
    probe = breaker.allow()
    assert probe is not None
    breaker.release(probe)  # e.g. no budget: it never reached the server
    assert breaker.state == "half_open"
    assert breaker.allow() is not None


def test_late_failures_do_not_extend_the_cool_down() -> None:
    breaker, clock, _ = make()
    early = [breaker.allow() for _ in range(5)]
    for admission in early[:3]:
        assert admission is not None
        breaker.failure(admission)
    clock.advance(20)
    for admission in early[3:]:
        assert admission is not None
        breaker.failure(admission)  # sent before the circuit opened, answered late
    clock.advance(10)
    assert breaker.allow() is not None
