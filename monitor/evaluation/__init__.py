"""Evaluation: metric evaluators (judge tier and local tier), their registry and runner.

Build evaluators from config with :func:`monitor.evaluation.registry.build_evaluators`; run
them on a turn with :func:`monitor.evaluation.runner.evaluate_turn`.
"""

from __future__ import annotations

__all__: list[str] = []
