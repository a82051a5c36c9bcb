"""Inline citation markers attached to claims (ragpulse.judges.citations) and checked per claim in citation accuracy,
for any judge's output: the LLM judge's claims carry their sentence, the offline judge's claims are the sentences."""

from __future__ import annotations

import asyncio

import msgspec

from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.judges.citations import attach_citations
from ragpulse.judges.local import LocalJudge
from ragpulse.metrics.generation import citation_count, citation_problems
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.model.verdicts import Claim, Evidence, JudgeOutput

DOCS = [RetrievedDoc(id="refunds", text="Refunds are issued within 5-7 business days."),
        RetrievedDoc(id="shipping", text="Standard shipping is free.")]


def output(*claims: Claim) -> JudgeOutput:
    return JudgeOutput(claims=list(claims), answer_relevance=3, answerable_from_context=True, abstained=False)


def supported(text: str, doc_id: str, sentence: str | None = None) -> Claim:
    return Claim(text=text, verdict="supported", sentence=sentence,
                 evidence=[Evidence(doc_id=doc_id, quote="x")])


def test_offline_shaped_claims_get_the_markers_of_their_sentence() -> None:
    """Claims whose text is the sentence without its marker (as the offline judge writes them) locate in the answer;
    the marker after a sentence's full stop still belongs to it, `[doc-1]` and `[2]` resolve by rank."""
    trace = Trace(query="q", retrieved_docs=DOCS,
                  answer="Refunds take 5-7 business days [doc-1]. Shipping is free. [2] Tracking is emailed [1].")
    judged = attach_citations(output(supported("Refunds take 5-7 business days.", "refunds"),
                                     supported("Shipping is free.", "shipping"),
                                     Claim(text="Tracking is emailed.", verdict="unsupported")), trace)
    assert [c.cited for c in judged.claims] == [["refunds"], ["shipping"], ["refunds"]]
    assert citation_problems(judged, trace) == ([], ["refunds"])      # the third cites a document that says nothing
    assert citation_count(judged, trace) == 3


def test_a_sentence_with_two_claims_gives_its_markers_to_both() -> None:
    trace = Trace(query="q", retrieved_docs=DOCS, answer="Refunds take a week and shipping is free [1].")
    sentence = "Refunds take a week and shipping is free [1]."
    judged = attach_citations(output(supported("Refunds take a week.", "refunds", sentence),
                                     supported("Shipping is free.", "shipping", sentence)), trace)
    assert [c.cited for c in judged.claims] == [["refunds"], ["refunds"]]
    assert citation_problems(judged, trace) == ([], ["refunds"])      # right for the first claim, wrong for the second


def test_no_markers_leave_the_output_and_the_citation_checks_as_they_were() -> None:
    trace = Trace(query="q", retrieved_docs=DOCS, answer="Shipping is free.", citations=["shipping", "gone"])
    judged = attach_citations(output(supported("Shipping is free.", "shipping")), trace)
    assert judged.claims[0].cited == [] and judged.claims[0].cited_unknown == []
    assert citation_problems(judged, trace) == (["gone"], [])
    assert citation_count(judged, trace) == 2


def test_the_offline_judge_feeds_per_claim_citations_into_the_generation_scores() -> None:
    """End to end with the offline judge: the marker naming a document that does not hold the sentence is a citation
    without support, whatever verdict the heuristic reaches."""
    trace = Trace(query="How long do refunds take?", retrieved_docs=DOCS,
                  answer="Refunds are issued within 5-7 business days [2].")
    result = asyncio.run(evaluate_trace(trace, 0, BatchOptions(judge="local"), LocalJudge()))
    [claim] = result.claims
    assert claim.cited == ["shipping"]
    assert result.generation.cited == 1 and result.generation.cited_without_support == ["shipping"]


def test_results_stored_before_prompt_v3_still_decode() -> None:
    """A claim and an output as v2 stored them (no sentence, cited, cited_unknown, injection_reason) read back with
    the new fields at their defaults, and the citation checks treat them as citing nothing inline."""
    claim = msgspec.json.decode(b'{"text": "Shipping is free.", "verdict": "supported", "doc_id": "shipping", '
                                b'"quote": "Shipping is free", "reason": "r", "flags": []}', type=Claim)
    assert (claim.sentence, claim.cited, claim.cited_unknown) == (None, [], [])
    stored = msgspec.msgpack.encode({"claims": [msgspec.to_builtins(claim)], "answer_relevance": 3,
                                     "answerable_from_context": True, "abstained": False,
                                     "injection_followed": False})
    old = msgspec.msgpack.decode(stored, type=JudgeOutput)
    assert old.injection_reason is None and old.injection_followed is False
    trace = Trace(query="q", retrieved_docs=DOCS, answer="Shipping is free.")
    assert citation_problems(old, trace) == ([], []) and citation_count(old, trace) == 0
