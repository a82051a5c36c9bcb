"""The report's metric keys (`recall@5`, `mrr`, `hallucination_rate`), which the wire schema checks a batch's `targets`
against.

The metric registry (ragpulse.metrics.registry) declares each metric, and sits above model/ because its declarations
compute from results; the wire schema below it still needs the names, so they are listed here too, in the registry's
order, and tests/test_metric_registry.py keeps the two equal (as JudgeName and the judge catalog).
"""

from __future__ import annotations

import difflib

AT_K = ("recall", "precision", "hit_rate", "ndcg")
"""Retrieval metrics reported once per requested cutoff, keyed `name@k`."""

WHOLE_RANKING = ("mrr", "map")
"""Retrieval metrics of the whole ranking, keyed by name alone."""

GENERATION = ("faithfulness", "hallucination_rate", "unanswerable_hallucination_rate", "answer_relevance",
              "context_relevance", "context_precision", "correctness")
"""Judged generation metrics, keyed by name alone."""


def is_metric_key(key: str) -> bool:
    """True for a report metric key: an `AT_K` name with a cutoff, or a whole-ranking or generation name without
    (`mrr@5`, `recall` without a cutoff and misspellings are not)."""
    name, at, _k = key.partition("@")
    return name in AT_K if at else name in WHOLE_RANKING or name in GENERATION


def did_you_mean(key: str) -> str:
    """` (did you mean recall@5?)` for a misspelt key (`recal@5`), with its cutoff kept; empty when nothing is close."""
    name, at, k = key.partition("@")
    names = AT_K if at else (*WHOLE_RANKING, *GENERATION)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close and at:   # `mrr@5`: a whole-ranking name with a cutoff it does not take
        close = difflib.get_close_matches(name, (*WHOLE_RANKING, *GENERATION), n=1, cutoff=0.6)
        return f" (did you mean {close[0]}, without a cutoff?)" if close else ""
    return f" (did you mean {close[0]}{at}{k}?)" if close else ""
