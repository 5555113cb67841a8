"""What each configured metric means, for readers of the status page and ``/api/summary``.

The descriptions are built by the evaluation stage (``monitor.evaluation.catalogue``) and handed
over by the composition root; the admin reads them through :class:`MetricDescription`.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

__all__ = ["MetricDescription", "catalogue_document"]


class MetricDescription(Protocol):
    """One configured metric as the admin shows it."""

    @property
    def summary(self) -> str: ...

    @property
    def tier(self) -> str: ...

    @property
    def scale(self) -> tuple[float, float]: ...

    @property
    def direction(self) -> str: ...

    @property
    def defect_rule(self) -> str: ...

    @property
    def enabled(self) -> bool: ...

    @property
    def off_reason(self) -> str | None: ...


def catalogue_document(catalogue: Mapping[str, MetricDescription]) -> dict[str, Any]:
    """``/api/summary``'s ``catalogue``: metric → its description (see ``monitor.admin.api``)."""
    return {m: {"summary": i.summary, "tier": i.tier, "scale": list(i.scale), "direction": i.direction,
                "defect_rule": i.defect_rule, "enabled": i.enabled, "off_reason": i.off_reason}
            for m, i in catalogue.items()}
