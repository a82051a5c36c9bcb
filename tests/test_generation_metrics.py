"""Generation metrics, the diagnostic matrix, the quote check and judge agreement, on hand-computed cases."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from ragpulse.reporting.diagnostics import diagnostic_matrix, primary_issue
from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.exceptions import JudgeOutputInvalid
from ragpulse.judges.quotes import check_quotes, quote_found
from ragpulse.model.verdicts import Claim, DocRelevance, Evidence, JudgeCall, JudgeOutput, Judgment, KeyFact
from ragpulse.metrics.agreement import cohens_kappa, fleiss_kappa
from ragpulse.metrics.generation import generation_scores
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace


TRACE = Trace(query="q", answer="x", retrieved_docs=[RetrievedDoc(id="a", text="alpha"), RetrievedDoc(id="b", text="beta"),
                                                      RetrievedDoc(id="a", text="alpha again")])
EVERY_RANK = [DocRelevance(doc_id=doc.id, score=2, rank=rank) for rank, doc in enumerate(TRACE.retrieved_docs, 1)]


def output(verdicts: list[str], **extra: object) -> JudgeOutput:
    claims = [Claim(text=f"c{i}", verdict=v, doc_id="a" if v != "unsupported" else None, quote="alpha")
              for i, v in enumerate(verdicts)]
    fields = {"answer_relevance": 3, "context_relevance": EVERY_RANK, "answerable_from_context": True,
              "abstained": False}
    return JudgeOutput(claims=claims, **{**fields, **extra})


def test_faithfulness_is_supported_over_all_claims() -> None:
    scores = generation_scores(output(["supported", "supported", "unsupported", "contradicted"]), TRACE)
    assert scores.faithfulness == 0.5                                   # 2 supported / 4 claims
    assert scores.hallucinated and (scores.unsupported, scores.contradicted) == (1, 1)


def test_a_refusal_is_an_abstention_not_a_score() -> None:
    scores = generation_scores(output([], abstained=True), TRACE)
    assert scores.faithfulness is None and scores.abstained and not scores.hallucinated


def test_context_relevance_averages_every_retrieved_position() -> None:
    ranked = [DocRelevance(doc_id="a", score=3, rank=1), DocRelevance(doc_id="b", score=1, rank=2),
              DocRelevance(doc_id="a", score=1, rank=3)]
    assert generation_scores(output(["supported"], context_relevance=ranked), TRACE).context_relevance == \
        pytest.approx(5 / 3)                                            # (3 + 1 + 1) / 3, not 3 (the first only)
    by_id = [DocRelevance(doc_id="a", score=3), DocRelevance(doc_id="b", score=1)]   # a record from before ranks
    assert generation_scores(output(["supported"], context_relevance=by_id), TRACE).context_relevance == \
        pytest.approx(7 / 3)                                            # positions a, b, a: (3 + 1 + 3) / 3


def test_a_judge_that_omits_a_documents_relevance_is_a_judge_error_not_an_average() -> None:
    # 4 of 5 scores missing would average to 3.0 over the scored one; it must be an error instead.
    partial = [DocRelevance(doc_id="a", score=3, rank=1)]
    with pytest.raises(JudgeOutputInvalid, match=r"rank\(s\) \[2, 3\]"):
        generation_scores(output(["supported"], context_relevance=partial), TRACE)
    result = asyncio.run(evaluate_trace(TRACE, 0, BatchOptions(), Scripted(["supported"], context_relevance=partial)))
    assert result.status == "judge_error" and result.generation is None and "rank(s) [2, 3]" in (result.error or "")
    assert result.failed_calls, "the calls that produced the unusable output are kept for audit"


def test_a_label_always_wins_over_the_judges_view_of_the_context() -> None:
    labelled_answerable = Trace(query="q", answer="x", answerable=True, retrieved_docs=TRACE.retrieved_docs)
    thin = generation_scores(output(["unsupported"], answerable_from_context=False), labelled_answerable)
    assert (thin.unanswerable, thin.unanswerable_source, thin.unanswerable_hallucination) == (False, "labelled", None)
    labelled_unanswerable = Trace(query="q", answer="x", answerable=False, retrieved_docs=TRACE.retrieved_docs)
    rich = generation_scores(output(["unsupported"], answerable_from_context=True), labelled_unanswerable)
    assert (rich.unanswerable, rich.unanswerable_source, rich.unanswerable_hallucination) == (True, "labelled", True)
    unlabelled = generation_scores(output(["unsupported"], answerable_from_context=False), TRACE)
    assert (unlabelled.unanswerable, unlabelled.unanswerable_source) == (True, "judged")


def test_an_answer_whose_claims_are_all_supported_is_never_a_hallucination_of_any_kind() -> None:
    for answerable in (None, False):
        trace = Trace(query="q", answer="x", answerable=answerable, retrieved_docs=TRACE.retrieved_docs)
        scores = generation_scores(output(["supported", "supported"], answerable_from_context=False), trace)
        assert scores.unanswerable and not scores.hallucinated and scores.unanswerable_hallucination is False


def test_a_refusal_followed_by_a_guess_is_a_guess_not_an_abstention() -> None:
    unanswerable = Trace(query="q", answer="x", answerable=False, retrieved_docs=TRACE.retrieved_docs)
    guess = generation_scores(output(["unsupported"], abstained=True), unanswerable)   # "I'm not sure, but ..."
    assert not guess.abstained and guess.hallucinated and guess.unanswerable_hallucination is True
    refusal = generation_scores(output([], abstained=True), unanswerable)
    assert refusal.abstained and refusal.unanswerable_hallucination is False and refusal.faithfulness is None


def test_correctness_is_key_fact_recall() -> None:
    facts = [KeyFact(fact="f1", covered=True), KeyFact(fact="f2", covered=False), KeyFact(fact="f3", covered=True)]
    assert generation_scores(output(["supported"], key_facts=facts), TRACE).correctness == pytest.approx(2 / 3)


def test_citations_never_retrieved_and_without_support() -> None:
    trace = Trace(query="q", answer="x", citations=["a", "b", "zzz"], retrieved_docs=TRACE.retrieved_docs)
    scores = generation_scores(output(["supported"]), trace)            # only doc a supports a claim
    assert scores.cited_not_retrieved == ["zzz"] and scores.cited_without_support == ["b"] and scores.cited == 3


def test_unanswerable_hallucination_needs_an_unanswerable_trace_and_no_abstention() -> None:
    unanswerable = Trace(query="q", answer="x", answerable=False, retrieved_docs=TRACE.retrieved_docs)
    assert generation_scores(output(["unsupported"]), unanswerable).unanswerable_hallucination is True
    assert generation_scores(output([], abstained=True), unanswerable).unanswerable_hallucination is False
    assert generation_scores(output(["supported"]), TRACE).unanswerable_hallucination is None


def test_primary_issue_fixes_retrieval_first_when_both_are_broken() -> None:
    assert primary_issue(Counter(retrieval_good_hallucinating=5, retrieval_poor_hallucinating=5)) == "retrieval"
    assert primary_issue(Counter(retrieval_good_hallucinating=6, retrieval_poor_faithful=2)) == "generation"
    assert primary_issue(Counter(retrieval_good_faithful=9)) == "none"
    assert primary_issue(Counter()) == "insufficient_data"


def test_an_empty_matrix_says_there_is_nothing_to_cross_not_that_all_is_well() -> None:
    labelled = Trace(query="q", answer="x", gold_doc_ids=["a"], retrieved_docs=TRACE.retrieved_docs)
    unjudged = [asyncio.run(evaluate_trace(labelled, i, BatchOptions())) for i in range(3)]      # judge: none
    matrix = diagnostic_matrix(unjudged, 5)
    assert matrix.n == 0 and matrix.primary_issue == "insufficient_data"
    assert "judge the answers (judge: anthropic or openai)" in matrix.next_step
    assert "faithful" not in matrix.next_step
    abstaining = [asyncio.run(evaluate_trace(labelled, 0, BatchOptions(), Scripted([], abstained=True)))]
    matrix = diagnostic_matrix(abstaining, 5)
    assert matrix.primary_issue == "insufficient_data" and matrix.excluded == {"abstained": 1}
    assert "excluded" in matrix.next_step


class Scripted:
    """A judge returning a fixed output: the edge we do not own, replaced for a pure unit test of the crossing."""

    name, model = "scripted", "m"

    def __init__(self, verdicts: list[str], **extra: object) -> None:
        self.verdicts, self.extra = verdicts, extra

    async def ajudge(self, trace: Trace) -> Judgment:
        out = output(self.verdicts, **self.extra)
        return Judgment(judge="scripted", model="m", prompt_version="p", output=out,
                        calls=[JudgeCall(judge="scripted", model="m", prompt_version="p", raw_output={})])


def test_matrix_crosses_recall_with_hallucination() -> None:
    good = Trace(query="q", answer="x", gold_doc_ids=["a"], retrieved_docs=TRACE.retrieved_docs)
    poor = Trace(query="q", answer="x", gold_doc_ids=["zzz"], retrieved_docs=TRACE.retrieved_docs)
    cases = [(good, ["supported"]), (good, ["unsupported"]), (poor, ["unsupported"]), (poor, ["unsupported"]),
             (poor, [])]                                                # the last makes no claim: excluded
    results = [asyncio.run(evaluate_trace(t, i, BatchOptions(), Scripted(v))) for i, (t, v) in enumerate(cases)]
    matrix = diagnostic_matrix(results, 5)
    counts = {name: cell.count for name, cell in matrix.cells.items()}
    assert counts == {"retrieval_good_faithful": 1, "retrieval_good_hallucinating": 1,
                      "retrieval_poor_faithful": 0, "retrieval_poor_hallucinating": 2}
    assert matrix.cells["retrieval_poor_hallucinating"].share == 0.5 and matrix.excluded == {"abstained": 1}
    assert matrix.primary_issue == "retrieval"


def test_traces_labelled_unanswerable_are_not_poor_retrieval_in_the_matrix() -> None:
    """Nothing was there to retrieve: their hallucinations are failures to abstain, and counted as poor retrieval
    they pushed the primary issue to retrieval (2 of them against 2 good-retrieval hallucinations)."""
    good = Trace(query="q", answer="x", gold_doc_ids=["a"], retrieved_docs=TRACE.retrieved_docs)
    nothing = Trace(query="q", answer="x", answerable=False, retrieved_docs=TRACE.retrieved_docs)
    cases = [(good, ["unsupported"]), (good, ["unsupported"]), (nothing, ["unsupported"]), (nothing, ["unsupported"])]
    results = [asyncio.run(evaluate_trace(t, i, BatchOptions(), Scripted(v))) for i, (t, v) in enumerate(cases)]
    matrix = diagnostic_matrix(results, 5)
    assert matrix.excluded == {"unanswerable": 2} and matrix.n == 2
    assert matrix.cells["retrieval_poor_hallucinating"].count == 0 and matrix.primary_issue == "generation"


def test_a_job_reports_its_rates_over_the_sample_not_the_traces_a_rule_picked() -> None:
    """A production batch judged by policy: a trace an always-judge rule picked (negative feedback) is judged and
    paid for, but counted in n_judged_by_rule and the cost only, never in a rate or the matrix."""
    from ragpulse.reporting.generation_section import generation_section  # noqa: PLC0415

    good = Trace(query="q", answer="x", gold_doc_ids=["a"], retrieved_docs=TRACE.retrieved_docs)
    results = [asyncio.run(evaluate_trace(good, i, BatchOptions(), Scripted(v)))
               for i, v in enumerate((["supported"], ["supported"], ["unsupported"]))]
    results[2].sample_reason = "always:negative_feedback"
    for result in results:
        result.judge = "anthropic"                                       # a judge the catalogue knows
    section = generation_section(results)
    assert section.n_judged == 2 and section.n_judged_by_rule == 1
    assert section.hallucination_rate.mean == 0.0 and section.hallucination_rate.n == 2
    assert section.cost.traces == 3                                      # its judge call was made and is paid
    assert diagnostic_matrix(results, 5).excluded == {"judged_by_rule": 1}


def test_quotes_match_after_normalising_or_fuzzily_but_not_when_invented() -> None:
    doc = "The Nimbus   thermostat supports\nWi-Fi 6 and &lt;Zigbee&gt;."
    assert quote_found("the nimbus thermostat SUPPORTS wi-fi 6", doc)
    assert quote_found("thermostat supports WiFi 6", doc)                 # a small copying difference
    assert quote_found("“The Nimbus thermostat supports Wi‑Fi 6”", doc)  # typographic quotes, dash
    assert not quote_found("supports Bluetooth 5.3 and Thread", doc)
    assert not quote_found("", doc)


@pytest.mark.parametrize("near_miss", [
    "Refunds are accepted within 90 days of delivery",        # a changed number
    "Orders over 100 units ship free of charge",              # 1,000 -> 100
    "Refunds are accepted within 30 hours of delivery",       # a changed unit
    "Express delivery is available on Sundays",               # a dropped negation
    "Refunds are accepted within 30 days of delivery in June",  # an added date
])
def test_a_fuzzy_match_never_changes_a_number_a_negation_a_unit_or_a_date(near_miss: str) -> None:
    doc = ("Refunds are accepted within 30 days of delivery. Orders over 1,000 units ship free of charge. "
           "Express delivery is not available on Sundays.")
    assert not quote_found(near_miss, doc)


def test_the_same_near_miss_with_its_protected_tokens_intact_still_matches() -> None:
    doc = "Refunds are accepted within 30 days of delivery. Orders over 1,000 units ship free of charge."
    assert quote_found("Refunds are acepted within 30 days of delivery", doc)     # a typo, same number
    assert quote_found("Orders over 1000 units ship free of charge", doc)         # 1,000 written 1000
    assert quote_found("Refunds are accepted ... 30 days of delivery", doc)       # an elided middle


def test_evidence_is_searched_in_every_chunk_of_the_cited_document_and_all_pieces_must_hold() -> None:
    trace = Trace(query="q", answer="x", retrieved_docs=[
        RetrievedDoc(id="manual", chunk_id="c1", text="Chapter 1. Unpacking the router."),
        RetrievedDoc(id="manual", chunk_id="c2", text="The reset button must be held for 10 seconds."),
        RetrievedDoc(id="prices", text="The Pro plan costs $20 per month.")])
    from_chunk_2 = Claim(text="hold reset 10 s", verdict="supported",
                         evidence=[Evidence(doc_id="manual", quote="held for 10 seconds")])
    two_docs = Claim(text="Pro and reset", verdict="supported", evidence=[
        Evidence(doc_id="prices", quote="Pro plan costs $20 per month"),
        Evidence(doc_id="manual", chunk_id="c2", quote="The reset button must be held for 10 seconds")])
    one_bad_piece = Claim(text="Pro and reset", verdict="supported", evidence=[
        Evidence(doc_id="prices", quote="Pro plan costs $20 per month"),
        Evidence(doc_id="manual", quote="held for 30 seconds")])
    judged = JudgeOutput(claims=[from_chunk_2, two_docs, one_bad_piece], answer_relevance=3,
                         answerable_from_context=True, abstained=False)
    checked = check_quotes(judged, trace).claims
    assert [c.verdict for c in checked] == ["supported", "supported", "unsupported"]
    assert checked[0].evidence[0].chunk_id == "c2" and checked[2].flags == ["quote_not_found"]


def test_cohens_kappa_on_a_hand_computed_table() -> None:
    # 10 items: both yes 4, both no 3, a yes/b no 2, a no/b yes 1. p_o = 0.7;
    # p_e = (6/10 * 5/10) + (4/10 * 5/10) = 0.30 + 0.20 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    a = [1] * 4 + [0] * 3 + [1] * 2 + [0]
    b = [1] * 4 + [0] * 3 + [0] * 2 + [1]
    assert cohens_kappa(a, b) == pytest.approx(0.4)


def test_fleiss_kappa_on_hand_computed_tables() -> None:
    # 3 raters, 4 subjects, yes/no counts [3,0], [0,3], [2,1], [1,2]:
    # P_i = (9-3)/6 = 1, 1, (4+1-3)/6 = 1/3, 1/3 -> P_bar = 2/3; p_yes = p_no = 6/12 -> P_e = 1/2;
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3.
    assert fleiss_kappa([[3, 0], [0, 3], [2, 1], [1, 2]]) == pytest.approx(1 / 3)
    # Fleiss (1971) as Wikipedia works it: 10 subjects, 14 raters, 5 categories -> P_bar = 0.378, P_e = 0.213,
    # kappa = 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1], [7, 7, 0, 0, 0],
             [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-5)
    # Perfect agreement is 1; all ratings in one category is 1 (p_e = 1), as cohens_kappa.
    assert fleiss_kappa([[2, 0], [0, 2]]) == 1.0 and fleiss_kappa([[3, 0], [3, 0]]) == 1.0
    # Two raters with equal marginals: Fleiss' kappa is Scott's pi, which equals Cohen's kappa then.
    a, b = [1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 1, 0]
    counts = [[x + y, 2 - x - y] for x, y in zip(a, b)]
    assert fleiss_kappa(counts) == pytest.approx(cohens_kappa(a, b))
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 0], [1, 2]])
