"""A small Okapi BM25 index for short documents (tool descriptions, memories, skills).

Pure Python, no dependency: an inverted index of term -> [(doc, term frequency)], so a query
only touches the postings of its own terms. Fast enough for a few thousand short documents
(well under a millisecond a query).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

# Very common English words that carry no signal for ranking.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with"
    " you your".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; camelCase, snake_case and ``__`` separated names are split apart."""
    text = _CAMEL.sub(" ", text)
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25Index:
    """BM25 over a fixed list of documents; ``search`` returns (doc index, score), best first."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._size = len(documents)
        self._postings: dict[str, list[tuple[int, int]]] = {}
        lengths: list[int] = []
        for doc_id, text in enumerate(documents):
            tokens = tokenize(text)
            lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                self._postings.setdefault(term, []).append((doc_id, tf))
        avg = (sum(lengths) / len(lengths)) if lengths else 0.0
        avg = avg or 1.0
        # Precompute the per-document length normalisation once.
        self._norm = [k1 * (1.0 - b + b * n / avg) for n in lengths]
        self._idf = {
            term: math.log(1.0 + (self._size - len(p) + 0.5) / (len(p) + 0.5))
            for term, p in self._postings.items()
        }

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str) -> dict[int, float]:
        """Score of every document that shares at least one term with ``query``."""
        result: dict[int, float] = {}
        k1 = self.k1
        norm = self._norm
        for term in set(tokenize(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self._idf[term]
            for doc_id, tf in postings:
                result[doc_id] = result.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm[doc_id])
        return result

    def search(self, query: str, k: int = 10) -> list[tuple[int, float]]:
        """The ``k`` best (doc index, score) pairs with a positive score; ties keep document order."""
        scored = self.scores(query)
        if k <= 0 or not scored:
            return []
        return heapq.nsmallest(k, scored.items(), key=lambda item: (-item[1], item[0]))
