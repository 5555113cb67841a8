"""The sampling configuration in one line of words, for the start-up log and the status page.

"Why was nothing evaluated?" is answered first by knowing which policy decides; the words say
what each policy keeps, e.g. ``always (error exists | jailbreak_attempt == True), else
rate_limit: every conversation up to 0.2/s (burst 20), then a weighted sample``.
"""

from __future__ import annotations

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

__all__ = ["describe_sampling", "describe_policy"]


def _rule(rule: RuleConfig) -> str:
    if rule.op == "exists":
        return f"{rule.field} exists"
    return f"{rule.field} {rule.op} {rule.value}"


def _named(policy: PolicyConfig, text: str) -> str:
    prefix = policy.policy_name if policy.name else str(getattr(policy, "type"))
    return f"{prefix}: {text}" if text else prefix


def describe_policy(policy: PolicyConfig) -> str:
    """One policy (recursively) in words."""
    if isinstance(policy, AlwaysConfig):
        if not policy.rules:
            return _named(policy, "every conversation")
        joiner = " & " if policy.match == "all" else " | "
        return f"{policy.policy_name} ({joiner.join(_rule(r) for r in policy.rules)})"
    if isinstance(policy, ProbabilisticConfig):
        return _named(policy, "every conversation" if policy.rate >= 1.0 else f"{policy.rate:.0%} of conversations")
    if isinstance(policy, RateLimitConfig):
        burst = policy.burst if policy.burst is not None else max(1.0, policy.conversations_per_second)
        return _named(policy, f"every conversation up to {policy.conversations_per_second:g}/s (burst {burst:g}), "
                              "then a weighted sample")
    if isinstance(policy, JudgeBudgetConfig):
        per = f" ({policy.replicas} replicas)" if policy.replicas > 1 else ""
        return _named(policy, f"as many conversations as {policy.tokens_per_minute:g} judge tokens/min{per} allow")
    if isinstance(policy, StratifiedConfig):
        if policy.rates is not None:
            return _named(policy, f"by {policy.by}: rates {dict(policy.rates)}, else {policy.default_rate:g}")
        return _named(policy, f"by {policy.by}: quotas {dict(policy.quotas or {})}/s, else {policy.default_quota:g}/s")
    if isinstance(policy, CompositeConfig):
        joiner = " and " if policy.mode == "all_of" else ", else "
        return f"{policy.policy_name} [{joiner.join(describe_policy(p) for p in policy.policies)}]"
    return str(getattr(policy, "type", "?"))


def describe_sampling(config: SamplingConfig) -> str:
    """The top-level list (first match wins) in words."""
    return ", else ".join(describe_policy(p) for p in config.policies)
