"""The local tier: signals computed without an LLM, cheap enough for every sampled turn.

Their ids start with ``local_`` so nobody mistakes them for the judge metrics they resemble
(``local_lexical_groundedness`` is not ``groundedness``). ``f1_score`` also runs locally but is
a catalogue metric and lives in :mod:`monitor.evaluation.metrics.f1_score`.
"""

from __future__ import annotations

__all__: list[str] = []
