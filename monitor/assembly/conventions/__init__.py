"""The conventions the assembler understands, in precedence order.

A new instrumentation or framework is one module here (its attribute names and shapes, behind
the :class:`~monitor.assembly.conventions.base.Convention` interface) plus its captures under
``tests/testdata/captures/``; the turn builder never names an attribute.

Order matters where one span speaks two conventions: OpenInference with GenAI attributes on
writes the *response* model into ``gen_ai.request.model``, so its own keys are read first.
"""

from __future__ import annotations

from monitor.assembly.conventions import genai, haystack, openinference, openllmetry
from monitor.assembly.conventions.base import Convention

__all__ = ["CONVENTIONS"]

CONVENTIONS: tuple[Convention, ...] = (
    openinference.CONVENTION,
    genai.CONVENTION,
    openllmetry.CONVENTION,
    haystack.CONVENTION,
)
