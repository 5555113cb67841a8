"""Accuracy figures of the detector on a labelled set: recall, false positives, AUC, by source.

"Hard negatives" are benign texts that use attack vocabulary (the words below) or come from a
source built of such texts; they are what a keyword filter gets wrong, so the flag threshold is
judged on them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from tools.jailbreak_detector.example import Example

__all__ = ["is_hard_negative", "Report", "report", "auc"]

HARD_NEGATIVE_SOURCES = frozenset({"bastioncorpus/benign", "rag-monitor/hard-negatives"})
_TRIGGERS = re.compile(
    r"\b(ignor\w*|disregard|forget|override|bypass\w*|jailbr\w*|developer|admin\w*|system|prompts?|instructions?|"
    r"pretend|act as|role|dan|mode|unrestricted|unfiltered|uncensored|decode|base64|reveal|repeat|sudo|root|"
    r"hack\w*|kill\w*|exploit\w*|rules?|secret|hypothetical\w*|imagine|character)\b",
    re.IGNORECASE,
)


def is_hard_negative(example: Example) -> bool:
    return example.label == 0 and (example.source in HARD_NEGATIVE_SOURCES or bool(_TRIGGERS.search(example.text[:4096])))


def auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (rank statistic; ties count half)."""
    pairs = sorted(zip(scores, labels))
    ranks = [0.0] * len(pairs)
    i = 0
    while i < len(pairs):
        j = i
        while j + 1 < len(pairs) and pairs[j + 1][0] == pairs[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return float("nan")
    rank_sum = sum(r for r, (_, label) in zip(ranks, pairs) if label)
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


@dataclass(frozen=True)
class Report:
    threshold: float
    attacks: int
    benign: int
    hard_negatives: int
    recall: float
    fpr: float
    hard_fpr: float
    auc: float
    by_source: dict[str, tuple[int, float]]
    """source -> (count, share flagged)."""

    def lines(self) -> list[str]:
        out = [
            f"threshold {self.threshold:.3f}: recall {self.recall:.3f} on {self.attacks} attacks; "
            f"FPR {self.fpr:.3f} on {self.benign} benign, {self.hard_fpr:.3f} on {self.hard_negatives} hard negatives; "
            f"AUC {self.auc:.3f}",
        ]
        out += [f"  {source:40s} n={n:5d} flagged {share:.3f}" for source, (n, share) in sorted(self.by_source.items())]
        return out


def report(examples: Sequence[Example], scores: Sequence[float], threshold: float) -> Report:
    flagged = [s >= threshold for s in scores]
    attacks = [f for e, f in zip(examples, flagged) if e.label]
    benign = [f for e, f in zip(examples, flagged) if not e.label]
    hard = [f for e, f in zip(examples, flagged) if is_hard_negative(e)]
    # A source with both labels (attack sources carry the benign controls of their embedded
    # copies, augment.py) is reported once per label, so "flagged" reads as recall or as FPR.
    labels: dict[str, set[int]] = defaultdict(set)
    for example in examples:
        labels[example.source].add(example.label)
    sources: dict[str, list[bool]] = defaultdict(list)
    for example, flag in zip(examples, flagged):
        mixed = len(labels[example.source]) > 1
        sources[example.source + ((" [attack]" if example.label else " [benign]") if mixed else "")].append(flag)
    share = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return Report(
        threshold, len(attacks), len(benign), len(hard), share(attacks), share(benign), share(hard),
        auc([e.label for e in examples], scores),
        {s: (len(v), share(v)) for s, v in sources.items()},
    )
