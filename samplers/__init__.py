"""Sampling policies: which conversations the evaluators see, with Horvitz–Thompson weights.

Build with :func:`build_sampler` from a :class:`SamplingConfig`, wrap in a
:class:`SamplingStage`, call ``stage.decide(turn, signals)`` per turn and
``stage.observe_usage(...)`` per judge call. See ``samplers/README.md``.
"""

from samplers.base import (
    NO_SIGNALS,
    OUTCOMES,
    Clock,
    OutcomeSampler,
    Plan,
    Policy,
    PolicySampler,
    SamplingResult,
    Signals,
    conversation_key,
    uniform,
)
from samplers.build import build_policy, build_sampler
from samplers.config import SamplingConfig, SamplingConfigError, error_lines, load_sampling_config
from samplers.feedback import UsageFeedback
from samplers.stage import SamplingStage
from samplers.telemetry import NullSamplingTelemetry, SamplingTelemetry

__all__ = [
    "NO_SIGNALS",
    "OUTCOMES",
    "Clock",
    "OutcomeSampler",
    "Plan",
    "Policy",
    "PolicySampler",
    "SamplingResult",
    "Signals",
    "conversation_key",
    "uniform",
    "build_policy",
    "build_sampler",
    "SamplingConfig",
    "SamplingConfigError",
    "error_lines",
    "load_sampling_config",
    "UsageFeedback",
    "SamplingStage",
    "NullSamplingTelemetry",
    "SamplingTelemetry",
]
