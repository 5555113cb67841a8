"""Redaction: personal data replaced by typed placeholders before text leaves the process."""

from monitor.redaction.config import PatternConfig, RedactionConfig
from monitor.redaction.redactor import (
    CountingRedactionTelemetry,
    NullRedactionTelemetry,
    RedactionTelemetry,
    Redactor,
)

__all__ = ["RedactionConfig", "PatternConfig", "Redactor", "RedactionTelemetry", "NullRedactionTelemetry",
           "CountingRedactionTelemetry"]
