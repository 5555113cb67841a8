"""Sampling configuration: pydantic models, validated once at start, errors naming the key.

``policies`` is a list of policy tables discriminated by ``type``; the list is combined with
``first_match`` (a conversation is kept when any policy keeps it). Example (YAML)::

    sampling:
      salt: my-app
      policies:
        - type: always
          rules:
            - {field: error, op: exists}
            - {field: jailbreak_attempt, op: "==", value: true}
            - {field: labels.feedback, op: "<", value: 3}
        - type: stratified
          by: labels.route
          rates: {search: 0.05, billing: 0.5}
          default_rate: 0.05

Use :func:`load_sampling_config` (or :func:`error_lines` on a ``ValidationError`` from an
enclosing model) for messages whose paths read like the YAML: ``policies.0.rate``, not pydantic's
``policies.0.probabilistic.rate``.
"""

from __future__ import annotations

from typing import Annotated, Any, Iterator, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo
from pydantic import field_validator, model_validator

from samplers.always import ORDERING_OPS
from samplers.fields import check_field

__all__ = [
    "POLICY_TYPES",
    "RuleConfig",
    "ProbabilisticConfig",
    "RateLimitConfig",
    "JudgeBudgetConfig",
    "StratifiedConfig",
    "AlwaysConfig",
    "CompositeConfig",
    "PolicyConfig",
    "SamplingConfig",
    "SamplingConfigError",
    "default_policies",
    "DEFAULT_CONVERSATIONS_PER_SECOND",
    "DEFAULT_BURST",
    "error_lines",
    "load_sampling_config",
    "walk_policies",
]

POLICY_TYPES = ("probabilistic", "rate_limit", "judge_budget", "stratified", "always", "composite")

Rate = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Utilisation = Annotated[float, Field(gt=0.0, le=1.0)]
Scalar = Union[bool, float, str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _PolicyBase(_Strict):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.:\-]{1,64}$")
    """Label value in telemetry and ``SamplingDecision.policy``; defaults to the type."""

    @property
    def policy_name(self) -> str:
        """``name`` or, when unset, the type."""
        return self.name or str(getattr(self, "type"))


class _AdaptiveKnobs(_Strict):
    target_utilisation: Utilisation = 0.9
    """Share of the budget the adaptive probability aims at; the rest absorbs estimate error."""
    adjust_seconds: PositiveFloat = 5.0
    """How often the probability is recomputed from smoothed past traffic."""
    smoothing: Utilisation = 0.5
    """EWMA weight of the newest interval."""


class RuleConfig(_Strict):
    """``{field, op, value}``: e.g. ``{field: labels.feedback, op: "<", value: 3}``."""

    field: str
    op: Literal["exists", "==", "!=", "<", "<=", ">", ">=", "in"]
    value: Scalar | list[Scalar] | None = Field(None, validate_default=True)

    @field_validator("field")
    @classmethod
    def _known_field(cls, value: str) -> str:
        return check_field(value)

    @field_validator("value")
    @classmethod
    def _value_fits_op(cls, value: Any, info: ValidationInfo) -> Any:
        op = info.data.get("op")
        if op == "exists" and value is not None:
            raise ValueError("op 'exists' takes no value")
        if op == "in" and (not isinstance(value, list) or not value):
            raise ValueError("op 'in' needs a non-empty list")
        if op in ("==", "!=") and (value is None or isinstance(value, list)):
            raise ValueError(f"op {op!r} needs a single value")
        if op in ORDERING_OPS and (isinstance(value, (bool, str, list)) or value is None):
            raise ValueError(f"op {op!r} needs a number")
        return value


class ProbabilisticConfig(_PolicyBase):
    """Keep ``rate`` of conversations by hash of (salt, conversation id)."""

    type: Literal["probabilistic"]
    rate: Rate


class RateLimitConfig(_PolicyBase, _AdaptiveKnobs):
    """At most ``conversations_per_second``, bursts up to ``burst`` (default: max(1, rate))."""

    type: Literal["rate_limit"]
    conversations_per_second: PositiveFloat
    burst: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] | None = None


class JudgeBudgetConfig(_PolicyBase, _AdaptiveKnobs):
    """At most ``tokens_per_minute / replicas`` judge tokens per minute on this replica."""

    type: Literal["judge_budget"]
    tokens_per_minute: PositiveFloat
    replicas: Annotated[int, Field(ge=1)] = 1
    initial_tokens_per_turn: PositiveFloat = 3000.0
    initial_turns_per_conversation: Annotated[float, Field(ge=1.0)] = 2.0
    adjust_seconds: PositiveFloat = 10.0
    learning_seconds: PositiveFloat = 300.0
    """Horizon over which per-metric cost and conversation length are averaged."""
    conversation_idle_seconds: PositiveFloat = 300.0
    """A conversation without a turn for this long counts as finished (for its length)."""


class StratifiedConfig(_PolicyBase, _AdaptiveKnobs):
    """Per-value ``rates`` (with ``default_rate``) or ``quotas`` in conversations/second (with
    ``default_quota``; 0 means unlisted values are not sampled by this policy)."""

    type: Literal["stratified"]
    by: str
    rates: dict[str, Rate] | None = None
    default_rate: Rate | None = None
    quotas: dict[str, PositiveFloat] | None = None
    default_quota: NonNegativeFloat | None = None
    burst: Annotated[float, Field(ge=1.0, allow_inf_nan=False)] | None = None

    @field_validator("by")
    @classmethod
    def _known_field(cls, value: str) -> str:
        return check_field(value)

    @model_validator(mode="after")
    def _one_mode(self) -> "StratifiedConfig":
        if (self.rates is None) == (self.quotas is None):
            raise ValueError("set exactly one of 'rates' or 'quotas'")
        if self.rates is not None and (self.default_rate is None or self.default_quota is not None):
            raise ValueError("'rates' needs 'default_rate' (and no 'default_quota')")
        if self.quotas is not None and (self.default_quota is None or self.default_rate is not None):
            raise ValueError("'quotas' needs 'default_quota' (and no 'default_rate')")
        return self


class AlwaysConfig(_PolicyBase):
    """Inclusion probability 1 when any rule (``match: all``: every rule) fires; without
    ``rules``, every conversation (``{type: always}``: evaluate everything)."""

    type: Literal["always"]
    rules: list[RuleConfig] = Field(default_factory=list)
    match: Literal["any", "all"] = "any"


class CompositeConfig(_PolicyBase):
    """``first_match`` (any child keeps it) or ``all_of`` (every child keeps it)."""

    type: Literal["composite"]
    mode: Literal["first_match", "all_of"] = "first_match"
    policies: list["PolicyConfig"] = Field(min_length=1)


PolicyConfig = Annotated[
    Union[
        ProbabilisticConfig,
        RateLimitConfig,
        JudgeBudgetConfig,
        StratifiedConfig,
        AlwaysConfig,
        CompositeConfig,
    ],
    Field(discriminator="type"),
]
CompositeConfig.model_rebuild()


DEFAULT_CONVERSATIONS_PER_SECOND = 0.2
DEFAULT_BURST = 20.0


def default_policies() -> list[PolicyConfig]:
    """The default at every traffic level: every error or jailbreak attempt, then every
    conversation while they arrive slower than 0.9 × 0.2/s (10 a minute; bursts of 20 pass whole),
    and above that an evenly thinned sample capped at that rate, each kept conversation weighted
    by 1/p. So a developer's first conversations are all evaluated, and judge spend stays
    bounded however large the traffic grows."""
    always = AlwaysConfig.model_validate(
        {
            "type": "always",
            "rules": [
                {"field": "error", "op": "exists"},
                {"field": "jailbreak_attempt", "op": "==", "value": True},
            ],
        }
    )
    # A minute of arrivals per estimate: with 5 s intervals a trickle of 10 a minute reads as
    # bursts of 0.2/s and would be thinned although it is under the cap.
    capped = RateLimitConfig.model_validate(
        {"type": "rate_limit", "conversations_per_second": DEFAULT_CONVERSATIONS_PER_SECOND, "burst": DEFAULT_BURST,
         "adjust_seconds": 60.0})
    return [always, capped]


def walk_policies(
    policies: list[PolicyConfig], path: str = "policies"
) -> Iterator[tuple[str, PolicyConfig]]:
    """Every policy in the tree with its key path (``policies.1.policies.0``), depth first."""
    for index, policy in enumerate(policies):
        here = f"{path}.{index}"
        yield here, policy
        if isinstance(policy, CompositeConfig):
            yield from walk_policies(policy.policies, f"{here}.policies")


class SamplingConfig(_Strict):
    """The ``sampling`` section."""

    salt: str = Field("rag-monitor", min_length=1)
    """Hash salt; keep it equal on every replica so they agree, change it to re-draw."""
    policies: list[PolicyConfig] = Field(default_factory=default_policies, min_length=1)
    max_conversations: Annotated[int, Field(ge=1)] = 100_000
    """Bound of the stage's per-conversation decision cache (oldest evicted first)."""
    weight_interval_seconds: Annotated[float, Field(ge=1.0, le=300.0, allow_inf_nan=False)] = 5.0
    """Post-stratification interval (``samplers.weighting``): where a hard cap shed conversations, the
    kept ones of the interval weigh (1/p) x selected / kept. A result of a capped policy waits for its
    interval to close (in a fleet, plus a second or two) before it is exported with that weight."""

    @model_validator(mode="after")
    def _unique_names(self) -> "SamplingConfig":
        seen: dict[str, str] = {}
        for path, policy in walk_policies(self.policies):
            name = policy.policy_name
            if name in seen:
                raise ValueError(
                    f"{path}.name: policy name {name!r} is already used at {seen[name]}; "
                    "set a distinct 'name'"
                )
            seen[name] = path
        return self


class SamplingConfigError(ValueError):
    """Invalid sampling config; ``lines`` are ``"<key path>: <problem>"``."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("invalid sampling config:\n  " + "\n  ".join(lines))
        self.lines = lines


_TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")


def _clean_loc(loc: tuple[int | str, ...]) -> str:
    # Pydantic puts the union tag after the list index (policies.0.probabilistic.rate);
    # the user wrote policies.0.rate.
    parts: list[str] = []
    for i, part in enumerate(loc):
        if part in POLICY_TYPES and i >= 1 and isinstance(loc[i - 1], int):
            continue
        parts.append(str(part))
    return ".".join(parts)


def error_lines(error: ValidationError, prefix: str = "") -> list[str]:
    """One ``"path: message"`` line per problem, union tags removed from paths."""
    lines = []
    for item in error.errors():
        path = _clean_loc(tuple(item["loc"]))
        if item["type"] in _TAG_ERRORS:
            path = f"{path}.type"
        full = ".".join(p for p in (prefix, path) if p)
        lines.append(f"{full}: {item['msg']}" if full else str(item["msg"]))
    return lines


def load_sampling_config(data: Mapping[str, Any]) -> SamplingConfig:
    """Validate ``data``; raise :class:`SamplingConfigError` naming every bad key."""
    try:
        return SamplingConfig.model_validate(data)
    except ValidationError as error:
        raise SamplingConfigError(error_lines(error)) from None
