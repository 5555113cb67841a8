"""One labelled text and where it came from."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Example"]


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: int  # 1 = jailbreak / prompt-injection attempt, 0 = benign
    source: str
    family: str = ""
    origin: int = -1
    """For a disguised copy (``augment.py``): the index of the text it was made from, so the
    copy and its original land in the same cross-validation fold."""
