"""A telemetry double that records every call and refuses calls the real sinks would not take."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any, Callable

from monitor.telemetry import CountingTelemetry
from samplers.telemetry import SamplingTelemetry


class RecordingTelemetry(CountingTelemetry):
    """Generic ``add(counter, n, **labels)`` is checked against the counter's declared labels
    (``CountingTelemetry``). Named calls (the sampling telemetry's decisions and gauges) must be
    methods of ``protocols`` and bind to their signatures: a misspelt method or
    a wrong argument fails the test that makes it. ``counts[(method, first argument)]`` sums the
    named calls' counts."""

    def __init__(self, *protocols: type) -> None:
        super().__init__()
        self._protocols = protocols or (SamplingTelemetry,)
        self.counts: Counter[tuple[str, str]] = Counter()

    def __getattr__(self, name: str) -> Callable[..., None]:
        declared = [getattr(p, name) for p in self._protocols if callable(getattr(p, name, None))]
        if name.startswith("_") or not declared:
            raise AttributeError(f"{name!r} is not a telemetry call of {[p.__name__ for p in self._protocols]}")
        signature = inspect.signature(declared[0])

        def record(*args: Any, **kwargs: Any) -> None:
            signature.bind(self, *args, **kwargs)  # TypeError on a wrong call, as the real sink would raise
            label = str(args[0]) if args else ""
            count = next((a for a in args[1:] if isinstance(a, int) and not isinstance(a, bool)), 1)
            self.counts[(name, label)] += count

        return record
