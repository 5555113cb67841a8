"""Turn a validated :class:`samplers.config.SamplingConfig` into a policy tree and its root."""

from __future__ import annotations

import logging
from typing import Callable

from samplers.adaptive import SharedTraffic, ThinnedLimiter
from samplers.always import AlwaysPolicy, Rule
from samplers.base import Clock, Policy, PolicySampler
from samplers.composite import CompositePolicy
from samplers.config import (
    AlwaysConfig,
    CompositeConfig,
    JudgeBudgetConfig,
    PolicyConfig,
    ProbabilisticConfig,
    RateLimitConfig,
    RuleConfig,
    SamplingConfig,
    StratifiedConfig,
)
from samplers.judge_budget import JudgeBudgetPolicy
from samplers.probabilistic import ProbabilisticPolicy
from samplers.rate_limit import RateLimitPolicy
from samplers.stratified import OTHER_STRATUM, StratifiedQuotaPolicy, StratifiedRatePolicy
from samplers.telemetry import NullSamplingTelemetry, SamplingTelemetry

__all__ = ["ROOT_NAME", "build_policy", "build_sampler"]

log = logging.getLogger(__name__)

ROOT_NAME = "sampling"
"""Name of the implicit ``first_match`` over the top-level list (when it has several entries)."""


def build_sampler(
    config: SamplingConfig,
    clock: Clock,
    telemetry: SamplingTelemetry | None = None,
    shared: SharedTraffic | None = None,
) -> PolicySampler:
    """The sampler for ``config``: the top-level list combined by ``first_match``.

    ``clock`` is monotonic seconds (``time.monotonic``), or wall-clock seconds in a fleet, where
    ``shared`` gives the adaptive policies the fleet's arrivals and this replica's share of each
    cap; adaptive policies report their probability to ``telemetry`` whenever they adjust it.
    """
    sink = telemetry or NullSamplingTelemetry()
    children = [build_policy(policy, clock, sink, shared) for policy in config.policies]
    root = children[0] if len(children) == 1 else CompositePolicy(ROOT_NAME, "first_match", children)
    return PolicySampler(root, config.salt, sink)


def build_policy(config: PolicyConfig, clock: Clock, telemetry: SamplingTelemetry,
                 shared: SharedTraffic | None = None) -> Policy:
    """One policy (recursively for composites)."""
    name = config.policy_name
    if isinstance(config, ProbabilisticConfig):
        return ProbabilisticPolicy(name, config.rate)
    if isinstance(config, AlwaysConfig):
        rules = tuple(_rule(rule) for rule in config.rules)
        return AlwaysPolicy(name, rules, match_all=config.match == "all")
    if isinstance(config, RateLimitConfig):
        limiter = _limiter(config, config.conversations_per_second, config.burst, clock, _gauge(telemetry, name),
                           shared, name)
        return RateLimitPolicy(name, limiter)
    if isinstance(config, JudgeBudgetConfig):
        return _judge_budget(config, clock, telemetry, shared)
    if isinstance(config, StratifiedConfig):
        return _stratified(config, clock, telemetry, shared)
    if isinstance(config, CompositeConfig):
        children = [build_policy(child, clock, telemetry, shared) for child in config.policies]
        return CompositePolicy(name, config.mode, children)
    raise TypeError(f"no builder for {type(config).__name__}")


def _rule(config: RuleConfig) -> Rule:
    value = tuple(config.value) if isinstance(config.value, list) else config.value
    return Rule(config.field, config.op, value)


def _gauge(telemetry: SamplingTelemetry, policy: str) -> Callable[[float], None]:
    return lambda value: telemetry.probability(policy, value)


def _limiter(
    config: RateLimitConfig | StratifiedConfig,
    rate: float,
    burst: float | None,
    clock: Clock,
    on_change: Callable[[float], None],
    shared: SharedTraffic | None,
    node: str,
) -> ThinnedLimiter:
    return ThinnedLimiter(
        clock,
        rate,
        burst if burst is not None else max(1.0, rate),
        target_utilisation=config.target_utilisation,
        adjust_seconds=config.adjust_seconds,
        smoothing=config.smoothing,
        on_change=on_change,
        shared=shared,
        node=node,
    )


def _judge_budget(config: JudgeBudgetConfig, clock: Clock, telemetry: SamplingTelemetry,
                  shared: SharedTraffic | None) -> Policy:
    name = config.policy_name
    replicas = config.replicas
    if shared is not None and replicas != 1:
        log.warning("sampling policy %r: 'replicas' is deprecated and ignored in a fleet (fleet.redis_url): "
                    "tokens_per_minute is the fleet's budget", name)
        replicas = 1
    return JudgeBudgetPolicy(
        name,
        clock,
        tokens_per_minute=config.tokens_per_minute / replicas,
        initial_tokens_per_turn=config.initial_tokens_per_turn,
        initial_turns_per_conversation=config.initial_turns_per_conversation,
        target_utilisation=config.target_utilisation,
        adjust_seconds=config.adjust_seconds,
        smoothing=config.smoothing,
        learning_seconds=config.learning_seconds,
        conversation_idle_seconds=config.conversation_idle_seconds,
        on_change=_gauge(telemetry, name),
        shared=shared,
    )


def _stratified(config: StratifiedConfig, clock: Clock, telemetry: SamplingTelemetry,
                shared: SharedTraffic | None) -> Policy:
    name = config.policy_name
    if config.rates is not None:
        return StratifiedRatePolicy(name, config.by, dict(config.rates), config.default_rate or 0.0)
    quotas = dict(config.quotas or {})
    if config.default_quota:
        quotas[OTHER_STRATUM] = config.default_quota
    limiters = {
        stratum: _limiter(config, quota, config.burst, clock, _gauge(telemetry, f"{name}:{stratum}"), shared,
                          f"{name}:{stratum}")
        for stratum, quota in quotas.items()
    }
    return StratifiedQuotaPolicy(name, config.by, limiters)
