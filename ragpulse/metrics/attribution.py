"""Failure attribution: the first pipeline stage that broke on one trace, and the next step to fix it.

A RAG answer passes through stages in order: a chat app's follow-up is first rewritten into a standalone query (the
rewrite must keep the user's intent), first-stage retrieval must put a relevant document among the
candidates, reranking and truncation must keep it in the retrieved list, ranking must lift it into the top k, and
the generator must answer from it, faithfully, without declining. A question with no answer must be declined. A
trace's stage is the first check that fails; `ok` when every check passed, `unknown` when a missing label or a
missing judgment leaves the first failure undecidable (`reason` says which).

Edge cases, decided here once:

- Relevant means grade >= retrieval.RELEVANT; a grade-0 document is never relevant.
- Retrieval is broken at a stage only when NO relevant document got past it: one relevant document in the top k is
  enough to hand the question to the generator (recall@k measures the rest).
- Without a candidate list the retrieved list is the candidate list, so `dropped_by_rerank` cannot occur. A
  retrieved document always counts as a candidate, even when the caller's candidate list omits it.
- A repeated id counts at its first rank and the repeat still occupies its slot: the top k is `retrieved_ids[:k]`,
  as in recall@k.
- Unanswerable: an `answerable` label wins (as in generation.unanswerable); else labels naming no relevant document
  say unanswerable; else, unlabelled, the judge's reading of the context does.
- Labelled answerable, yet the labels name no relevant document: `unknown` (no document to trace through retrieval).
- Unlabelled but judged: `unknown` (retrieval undecidable), except when the judge found the context does not answer
  the question and the answer still asserted unsupported claims: `answered_unanswerable` is reported, because that
  generator failure is certain whatever retrieval did (the reason says retrieval was not checked).
- Unanswerable and answered with claims all supported: `ok`, as GenerationScores.unanswerable_hallucination is
  false then (the context did hold an answer); on an unlabelled trace that is `unknown`, retrieval being unchecked.
- Answerable, retrieval fine, and the answer makes no claim at all: `wrong_abstention` whether or not the judge read
  it as declining, since the user got no answer.
- Retrieval broken and not judged: the retrieval stage is reported, since it comes first.
- `query_rewrite` needs both halves: no relevant document in the top k for the `rewritten_query`, and the judge (in
  the same call as the verdicts) reading the rewrite as having lost a constraint or the intent of the user's query in
  its conversation (GenerationScores.rewrite_faithful false). A rewrite judged unfaithful while a relevant document
  still reached the top k broke nothing downstream: the generation stages decide. The offline judge never reads
  rewrites, so under it the retrieval stage is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from ragpulse.metrics.retrieval import RELEVANT
from ragpulse.model.scores import Attribution, GenerationScores, Stage
from ragpulse.model.verdicts import Claim, UnanswerableSource

NEXT_STEPS: dict[Stage, str] = {
    "query_rewrite": "Fix the query rewriter: its standalone query dropped what the conversation meant (a plan, "
                     "product, version or date named earlier). Give it the history, or also retrieve with the "
                     "user's own query.",
    "not_in_candidates": "Index the missing sources, fix chunking, or add query rewriting / hybrid search so "
                         "first-stage retrieval finds the relevant document.",
    "dropped_by_rerank": "Raise the rerank depth (keep more candidates) or retrain / replace the reranker.",
    "ranked_low": "Raise k or improve first-stage ranking (embeddings, hybrid scoring) so the relevant document "
                  "reaches the top k.",
    "context_ignored": "Prompt the generator to answer from the context and cite it; check that the context "
                       "actually reaches the prompt.",
    "hallucinated": "Tighten the prompt to answer only from the context, lower the temperature, or change the "
                    "generator model.",
    "wrong_abstention": "Relax over-cautious refusal instructions: the answer was in the top k.",
    "answered_unanswerable": "Instruct the generator to say it does not know when the context does not answer the "
                             "question.",
    "ok": "Nothing to fix on this trace.",
    "unknown": "Add gold labels (gold_doc_ids or relevance, answerable) and judge the trace to attribute it.",
}
"""One concrete next step per stage, for the report."""

MAX_DOC_IDS = 5
"""Most relevant document ids an Attribution lists."""


def attribute(*, qrels: Mapping[str, int] | None, retrieved_ids: Sequence[str], candidates: Sequence[str] | None,
              k: int, answerable_label: bool | None, generation: GenerationScores | None,
              claims: Sequence[Claim]) -> Attribution:
    """The first broken stage of one trace.

    `qrels` is None when the trace is unlabelled (`{}`: labelled, no relevant document); `retrieved_ids` is the
    final ranking the generator received; `candidates` the ranking before reranking and truncation, or None;
    `generation` and `claims` the judged scores and verdicts of the same judgment, or None and [] when not judged.
    Raises ValueError for k < 1.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    relevant = relevant_grades(qrels) if qrels is not None else None
    unanswerable = is_unanswerable(relevant, answerable_label, generation)
    if unanswerable is None:
        return Attribution(stage="unknown", reason="no relevance labels and not judged")
    if unanswerable:
        source: UnanswerableSource = "judged" if relevant is None and answerable_label is None else "labelled"
        return unanswerable_stage(generation, source)
    if not relevant:
        return _unlocatable(relevant, generation)
    broken = retrieval_stage(relevant, retrieved_ids, candidates, k)
    if broken is not None and generation is not None and generation.rewrite_faithful is False:
        return rewrite_stage(broken)
    return broken or generation_stage(generation, claims, relevant, _present(relevant, retrieved_ids[:k]))


def rewrite_stage(retrieval: Attribution) -> Attribution:
    """The rewrite lost the user's intent and retrieval, asked the rewrite, missed every relevant document: the rewrite
    is the first broken stage (the retrieval stage it caused is named in the reason)."""
    return Attribution(stage="query_rewrite", reason=f"the judge found the rewritten query lost the user's intent, "
                       f"and retrieval for it missed: {retrieval.reason} ({retrieval.stage})",
                       relevant_doc_ids=retrieval.relevant_doc_ids)


def relevant_grades(qrels: Mapping[str, int]) -> dict[str, int]:
    """The labelled documents that count as relevant (grade >= RELEVANT), with their grades."""
    return {doc_id: grade for doc_id, grade in qrels.items() if grade >= RELEVANT}


def is_unanswerable(relevant: Mapping[str, int] | None, answerable_label: bool | None,
                    generation: GenerationScores | None) -> bool | None:
    """Whether the question has no answer: the `answerable` label wins; else labels naming no relevant document say
    so; else the judge's reading of the context (GenerationScores.unanswerable); None when nothing says."""
    if answerable_label is not None:
        return not answerable_label
    if relevant is not None:
        return not relevant
    return generation.unanswerable if generation is not None else None


def retrieval_stage(relevant: Mapping[str, int], retrieved_ids: Sequence[str], candidates: Sequence[str] | None,
                    k: int) -> Attribution | None:
    """The first retrieval stage no relevant document got past, or None when one is in the top k.

    not_in_candidates: none among candidates + retrieved; dropped_by_rerank: none retrieved; ranked_low: none in
    retrieved_ids[:k].
    """
    reached = _present(relevant, [*(candidates or ()), *retrieved_ids])
    if not reached:
        where = "candidates" if candidates is not None else "retrieved list (no candidate list given)"
        missing = sorted(relevant, key=lambda doc_id: (-relevant[doc_id], doc_id))
        return _attribution("not_in_candidates", f"no relevant document in the {where}", missing)
    retrieved = _present(relevant, retrieved_ids)
    if not retrieved:
        return _attribution("dropped_by_rerank", f"{len(reached)} relevant candidate(s), none kept in the "
                            f"{len(retrieved_ids)} retrieved", reached)
    if not _present(relevant, retrieved_ids[:k]):
        rank = list(retrieved_ids).index(retrieved[0]) + 1
        return _attribution("ranked_low", f"no relevant document in the top {k}; the first is at rank {rank}",
                            retrieved)
    return None


def generation_stage(generation: GenerationScores | None, claims: Sequence[Claim], relevant: Mapping[str, int],
                     in_top: list[str]) -> Attribution:
    """With a relevant document in the top k: wrong_abstention when the answer makes no claim; context_ignored when
    no claim is `supported` with evidence from a relevant document; hallucinated when a claim is unsupported or
    contradicted; else ok."""
    if generation is None:
        return _attribution("unknown", "not judged (retrieval fine: a relevant document is in the top k)", in_top)
    if generation.claims == 0:
        said = "declined" if generation.abstained else "makes no claim"
        return _attribution("wrong_abstention", f"answerable from the top k, but the answer {said}", in_top)
    if len(claims) != generation.claims:
        return _attribution("unknown", f"claim verdicts missing: {len(claims)} given, {generation.claims} judged",
                            in_top)
    if not any(_supported_by(claim, relevant) for claim in claims):
        return _attribution("context_ignored", f"none of {len(claims)} claim(s) is supported by a relevant "
                            "document", in_top)
    if generation.hallucinated:
        return _attribution("hallucinated", f"{generation.unsupported} unsupported and {generation.contradicted} "
                            f"contradicted of {generation.claims} claim(s)", in_top)
    return _attribution("ok", "relevant document in the top k, used, and every claim supported", in_top)


def unanswerable_stage(generation: GenerationScores | None, source: UnanswerableSource) -> Attribution:
    """On a question with no answer: answered_unanswerable when the answer did not abstain and asserted something
    unsupported (GenerationScores.unanswerable_hallucination); else ok, or unknown when only the judge said
    unanswerable (retrieval unchecked without labels)."""
    if generation is None:
        return Attribution(stage="unknown", reason="unanswerable by its labels, but not judged")
    by = "labelled unanswerable" if source == "labelled" else \
        "judged not answerable from the context (no labels: retrieval not checked)"
    if generation.hallucinated and not generation.abstained:
        return Attribution(stage="answered_unanswerable", reason=f"{by}, yet the answer asserted "
                           f"{generation.unsupported + generation.contradicted} unsupported claim(s)")
    if source == "judged":
        return Attribution(stage="unknown", reason=f"no relevance labels: retrieval stages cannot be decided; {by}, "
                           "and the answer asserted nothing unsupported")
    did = "abstained" if generation.abstained else "asserted nothing unsupported"
    return Attribution(stage="ok", reason=f"{by}, and the answer {did}")


def _unlocatable(relevant: Mapping[str, int] | None, generation: GenerationScores | None) -> Attribution:
    """Answerable, but retrieval cannot be traced: no labels at all, or labels naming no relevant document."""
    labels = "no relevance labels" if relevant is None else "labelled answerable but no document is relevant"
    judged = "" if generation is not None else " and not judged"
    return Attribution(stage="unknown", reason=f"{labels}{judged}: retrieval stages cannot be decided")


def _supported_by(claim: Claim, relevant: Mapping[str, int]) -> bool:
    """A claim is grounded in a relevant document when it is supported and one of its evidence pieces cites one."""
    cited = {e.doc_id for e in claim.evidence} | ({claim.doc_id} if claim.doc_id else set())
    return claim.verdict == "supported" and any(doc_id in relevant for doc_id in cited)


def _present(relevant: Mapping[str, int], ids: Sequence[str]) -> list[str]:
    """The relevant documents among `ids`, once each, in the order of their first appearance."""
    return list(dict.fromkeys(doc_id for doc_id in ids if doc_id in relevant))


def _attribution(stage: Stage, reason: str, doc_ids: Sequence[str]) -> Attribution:
    return Attribution(stage=stage, reason=reason, relevant_doc_ids=list(doc_ids[:MAX_DOC_IDS]))
