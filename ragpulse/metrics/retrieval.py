"""Per-query retrieval metrics, agreeing with trec_eval (P_k, recall_k, recip_rank, ndcg_cut_k, map).

Every function takes `grades`: the relevance grade at each rank of the ranking, as built by `graded_ranking`.
A document is relevant when its grade is >= 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

RELEVANT = 1
"""Smallest grade that counts as relevant."""


def graded_ranking(ranked_ids: Iterable[str], qrels: Mapping[str, int]) -> list[int]:
    """Grade at each rank (1-based rank = index + 1).

    A document seen again at a later rank (another chunk of it) counts once, at its first rank; the later
    slot is non-relevant (grade 0) but still occupies its rank.
    """
    seen: set[str] = set()
    grades = []
    for doc_id in ranked_ids:
        grades.append(0 if doc_id in seen else qrels.get(doc_id, 0))
        seen.add(doc_id)
    return grades


def relevant_count(qrels: Mapping[str, int]) -> int:
    """Number of documents with grade >= 1."""
    return sum(1 for grade in qrels.values() if grade >= RELEVANT)


def recall_at_k(grades: Sequence[int], n_relevant: int, k: int) -> float:
    """recall@k = |relevant in top k| / |relevant|."""
    return sum(1 for g in grades[:k] if g >= RELEVANT) / n_relevant


def precision_at_k(grades: Sequence[int], k: int) -> float:
    """precision@k = |distinct relevant in top k| / k, also when fewer than k were retrieved."""
    return sum(1 for g in grades[:k] if g >= RELEVANT) / k


def hit_rate_at_k(grades: Sequence[int], k: int) -> float:
    """hit_rate@k = 1 if any relevant document is in the top k, else 0."""
    return 1.0 if any(g >= RELEVANT for g in grades[:k]) else 0.0


def reciprocal_rank(grades: Sequence[int]) -> float:
    """RR = 1 / rank of the first relevant document, 0 when none was retrieved."""
    for rank, g in enumerate(grades, start=1):
        if g >= RELEVANT:
            return 1.0 / rank
    return 0.0


def average_precision(grades: Sequence[int], n_relevant: int) -> float:
    """AP = sum of precision@i over ranks i holding a relevant document, / |relevant|."""
    hits = 0
    total = 0.0
    for rank, g in enumerate(grades, start=1):
        if g >= RELEVANT:
            hits += 1
            total += hits / rank
    return total / n_relevant


GAINS = {
    "linear": lambda grade: float(grade),
    "exponential": lambda grade: float(2**grade - 1),
}
"""Gain functions by name: linear (the grade itself, as trec_eval) or exponential (2^grade - 1, as Burges)."""


def gain_of(grade: int, gain: str) -> float:
    """Gain of one grade; non-positive grades gain nothing. KeyError for an unknown gain name."""
    return GAINS[gain](grade) if grade > 0 else 0.0


def dcg_at_k(grades: Sequence[int], k: int, gain: str = "linear") -> float:
    """DCG@k = sum over ranks i <= k of gain(grade_i) / log2(i + 1)."""
    return sum(gain_of(g, gain) / math.log2(rank + 1) for rank, g in enumerate(grades[:k], start=1))


def ndcg_at_k(grades: Sequence[int], qrels: Mapping[str, int], k: int, gain: str = "linear") -> float:
    """nDCG@k = DCG@k / ideal DCG@k, the ideal ranking being all judged grades sorted descending."""
    ideal = dcg_at_k(sorted(qrels.values(), reverse=True), k, gain)
    return dcg_at_k(grades, k, gain) / ideal if ideal > 0 else 0.0

