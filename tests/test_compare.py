"""Paired comparisons: the statistics on hand-computed cases, trace matching, regressions and baseline gaps, then
GET /v1/jobs/{candidate}/compare against real API and worker processes."""

from __future__ import annotations

import math

import httpx
import numpy as np
import pytest

from ragpulse.metrics.registry import retrieval_scores
from ragpulse.metrics.stats import mcnemar_exact, paired_delta_interval
from ragpulse.model.compare import RunInfo
from ragpulse.model.results import TraceResult
from ragpulse.reporting.baselines import baseline_gaps
from ragpulse.reporting.compare import compare
from ragpulse.reporting.pairing import pair_results
from tests.support import wait_for_job
from tests.traces import dropped_for_a_third, faithful_traces, unfaithful_every_other

# -- statistics, by hand -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("worse", "better", "p"), [
    (1, 6, 2 * (1 + 7) / 2**7),              # n=7: P[X<=1] = (C(7,0) + C(7,1)) / 128 = 8/128; two-sided 0.125
    (2, 8, 2 * (1 + 10 + 45) / 2**10),       # n=10: (1 + 10 + 45) / 1024, doubled = 0.109375
    (0, 5, 2 / 2**5),                        # all five discordant pairs one way: 2 * 1/32 = 0.0625
    (3, 3, 1.0),                             # balanced: 2 * P[X<=3 | n=6] = 2 * 42/64 > 1, capped at 1
    (0, 0, 1.0),                             # no discordant pair: no evidence of change
])
def test_mcnemar_exact_matches_hand_computed_binomial_tails(worse: int, better: int, p: float) -> None:
    assert mcnemar_exact(worse, better) == pytest.approx(p)
    assert mcnemar_exact(better, worse) == pytest.approx(p)   # two-sided: symmetric


def test_mcnemar_stays_exact_for_large_counts() -> None:
    assert 0 < mcnemar_exact(4_000, 4_400) < 0.01                  # no float overflow in 2**8400
    assert mcnemar_exact(5_000, 5_000) == 1.0


def test_paired_interval_on_two_pairs_is_the_range_of_resampled_means() -> None:
    # differences {0, -1}: a resample's mean is 0, -0.5 or -1 with probabilities 1/4, 1/2, 1/4; with 1,000 resamples
    # the 2.5th percentile is -1 and the 97.5th is 0 (each extreme holds ~250 resamples, far more than 25).
    assert paired_delta_interval([1.0, 1.0], [1.0, 0.0]) == (-1.0, 0.0)


def test_pairing_cancels_query_difficulty() -> None:
    # every query loses exactly 0.1, whatever its level: the paired interval is the point -0.1, where an unpaired
    # comparison of two samples spread over [0.1, 1] would straddle 0.
    baseline = list(np.linspace(0.1, 1.0, 40))
    candidate = [b - 0.1 for b in baseline]
    low, high = paired_delta_interval(baseline, candidate)
    assert low == pytest.approx(-0.1) and high == pytest.approx(-0.1)


def test_paired_interval_agrees_with_the_normal_approximation_on_a_large_sample() -> None:
    rng = np.random.default_rng(7)
    baseline = rng.uniform(0, 1, 2_000)
    candidate = baseline + rng.normal(-0.05, 0.2, 2_000)
    d = candidate - baseline
    half = 1.96 * d.std(ddof=1) / math.sqrt(len(d))
    low, high = paired_delta_interval(list(baseline), list(candidate))
    assert low == pytest.approx(d.mean() - half, abs=0.15 * half)
    assert high == pytest.approx(d.mean() + half, abs=0.15 * half)


# -- matching and comparing stored results -----------------------------------------------------------------------

def result(trace_id: str, index: int, ranked: list[str], gold: list[str], query_hash: str | None = None,
           **fields: object) -> TraceResult:
    return TraceResult(trace_id=trace_id, index=index, status="ok", app="a", labels="labelled", query_hash=query_hash,
                       retrieval=retrieval_scores(ranked, dict.fromkeys(gold, 1), [1, 3, 5, 10]), **fields)


def test_traces_match_by_trace_id_else_by_query_hash_in_order() -> None:
    baseline = [result("a", 0, [], ["x"]), result("0", 1, [], ["x"], query_hash="q1"),
                result("1", 2, [], ["x"], query_hash="q1"), result("gone", 3, [], ["x"])]
    candidate = [result("1", 0, [], ["x"], query_hash="q1"), result("a", 1, [], ["x"]),
                 result("7", 2, [], ["x"], query_hash="q1"), result("new", 3, [], ["x"]),
                 result("9", 4, [], ["x"], query_hash="q1")]
    pairing = pair_results(baseline, candidate)
    assert [(b.index, c.index) for b, c in pairing.pairs] == [(1, 0), (0, 1), (2, 2)]
    assert (pairing.only_in_baseline, pairing.only_in_candidate) == (1, 2)   # `gone`; `new` and a third q1


def runs() -> tuple[RunInfo, RunInfo]:
    return RunInfo(job_id="b", run="v1", variant="rag"), RunInfo(job_id="c", run="v2", variant="rag")


def test_dropping_the_relevant_document_for_a_third_of_queries_is_a_significant_regression() -> None:
    baseline = [result(f"t{i}", i, [f"d{i}", "x", "y"], [f"d{i}"]) for i in range(30)]
    candidate = [result(f"t{i}", i, ["x", "y"] if i % 3 == 0 else [f"d{i}", "x"], [f"d{i}"]) for i in range(30)]
    found = compare(*runs(), baseline, candidate)
    recall = found.retrieval["recall@5"]
    assert (recall.baseline, recall.candidate) == (1.0, pytest.approx(2 / 3))
    assert recall.delta == pytest.approx(-1 / 3) and recall.ci95[1] < 0 and recall.change == "regressed"
    hits = found.retrieval["hit_rate@5"].mcnemar
    assert (hits.worse, hits.better) == (10, 0) and hits.p_value == pytest.approx(2 / 2**10)
    assert "recall@5" in found.significant_regressions
    assert sorted(r.trace_id for r in found.regressions) == sorted(f"t{i}" for i in range(0, 30, 3))
    first = found.regressions[0]
    assert first.baseline["recall@5"] == 1.0 and first.candidate["recall@5"] == 0.0
    assert first.reasons == ["recall@5 -1.00", "ndcg@5 -1.00"]


def test_an_unchanged_run_regresses_nothing() -> None:
    baseline = [result(f"t{i}", i, [f"d{i}", "x"], [f"d{i}", "z"]) for i in range(30)]
    found = compare(*runs(), baseline, list(baseline))
    assert found.significant_regressions == [] and found.regressions == []
    assert all(d.delta == 0 and d.change == ("unchanged" if d.tested else "untested")
               for d in found.retrieval.values())
    assert [key for key, d in found.retrieval.items() if d.tested] == ["recall@5", "ndcg@5", "mrr"]


def test_slices_follow_the_candidates_question_types() -> None:
    baseline = [result(f"t{i}", i, [f"d{i}"], [f"d{i}"], question_type="multi_hop" if i < 10 else "single_fact")
                for i in range(30)]
    candidate = [result(f"t{i}", i, ["x"] if i < 10 else [f"d{i}"], [f"d{i}"],
                        question_type="multi_hop" if i < 10 else "single_fact") for i in range(30)]
    found = compare(*runs(), baseline, candidate)
    assert found.by_question_type["multi_hop"].matched == 10
    multi_hop = found.by_question_type["multi_hop"].metrics["recall@5"]
    assert multi_hop.delta == -1.0 and multi_hop.excludes_zero and multi_hop.change == "untested"   # described only
    assert found.by_question_type["single_fact"].metrics["recall@5"].delta == 0
    assert list(found.by_source) == ["unspecified"]


@pytest.mark.parametrize(("gap", "says"), [(0.02, "not the bottleneck"), (0.30, "fix retrieval first"),
                                           (0.10, "both retrieval and generation")])
def test_the_oracle_gap_is_oracle_minus_rag_and_says_what_it_means(gap: float, says: str) -> None:
    from ragpulse.model.compare import MetricDelta

    delta = MetricDelta(n=50, baseline=0.9, candidate=0.9 - gap, delta=-gap, ci95=(-gap - 0.01, -gap + 0.01),
                        excludes_zero=True, better="higher", change="regressed")
    oracle, rag = RunInfo(job_id="o", run=None, variant="oracle"), RunInfo(job_id="r", run=None, variant="rag")
    found = baseline_gaps(oracle, rag, {"faithfulness": delta})["oracle_gap"]
    assert found.value == pytest.approx(gap) and found.ci95 == pytest.approx((gap - 0.01, gap + 0.01))
    assert says in found.meaning
    reversed_roles = baseline_gaps(rag, oracle, {"faithfulness": delta})["oracle_gap"]   # oracle as candidate
    assert reversed_roles.value == pytest.approx(-gap)
    assert baseline_gaps(rag, RunInfo(job_id="x", run=None, variant="rag"), {"faithfulness": delta}) == {}


# -- the endpoint, live -------------------------------------------------------------------------------------------

def post(client: httpx.Client, traces: list[dict], **options: object) -> str:
    response = client.post("/v1/batches", json={"traces": traces, "options": {"judge": "local", **options}})
    assert response.status_code == 202, response.text
    return response.json()["job_id"]


def test_compare_endpoint_reports_the_regression_live(client: httpx.Client) -> None:
    baseline = post(client, faithful_traces(30), run="v1")
    candidate = post(client, dropped_for_a_third(faithful_traces(30)), run="v2")
    for job_id in (baseline, candidate):
        wait_for_job(client, job_id)
    assert client.get(f"/v1/jobs/{candidate}").json()["run"] == "v2"
    response = client.get(f"/v1/jobs/{candidate}/compare", params={"baseline": baseline})
    assert response.status_code == 200, response.text
    body = response.json()
    assert {k: body["candidate"][k] for k in ("job_id", "run", "variant")} == {
        "job_id": candidate, "run": "v2", "variant": "rag"}
    assert body["candidate"]["judging"]["judged"] == body["candidate"]["judging"]["sent"] == 30
    assert body["judge_mismatch"] is None and body["judged_refused"] is None
    assert body["matched"] == 30 and body["only_in_baseline"] == body["only_in_candidate"] == 0
    recall = body["retrieval"]["recall@5"]
    assert recall["delta"] == pytest.approx(-1 / 3) and recall["ci95"][1] < 0 and recall["change"] == "regressed"
    assert {r["trace_id"] for r in body["regressions"]} == {f"q{i}" for i in range(0, 30, 3)}
    assert body["regressions_total"] == 10


def test_compare_refuses_running_unknown_and_foreign_jobs(client: httpx.Client, api_factory, stack) -> None:
    finished = post(client, faithful_traces(3))
    wait_for_job(client, finished)
    idle = api_factory({**stack.env, "RAGPULSE_QUEUE": "no-worker-listens"})   # its jobs stay queued
    with httpx.Client(base_url=idle, timeout=30) as other:
        queued = post(other, faithful_traces(3))
        response = other.get(f"/v1/jobs/{queued}/compare", params={"baseline": finished})
        assert response.status_code == 409 and response.json()["errors"][0]["path"] == "path.job_id"
        response = other.get(f"/v1/jobs/{finished}/compare", params={"baseline": queued})
        assert response.status_code == 409 and response.json()["errors"][0]["path"] == "query.baseline"
    assert client.get(f"/v1/jobs/{finished}/compare", params={"baseline": "f" * 32}).status_code == 404
    assert client.get(f"/v1/jobs/{finished}/compare").status_code == 400           # baseline is required
    keyed = api_factory({**stack.env, "RAGPULSE_API_KEYS": "acme:key-acme,globex:key-globex"})
    with httpx.Client(base_url=keyed, timeout=30, headers={"Authorization": "Bearer key-acme"}) as acme:
        mine = post(acme, faithful_traces(3))
        wait_for_job(acme, mine)
        assert acme.get(f"/v1/jobs/{mine}/compare", params={"baseline": mine}).status_code == 200
        globex = {"Authorization": "Bearer key-globex"}
        assert acme.get(f"/v1/jobs/{mine}/compare", params={"baseline": mine}, headers=globex).status_code == 404


def test_an_oracle_baseline_reports_the_gap_live(client: httpx.Client) -> None:
    oracle = post(client, faithful_traces(20), variant="oracle")
    rag = post(client, unfaithful_every_other(faithful_traces(20)), variant="rag")
    for job_id in (oracle, rag):
        wait_for_job(client, job_id)
    body = client.get(f"/v1/jobs/{rag}/compare", params={"baseline": oracle}).json()
    gap = body["oracle_gap"]
    assert gap["metric"] == "faithfulness" and gap["value"] > 0.15 and "fix retrieval first" in gap["meaning"]
    assert body["rag_lift"] is None
    assert client.get(f"/v1/jobs/{rag}/report").json()["variant"] == "rag"


def test_a_no_rag_baseline_reports_what_retrieval_adds() -> None:
    from ragpulse.model.compare import MetricDelta

    def delta(d: float, ci: tuple[float, float]) -> MetricDelta:
        return MetricDelta(n=40, baseline=0.4, candidate=0.4 + d, delta=d, ci95=ci, excludes_zero=ci[0] > 0 or ci[1] < 0,
                           better="higher", change="unchanged")

    no_rag, rag = RunInfo(job_id="n", run=None, variant="no_rag"), RunInfo(job_id="r", run=None, variant="rag")
    lift = baseline_gaps(no_rag, rag, {"correctness": delta(0.3, (0.2, 0.4)), "answer_relevance": delta(0, (-1, 1))})
    assert lift["rag_lift"].metric == "correctness" and lift["rag_lift"].value == pytest.approx(0.3)
    assert "retrieval adds to correctness" in lift["rag_lift"].meaning
    flat = baseline_gaps(no_rag, rag, {"answer_relevance": delta(0.05, (-0.1, 0.2))})["rag_lift"]
    assert flat.metric == "answer_relevance" and "no measurable lift" in flat.meaning
    worse = baseline_gaps(rag, no_rag, {"correctness": delta(0.3, (0.2, 0.4))})["rag_lift"]   # no_rag as candidate
    assert worse.value == pytest.approx(-0.3) and "misleads" in worse.meaning


def test_holm_adjusts_by_rank_and_never_decreases() -> None:
    from ragpulse.metrics.stats import holm

    # sorted: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised to 0.06 (monotone); back in input order:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])   # capped at 1
    assert holm([]) == []


def test_bootstrap_p_values_count_resamples_on_each_side_of_zero() -> None:
    from ragpulse.metrics.stats import bootstrap_means, bootstrap_p_values

    shifted = bootstrap_means(np.full((40, 1), -0.1))
    assert bootstrap_p_values(shifted) == [pytest.approx(2 / 1001)]   # no resample at or above 0: 2 (0 + 1) / 1001
    assert bootstrap_p_values(bootstrap_means(np.zeros((40, 1)))) == [1.0]
    mixed = np.asarray([[1.0], [-1.0]] * 20)
    assert bootstrap_p_values(bootstrap_means(mixed))[0] > 0.5


def test_only_the_family_is_tested_and_adjusted() -> None:
    baseline = [result(f"t{i}", i, [f"d{i}", "x", "y"], [f"d{i}"]) for i in range(30)]
    candidate = [result(f"t{i}", i, ["x", "y"] if i % 3 == 0 else [f"d{i}", "x"], [f"d{i}"]) for i in range(30)]
    found = compare(*runs(), baseline, candidate, family=["recall@5", "mrr", "precision@1"])
    assert found.family == ["precision@1", "recall@5", "mrr"]            # in the comparison's order
    tested = {key: d for key, d in found.retrieval.items() if d.tested}
    assert all(d.p_holm is not None and d.p_holm >= d.p_value and d.p_adjusted == d.p_holm for d in tested.values())
    assert all(d.p_holm is None and d.change == "untested" for k, d in found.retrieval.items() if k not in tested)
    assert found.retrieval["recall@5"].change == "regressed"           # a third of the queries broke
    assert set(found.significant_regressions) <= set(found.family)
    assert found.by_question_type["unspecified"].metrics["recall@5"].p_holm is None   # slices are not tested


# -- the sign-flip permutation test ---------------------------------------------------------------------------------

def test_sign_flip_is_exact_on_small_samples() -> None:
    from ragpulse.metrics.stats import sign_flip_p_values

    # differences (1, 1, 1): of the 8 sign patterns only +++ and --- reach |sum| = 3, so p = 2/8
    # differences (1, 2): sums 3, 1, -1, -3; |sum| >= 3 twice of 4, so p = 1/2
    assert sign_flip_p_values(np.asarray([[1.0], [1.0], [1.0]])) == [0.25]
    assert sign_flip_p_values(np.asarray([[1.0], [2.0]])) == [0.5]
    assert sign_flip_p_values(np.zeros((5, 2))) == [1.0, 1.0]          # no change at all


def test_sign_flip_reaches_far_below_any_family_threshold() -> None:
    from ragpulse.config import defaults
    from ragpulse.metrics.stats import sign_flip_p_values

    # 40 pairs that all lost 0.1: no random sign pattern reaches |sum| = 4, so p is the Monte Carlo floor 1/(B + 1),
    # where 1,000 bootstrap resamples stopped at 2/1001 and Holm over 27 metrics could never get it under 0.05
    [p] = sign_flip_p_values(np.full((40, 1), -0.1))
    assert p == pytest.approx(1 / (defaults.PERMUTATION_DRAWS + 1)) and p * 27 < 0.05 / 10


def test_sign_flip_agrees_with_the_normal_approximation_on_a_large_sample() -> None:
    from ragpulse.metrics.stats import sign_flip_p_values

    rng = np.random.default_rng(11)
    differences = rng.normal(-0.012, 0.2, 2_000)
    z = differences.mean() / (np.sqrt(np.mean(differences ** 2)) / np.sqrt(len(differences)))  # the test's null sd
    normal_p = math.erfc(abs(z) / math.sqrt(2))
    [p] = sign_flip_p_values(differences[:, None])
    assert 0.005 < normal_p < 0.2 and p == pytest.approx(normal_p, abs=0.01)


def test_noise_alone_rarely_fails_a_family_under_holm() -> None:
    # 200 comparisons of two runs that differ only by noise, six tested metrics each: Holm keeps the family-wise
    # false alarm rate under alpha = 0.05 (a few percent; an unadjusted test of six would be near 26%).
    from ragpulse.metrics.stats import holm, sign_flip_p_values

    rng = np.random.default_rng(3)
    alarms = 0
    for _ in range(200):
        differences = rng.normal(0, 0.2, (60, 6))
        alarms += min(holm(sign_flip_p_values(differences, draws=2_000))) < 0.05
    assert alarms / 200 <= 0.08
