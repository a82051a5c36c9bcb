"""Failure attribution: one positive case per stage, then the edge cases the module docstring decides."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ragpulse.metrics.attribution import MAX_DOC_IDS, NEXT_STEPS, attribute
from ragpulse.model.scores import STAGES, Attribution
from ragpulse.metrics.generation import generation_scores
from ragpulse.model.trace import RetrievedDoc, Trace
from ragpulse.model.verdicts import Claim, DocRelevance, Evidence, JudgeOutput

RETRIEVED = ["n1", "r", "n2", "n3"]
"""Default final ranking: the relevant document `r` at rank 2, inside the default k of 3."""


def judged(*claims: tuple[str, str | None], abstained: bool = False, answerable_from_context: bool = True,
           answerable: bool | None = None) -> dict[str, Any]:
    """`generation` and `claims` keywords for attribute(), built as evaluation does: generation_scores on a
    JudgeOutput. Each claim is (verdict, cited doc id or None)."""
    verdicts = [Claim(text=f"c{i}", verdict=verdict, evidence=[Evidence(doc_id=doc, quote=doc)] if doc else [])
                for i, (verdict, doc) in enumerate(claims)]
    trace = Trace(query="q", answer="x", answerable=answerable,
                  retrieved_docs=[RetrievedDoc(id=d, text=d) for d in RETRIEVED])
    every_rank = [DocRelevance(doc_id=d, score=2, rank=rank) for rank, d in enumerate(RETRIEVED, 1)]
    output = JudgeOutput(claims=verdicts, answer_relevance=3, abstained=abstained,
                         answerable_from_context=answerable_from_context, context_relevance=every_rank)
    return {"generation": generation_scores(output, trace), "claims": verdicts}


FAITHFUL = judged(("supported", "r"))
UNJUDGED: dict[str, Any] = {"generation": None, "claims": []}


def run(**overrides: Any) -> Attribution:
    """attribute() on a labelled, answerable trace whose answer is faithful to `r`, with `overrides` applied."""
    inputs = {"qrels": {"r": 1}, "retrieved_ids": RETRIEVED, "candidates": None, "k": 3, "answerable_label": None,
              **FAITHFUL, **overrides}
    return attribute(**inputs)


def test_stages_are_in_pipeline_order_and_each_has_a_next_step() -> None:
    assert STAGES == ("query_rewrite", "not_in_candidates", "dropped_by_rerank", "ranked_low", "context_ignored",
                      "hallucinated", "wrong_abstention", "answered_unanswerable", "ok", "unknown")
    assert set(NEXT_STEPS) == set(STAGES) and all(NEXT_STEPS.values())


# ---------------------------------------------------------------------------------------------------------------
# One positive case per stage


def test_not_in_candidates_when_no_relevant_document_reached_the_candidates() -> None:
    got = run(candidates=["n1", "n2", "n9"], retrieved_ids=["n1", "n2"])
    assert (got.stage, got.relevant_doc_ids) == ("not_in_candidates", ["r"])
    assert "candidates" in got.reason


def test_dropped_by_rerank_when_a_relevant_candidate_is_not_retrieved() -> None:
    got = run(candidates=["n1", "r", "n2", "n3"], retrieved_ids=["n1", "n2"])
    assert (got.stage, got.relevant_doc_ids) == ("dropped_by_rerank", ["r"])


def test_ranked_low_when_relevant_documents_sit_only_below_k() -> None:
    got = run(retrieved_ids=["n1", "n2", "n3", "r", "r2"], qrels={"r": 1, "r2": 2})
    assert (got.stage, got.relevant_doc_ids) == ("ranked_low", ["r", "r2"])    # rank order, not grade order
    assert "top 3" in got.reason and "rank 4" in got.reason


def test_context_ignored_when_no_claim_is_supported_by_a_relevant_document() -> None:
    got = run(**judged(("supported", "n1"), ("supported", "n2")))      # faithful, but to non-relevant documents
    assert (got.stage, got.relevant_doc_ids) == ("context_ignored", ["r"])


def test_hallucinated_when_the_relevant_document_is_used_but_a_claim_is_not_supported() -> None:
    got = run(**judged(("supported", "r"), ("unsupported", None), ("contradicted", "r")))
    assert got.stage == "hallucinated"
    assert "1 unsupported and 1 contradicted of 3" in got.reason


def test_wrong_abstention_when_an_answerable_question_is_declined() -> None:
    got = run(**judged(abstained=True))
    assert (got.stage, got.relevant_doc_ids) == ("wrong_abstention", ["r"]) and "declined" in got.reason


def test_answered_unanswerable_when_a_labelled_unanswerable_question_gets_unsupported_claims() -> None:
    got = run(answerable_label=False, qrels={}, **judged(("unsupported", None), answerable=False))
    assert (got.stage, got.relevant_doc_ids) == ("answered_unanswerable", [])
    assert "labelled unanswerable" in got.reason


def test_ok_when_retrieval_and_generation_both_pass() -> None:
    got = run()
    assert (got.stage, got.relevant_doc_ids) == ("ok", ["r"])


def test_unknown_when_unlabelled_and_unjudged() -> None:
    got = run(qrels=None, **UNJUDGED)
    assert got.stage == "unknown" and got.reason == "no relevance labels and not judged"


# ---------------------------------------------------------------------------------------------------------------
# Retrieval edge cases


def test_without_candidates_a_relevant_document_missing_from_the_retrieved_list_is_not_in_candidates() -> None:
    got = run(candidates=None, retrieved_ids=["n1", "n2"], qrels={"a": 1, "b": 3, "c": 2})
    assert got.stage == "not_in_candidates" and "no candidate list" in got.reason
    assert got.relevant_doc_ids == ["b", "c", "a"]                      # missing ones: highest grade first


def test_grade_zero_documents_are_not_relevant() -> None:
    got = run(qrels={"n1": 0, "n2": 0, "r9": 1})                       # n1, n2 retrieved at the top, but grade 0
    assert (got.stage, got.relevant_doc_ids) == ("not_in_candidates", ["r9"])
    assert run(qrels={"r": 1, "n1": 0}).relevant_doc_ids == ["r"]


def test_only_grade_zero_labels_mean_no_relevant_document_so_unanswerable() -> None:
    got = run(qrels={"n1": 0}, **judged(("unsupported", None)))
    assert got.stage == "answered_unanswerable"


def test_duplicates_count_once_at_their_first_rank_and_still_occupy_their_slots() -> None:
    # ranks 1-3 hold n1 three times (chunks of one document): r is at rank 4, below k = 3, as recall@3 sees it
    assert run(retrieved_ids=["n1", "n1", "n1", "r"]).stage == "ranked_low"
    got = run(retrieved_ids=["r", "r", "n1"], candidates=["r", "r", "n1"])
    assert (got.stage, got.relevant_doc_ids) == ("ok", ["r"])
    dropped = run(candidates=["r", "n1", "r"], retrieved_ids=["n1"])
    assert dropped.relevant_doc_ids == ["r"]


def test_one_relevant_document_in_the_top_k_is_enough_for_retrieval() -> None:
    got = run(qrels={"r": 1, "never": 3}, candidates=["n1", "r"])
    assert (got.stage, got.relevant_doc_ids) == ("ok", ["r"])


def test_a_retrieved_document_counts_as_a_candidate_even_if_the_candidate_list_omits_it() -> None:
    assert run(candidates=["n1"], retrieved_ids=["n1", "n2", "n3", "r"]).stage == "ranked_low"


def test_k_is_the_callers_cutoff() -> None:
    assert run(k=1).stage == "ranked_low"                               # r at rank 2
    assert run(k=2).stage == "ok"
    with pytest.raises(ValueError, match="k must be >= 1"):
        run(k=0)


def test_relevant_doc_ids_are_capped() -> None:
    many = {f"m{i}": 1 for i in range(MAX_DOC_IDS + 3)}
    assert len(run(qrels=many).relevant_doc_ids) == MAX_DOC_IDS


# ---------------------------------------------------------------------------------------------------------------
# Generation edge cases


def test_labelled_but_unjudged_with_retrieval_fine_is_unknown_not_judged() -> None:
    got = run(**UNJUDGED)
    assert got.stage == "unknown" and "not judged" in got.reason and got.relevant_doc_ids == ["r"]


def test_broken_retrieval_is_reported_even_when_unjudged_since_it_comes_first() -> None:
    assert run(retrieved_ids=["n1", "n2", "n3", "r"], **UNJUDGED).stage == "ranked_low"
    assert run(retrieved_ids=["n1"], candidates=["r", "n1"], **UNJUDGED).stage == "dropped_by_rerank"
    assert run(retrieved_ids=["n1"], **UNJUDGED).stage == "not_in_candidates"


def test_broken_retrieval_wins_over_a_hallucination() -> None:
    assert run(retrieved_ids=["n1", "n2"], **judged(("unsupported", None))).stage == "not_in_candidates"


def test_context_ignored_comes_before_hallucinated() -> None:
    # every claim unsupported: the relevant document in the top k was not used at all
    assert run(**judged(("unsupported", None), ("contradicted", "r"))).stage == "context_ignored"


def test_a_claim_supported_by_several_documents_uses_the_context_if_one_is_relevant() -> None:
    claim = Claim(text="c", verdict="supported", evidence=[Evidence(doc_id="n1", quote="n1"),
                                                           Evidence(doc_id="r", quote="r")])
    assert run(claims=[claim]).stage == "ok"


def test_an_answer_that_asserts_nothing_on_an_answerable_question_is_a_wrong_abstention() -> None:
    got = run(**judged())
    assert got.stage == "wrong_abstention" and "makes no claim" in got.reason


def test_a_refusal_followed_by_a_guess_is_not_an_abstention() -> None:
    assert run(**judged(("unsupported", None), abstained=True)).stage == "context_ignored"


def test_missing_claim_verdicts_are_unknown_not_context_ignored() -> None:
    got = run(claims=[])
    assert got.stage == "unknown" and "claim verdicts missing" in got.reason


# ---------------------------------------------------------------------------------------------------------------
# Unanswerable and unlabelled traces


def test_labels_with_no_relevant_document_make_the_question_unanswerable() -> None:
    assert run(qrels={}, **judged(("supported", "n1"), ("unsupported", None))).stage == "answered_unanswerable"
    assert run(qrels={}, **judged(abstained=True)).stage == "ok"


def test_an_answerable_false_label_wins_over_relevance_labels() -> None:
    got = run(answerable_label=False, **judged(("unsupported", None), answerable=False))
    assert got.stage == "answered_unanswerable"                         # though r sits in the top k


def test_an_unanswerable_question_that_abstained_is_ok() -> None:
    got = run(answerable_label=False, **judged(abstained=True, answerable=False))
    assert got.stage == "ok" and "abstained" in got.reason


def test_an_unanswerable_question_answered_with_supported_claims_is_ok_as_in_the_generation_metrics() -> None:
    inputs = judged(("supported", "n1"), answerable=False)
    assert inputs["generation"].unanswerable_hallucination is False
    assert run(answerable_label=False, **inputs).stage == "ok"


def test_a_labelled_unanswerable_question_not_judged_is_unknown() -> None:
    got = run(answerable_label=False, **UNJUDGED)
    assert got.stage == "unknown" and "not judged" in got.reason


def test_unlabelled_judged_unanswerable_and_answered_is_still_answered_unanswerable() -> None:
    got = run(qrels=None, **judged(("unsupported", None), answerable_from_context=False))
    assert got.stage == "answered_unanswerable" and "retrieval not checked" in got.reason


def test_unlabelled_judged_unanswerable_and_abstained_is_unknown_since_retrieval_is_unchecked() -> None:
    got = run(qrels=None, **judged(abstained=True, answerable_from_context=False))
    assert got.stage == "unknown" and "no relevance labels" in got.reason


def test_unlabelled_but_judged_answerable_is_unknown_even_when_hallucinating() -> None:
    got = run(qrels=None, **judged(("unsupported", None)))
    assert got.stage == "unknown" and "no relevance labels" in got.reason and "not judged" not in got.reason


def test_labelled_answerable_without_a_relevant_document_is_unknown() -> None:
    got = run(qrels={"n1": 0}, answerable_label=True)
    assert got.stage == "unknown" and "no document is relevant" in got.reason
    unjudged = run(qrels=None, answerable_label=True, **UNJUDGED)
    assert unjudged.stage == "unknown" and "no relevance labels and not judged" in unjudged.reason


def test_an_attribution_round_trips_as_json() -> None:
    got = run(retrieved_ids=["n1", "n2", "n3", "r"])
    assert msgspec.json.decode(msgspec.json.encode(got), type=Attribution) == got


# ---------------------------------------------------------------------------------------------------------------
# Query rewriting (a chat follow-up's standalone query)


def rewritten(faithful: bool | None, *claims: tuple[str, str | None]) -> dict[str, Any]:
    """judged(...) on a follow-up whose rewritten query the judge read as `faithful` (None: it could not tell)."""
    made = judged(*claims)
    made["generation"] = msgspec.structs.replace(made["generation"], rewrite_faithful=faithful)
    return made


def test_a_rewrite_that_lost_the_intent_and_missed_every_relevant_document_is_the_query_rewrite_stage() -> None:
    got = run(retrieved_ids=["n1", "n2"], **rewritten(False, ("unsupported", None)))
    assert (got.stage, got.relevant_doc_ids) == ("query_rewrite", ["r"])
    assert "lost the user's intent" in got.reason and "not_in_candidates" in got.reason


def test_a_faithful_or_undecided_rewrite_leaves_the_retrieval_stage() -> None:
    assert run(retrieved_ids=["n1", "n2"], **rewritten(True, ("unsupported", None))).stage == "not_in_candidates"
    assert run(retrieved_ids=["n1", "n2"], **rewritten(None, ("unsupported", None))).stage == "not_in_candidates"


def test_an_unfaithful_rewrite_that_still_retrieved_a_relevant_document_broke_nothing_upstream() -> None:
    assert run(**rewritten(False, ("supported", "r"))).stage == "ok"
    assert run(**rewritten(False, ("supported", "r"), ("unsupported", None))).stage == "hallucinated"


def test_the_rewrite_verdict_reaches_generation_scores_only_when_the_trace_has_a_rewrite() -> None:
    output = JudgeOutput(claims=[], answer_relevance=1, abstained=True, answerable_from_context=False,
                         rewrite_faithful=False)
    assert generation_scores(output, Trace(query="and for Pro?", rewritten_query="Basic seats")).rewrite_faithful \
        is False
    assert generation_scores(output, Trace(query="and for Pro?")).rewrite_faithful is None
