"""Offline tools: ``rag-monitor eval`` (datasets through the evaluators), ``inspect`` (saved OTLP
bodies through the assembler) and ``compare`` (local tier vs a safety service on one dataset).

They reuse the pipeline's stages; nothing in the serving path imports this package."""
