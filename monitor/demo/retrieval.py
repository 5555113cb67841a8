"""The sample app's retriever: lexical ranking within the chat route's collection.

A healthy retriever searches the route's own collection. The scripted regression is a routing
mistake of the kind a config change makes: every route is pointed at the *next* collection, so
the retriever still returns plausible, well-scored articles, only about the wrong subject.
Ranking is an IDF-weighted word overlap (a plural "s" is tolerated), deterministic and cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from monitor.demo.corpus import COLLECTION_OF_ROUTE, DOCUMENTS, CorpusDocument
from monitor.evaluation.local.text import content_words, words

__all__ = ["Retrieved", "Retriever", "TOP_K"]

TOP_K = 2


@dataclass(frozen=True, slots=True)
class Retrieved:
    document: CorpusDocument
    score: float  # 0–1, share of the best possible match


def _stems(text: str) -> set[str]:
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in content_words(words(text))}


class Retriever:
    """``search(route, query)`` → the ``top_k`` best articles of the route's collection."""

    def __init__(self, documents: Sequence[CorpusDocument] = DOCUMENTS, top_k: int = TOP_K) -> None:
        self._top_k = top_k
        self._collections: dict[str, list[tuple[CorpusDocument, set[str]]]] = {}
        for doc in documents:
            self._collections.setdefault(doc.collection, []).append((doc, _stems(f"{doc.title} {doc.content}")))
        frequency: dict[str, int] = {}
        for entries in self._collections.values():
            for _, stems in entries:
                for stem in stems:
                    frequency[stem] = frequency.get(stem, 0) + 1
        total = len(documents)
        self._idf = {stem: math.log(1 + total / n) for stem, n in frequency.items()}
        names = sorted(self._collections)
        # The regression's routing mistake: each collection is swapped for the next one.
        self._shifted = {name: names[(i + 1) % len(names)] for i, name in enumerate(names)}
        self.regressed = False

    def collection_for(self, route: str) -> str:
        """The collection a route's questions are searched in (the wrong one once regressed)."""
        own = COLLECTION_OF_ROUTE[route]
        return self._shifted[own] if self.regressed else own

    def search(self, route: str, query: str) -> list[Retrieved]:
        wanted = _stems(query)
        best = sum(self._idf.get(s, 0.0) for s in wanted) or 1.0
        scored = []
        for doc, stems in self._collections[self.collection_for(route)]:
            overlap = sum(self._idf[s] for s in wanted & stems)
            scored.append(Retrieved(doc, round(overlap / best, 4)))
        # Stable order for ties: the collection's own order.
        scored.sort(key=lambda r: -r.score)
        return scored[: self._top_k]
