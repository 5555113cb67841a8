"""Exporters: Prometheus, OTLP metrics, evaluation events, result store."""
