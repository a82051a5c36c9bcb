"""Generation metrics, the diagnostic matrix, the quote check and judge agreement, on hand-computed cases."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from ragpulse.diagnostics import diagnostic_matrix, primary_issue
from ragpulse.evaluate import evaluate_trace
from ragpulse.judges.quotes import quote_found
from ragpulse.judges.verdicts import Claim, DocRelevance, JudgeCall, JudgeOutput, Judgment, KeyFact
from ragpulse.metrics.agreement import cohens_kappa
from ragpulse.metrics.generation import generation_scores
from ragpulse.schema import BatchOptions, RetrievedDoc, Trace


def output(verdicts: list[str], **extra: object) -> JudgeOutput:
    claims = [Claim(text=f"c{i}", verdict=v, doc_id="a" if v != "unsupported" else None, quote="alpha")
              for i, v in enumerate(verdicts)]
    fields = {"answer_relevance": 3, "context_relevance": [], "answerable_from_context": True, "abstained": False}
    return JudgeOutput(claims=claims, **{**fields, **extra})


TRACE = Trace(query="q", answer="x", retrieved_docs=[RetrievedDoc(id="a", text="alpha"), RetrievedDoc(id="b", text="beta"),
                                                      RetrievedDoc(id="a", text="alpha again")])


def test_faithfulness_is_supported_over_all_claims() -> None:
    scores = generation_scores(output(["supported", "supported", "unsupported", "contradicted"]), TRACE)
    assert scores.faithfulness == 0.5                                   # 2 supported / 4 claims
    assert scores.hallucinated and (scores.unsupported, scores.contradicted) == (1, 1)


def test_a_refusal_is_an_abstention_not_a_score() -> None:
    scores = generation_scores(output([], abstained=True), TRACE)
    assert scores.faithfulness is None and scores.abstained and not scores.hallucinated


def test_context_relevance_averages_every_distinct_retrieved_document() -> None:
    judged = output(["supported"], context_relevance=[DocRelevance(doc_id="a", score=3), DocRelevance(doc_id="b", score=1)])
    assert generation_scores(judged, TRACE).context_relevance == 2.0    # (3 + 1) / 2, not 3 (the first only)


def test_correctness_is_key_fact_recall() -> None:
    facts = [KeyFact(fact="f1", covered=True), KeyFact(fact="f2", covered=False), KeyFact(fact="f3", covered=True)]
    assert generation_scores(output(["supported"], key_facts=facts), TRACE).correctness == pytest.approx(2 / 3)


def test_citations_never_retrieved_and_without_support() -> None:
    trace = Trace(query="q", answer="x", citations=["a", "b", "zzz"], retrieved_docs=TRACE.retrieved_docs)
    scores = generation_scores(output(["supported"]), trace)            # only doc a supports a claim
    assert scores.cited_not_retrieved == ["zzz"] and scores.cited_without_support == ["b"] and scores.cited == 3


def test_unanswerable_hallucination_needs_an_unanswerable_trace_and_no_abstention() -> None:
    unanswerable = Trace(query="q", answer="x", answerable=False)
    assert generation_scores(output(["unsupported"]), unanswerable).unanswerable_hallucination is True
    assert generation_scores(output([], abstained=True), unanswerable).unanswerable_hallucination is False
    judged_insufficient = output(["unsupported"], answerable_from_context=False)
    assert generation_scores(judged_insufficient, Trace(query="q", answer="x")).unanswerable
    assert generation_scores(output(["supported"]), Trace(query="q", answer="x")).unanswerable_hallucination is None


def test_primary_issue_fixes_retrieval_first_when_both_are_broken() -> None:
    assert primary_issue(Counter(retrieval_good_hallucinating=5, retrieval_poor_hallucinating=5)) == "retrieval"
    assert primary_issue(Counter(retrieval_good_hallucinating=6, retrieval_poor_faithful=2)) == "generation"
    assert primary_issue(Counter(retrieval_good_faithful=9)) == "none"


class Scripted:
    """A judge returning a fixed output: the edge we do not own, replaced for a pure unit test of the crossing."""

    name, model = "scripted", "m"

    def __init__(self, verdicts: list[str]) -> None:
        self.verdicts = verdicts

    async def ajudge(self, trace: Trace) -> Judgment:
        out = output(self.verdicts)
        return Judgment(judge="scripted", model="m", prompt_version="p", output=out,
                        calls=[JudgeCall(judge="scripted", model="m", prompt_version="p", raw_output={})])


def test_matrix_crosses_recall_with_hallucination() -> None:
    good = Trace(query="q", answer="x", gold_doc_ids=["a"], retrieved_docs=TRACE.retrieved_docs)
    poor = Trace(query="q", answer="x", gold_doc_ids=["zzz"], retrieved_docs=TRACE.retrieved_docs)
    cases = [(good, ["supported"]), (good, ["unsupported"]), (poor, ["unsupported"]), (poor, ["unsupported"]),
             (poor, [])]                                                # the last makes no claim: excluded
    results = [asyncio.run(evaluate_trace(t, i, BatchOptions(), Scripted(v))) for i, (t, v) in enumerate(cases)]
    matrix = diagnostic_matrix(results, 5)
    counts = {name: cell["count"] for name, cell in matrix["cells"].items()}
    assert counts == {"retrieval_good_faithful": 1, "retrieval_good_hallucinating": 1,
                      "retrieval_poor_faithful": 0, "retrieval_poor_hallucinating": 2}
    assert matrix["cells"]["retrieval_poor_hallucinating"]["share"] == 0.5 and matrix["excluded"] == {"abstained": 1}
    assert matrix["primary_issue"] == "retrieval"


def test_quotes_match_after_normalising_or_fuzzily_but_not_when_invented() -> None:
    doc = "The Nimbus   thermostat supports\nWi-Fi 6 and &lt;Zigbee&gt;."
    assert quote_found("the nimbus thermostat SUPPORTS wi-fi 6", doc)
    assert quote_found("thermostat supports WiFi 6", doc)                 # a small copying difference
    assert not quote_found("supports Bluetooth 5.3 and Thread", doc)
    assert not quote_found("", doc)


def test_cohens_kappa_on_a_hand_computed_table() -> None:
    # 10 items: both yes 4, both no 3, a yes/b no 2, a no/b yes 1. p_o = 0.7;
    # p_e = (6/10 * 5/10) + (4/10 * 5/10) = 0.30 + 0.20 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    a = [1] * 4 + [0] * 3 + [1] * 2 + [0]
    b = [1] * 4 + [0] * 3 + [0] * 2 + [1]
    assert cohens_kappa(a, b) == pytest.approx(0.4)
