"""One module per metric. Each public module defines ``register(registry)``; modules whose
name starts with ``_`` are helpers shared by several metrics and are not scanned."""

from __future__ import annotations

__all__: list[str] = []
