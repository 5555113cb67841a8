"""Which label values (route, model, version, ...) carry a change in a weighted rate.

The overall change of a weighted mean between two periods splits exactly into one term per label
value (a shift-share decomposition):

    Δ = Σ_v  π̄_v (r_after,v − r_before,v)  +  r̄_v (π_after,v − π_before,v)

where ``π`` is the value's share of the weight and ``r`` its rate in each period, barred ones the
average of both periods. The first term is the change within the value, the second the change in
how much traffic it carries. A value's ``share`` is its positive term over the sum of the
positive terms, so the reported drivers of an increase add up to at most 1. A label with a single
value (one model for everything) is not a driver.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from monitor.regression.results import Driver

__all__ = ["LabelTable", "OTHER", "drivers"]

OTHER = "other"


class LabelTable:
    """Weighted sums per (label key, value), bounded in keys and values per key.

    Values beyond ``values_per_label`` fold into ``"other"``; keys beyond ``labels`` are ignored,
    so an unbounded label cannot grow the state.
    """

    __slots__ = ("_labels", "_values", "_cells")

    def __init__(self, labels: int, values_per_label: int) -> None:
        self._labels = labels
        self._values = values_per_label
        # key -> value -> [n, Σw, Σw·x]
        self._cells: dict[str, dict[str, list[float]]] = {}

    def _cell(self, key: str, value: str) -> list[float] | None:
        per_key = self._cells.get(key)
        if per_key is None:
            if len(self._cells) >= self._labels:
                return None
            per_key = self._cells[key] = {}
        cell = per_key.get(value)
        if cell is None:
            if len(per_key) >= self._values - 1 and value != OTHER:
                value = OTHER  # the last slot is kept for everything that did not fit
                cell = per_key.get(value)
            if cell is None:
                cell = per_key[value] = [0.0, 0.0, 0.0]
        return cell

    def add(self, labels: Mapping[str, str], weight: float, x: float) -> None:
        for key, value in labels.items():
            cell = self._cell(key, value)
            if cell is not None:
                cell[0] += 1.0
                cell[1] += weight
                cell[2] += weight * x

    def merge(self, other: LabelTable) -> None:
        for key, per_key in other._cells.items():
            for value, (n, sw, swx) in per_key.items():
                cell = self._cell(key, value)
                if cell is not None:
                    cell[0] += n
                    cell[1] += sw
                    cell[2] += swx

    def decay(self, factor: float) -> None:
        """Multiply every sum by ``factor`` (0..1]: an exponentially weighted history."""
        for per_key in self._cells.values():
            for cell in per_key.values():
                cell[0] *= factor
                cell[1] *= factor
                cell[2] *= factor

    def clear(self) -> None:
        self._cells.clear()

    def keys(self) -> Iterable[str]:
        return self._cells.keys()

    def cells(self, key: str) -> Mapping[str, list[float]]:
        return self._cells.get(key, {})


def _rate(cell: list[float] | None) -> float | None:
    if cell is None or cell[1] <= 0:
        return None
    return cell[2] / cell[1]


def drivers(before: LabelTable, after: LabelTable, limit: int) -> tuple[Driver, ...]:
    """The label values carrying the largest share of the increase from ``before`` to ``after``."""
    candidates: list[tuple[float, Driver]] = []
    for key in set(before.keys()) | set(after.keys()):
        b_cells, a_cells = before.cells(key), after.cells(key)
        if len(set(b_cells) | set(a_cells)) < 2:
            continue  # one value carries everything and explains nothing
        b_total = sum(c[1] for c in b_cells.values())
        a_total = sum(c[1] for c in a_cells.values())
        if b_total <= 0 or a_total <= 0:
            continue
        b_rate = sum(c[2] for c in b_cells.values()) / b_total
        a_rate = sum(c[2] for c in a_cells.values()) / a_total
        terms: list[tuple[str, float, float | None, float | None, int]] = []
        for value in set(b_cells) | set(a_cells):
            b_cell, a_cell = b_cells.get(value), a_cells.get(value)
            rb, ra = _rate(b_cell), _rate(a_cell)
            pb = b_cell[1] / b_total if b_cell else 0.0
            pa = a_cell[1] / a_total if a_cell else 0.0
            # A value absent on one side is compared with that side's overall rate.
            ra_or = ra if ra is not None else a_rate
            rb_or = rb if rb is not None else b_rate
            term = 0.5 * (pa + pb) * (ra_or - rb_or) + 0.5 * (ra_or + rb_or) * (pa - pb)
            terms.append((value, term, rb, ra, int(round(a_cell[0])) if a_cell else 0))
        positive = sum(t for _, t, _, _, _ in terms if t > 0)
        if positive <= 0:
            continue
        for value, term, rb, ra, n in terms:
            if term > 0:
                share = term / positive
                candidates.append((term, Driver(key, value, rb, ra, share, n)))
    candidates.sort(key=lambda item: (-item[0], item[1].label, item[1].value))
    return tuple(driver for _, driver in candidates[:limit])
