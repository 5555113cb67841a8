"""Redaction: personal data replaced by typed placeholders before text leaves the process."""

from monitor.redaction.config import PatternConfig, RedactionConfig
from monitor.redaction.redactor import REDACTIONS, Redactor

__all__ = ["RedactionConfig", "PatternConfig", "Redactor", "REDACTIONS"]
