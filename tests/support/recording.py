"""A Telemetry double that records every call (consumertest-style)."""

from __future__ import annotations

from collections import Counter
from typing import Any


class RecordingTelemetry:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def __getattr__(self, name: str) -> Any:
        def record(label: str, count: int = 1, *rest: Any) -> None:
            self.counts[(name, label)] += count if isinstance(count, int) else 1

        return record
