"""The conventions the assembler understands, in precedence order.

A new instrumentation or framework is one module here (its attribute names and shapes, behind
the :class:`~monitor.assembly.conventions.base.Convention` interface) plus its captures under
``tests/testdata/captures/``; the turn builder never names an attribute.

Order matters where one span speaks two conventions: OpenInference with GenAI attributes on
writes the *response* model into ``gen_ai.request.model``, so its own keys are read first. The AI
SDK's ``ai.operationId`` comes before the GenAI keys: OpenLLMetry-JS writes GenAI messages on the
AI SDK's wrapper span too, and only the operation id says it is the wrapper, not a model call.
"""

from __future__ import annotations

from monitor.assembly.conventions import aisdk, genai, haystack, openinference, openllmetry
from monitor.assembly.conventions.base import Convention

__all__ = ["CONVENTIONS"]

CONVENTIONS: tuple[Convention, ...] = (
    openinference.CONVENTION,
    aisdk.CONVENTION,
    genai.CONVENTION,
    openllmetry.CONVENTION,
    haystack.CONVENTION,
)
