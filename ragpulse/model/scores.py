"""What evaluating one trace yields besides retrieval figures: its generation scores and its failure attribution.

Computed in ragpulse.metrics (generation, attribution), kept on each TraceResult and aggregated by the report."""

from __future__ import annotations

from typing import Literal, get_args

import msgspec

from ragpulse.model.verdicts import UnanswerableSource


class GenerationScores(msgspec.Struct, kw_only=True):
    """Generation metrics of one trace. A pure refusal has no claims: faithfulness null, abstained true."""

    faithfulness: float | None
    hallucinated: bool
    abstained: bool
    answer_relevance: int
    context_relevance: float | None
    correctness: float | None
    answerable_from_context: bool
    unanswerable: bool
    unanswerable_source: UnanswerableSource | None = None
    """`labelled` when the trace's `answerable` label decided, `judged` when the judge's view of the context did."""
    unanswerable_hallucination: bool | None
    claims: int
    supported: int
    unsupported: int
    contradicted: int
    cited: int
    cited_not_retrieved: list[str]
    cited_without_support: list[str]
    session_supported: int = 0
    """Supported claims that only documents retrieved for earlier turns of the conversation support (Claim.support)."""
    rewrite_faithful: bool | None = None
    """On a turn with a `rewritten_query`, the judge's reading of whether the rewrite kept the user's intent (false:
    it lost a constraint); None without a rewrite or when the judge cannot tell (the offline judge)."""


Stage = Literal["query_rewrite", "not_in_candidates", "dropped_by_rerank", "ranked_low", "context_ignored",
                "hallucinated", "wrong_abstention", "answered_unanswerable", "ok", "unknown"]
STAGES: tuple[Stage, ...] = get_args(Stage)
"""Every stage, in pipeline order, then `ok` and `unknown`."""


class Attribution(msgspec.Struct, kw_only=True):
    """Where one trace's pipeline first broke, why, and the relevant documents concerned (at most MAX_DOC_IDS)."""

    stage: Stage
    reason: str
    relevant_doc_ids: list[str] = []
