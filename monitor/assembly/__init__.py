"""Spans and log records → turns → conversations."""
