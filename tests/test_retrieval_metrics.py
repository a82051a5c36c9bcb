"""Retrieval metrics: hand-computed cases, and a randomised cross-check against trec_eval (pytrec_eval)."""

from __future__ import annotations

import math
import random

import pytest

from ragpulse.metrics.registry import retrieval_scores as retrieval_metrics
from ragpulse.metrics.retrieval import (
    average_precision,
    dcg_at_k,
    gain_of,
    graded_ranking,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevant_count,
)


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# graded_ranking / relevant_count / gain_of
# ---------------------------------------------------------------------------------------------------------------


def test_graded_ranking_looks_up_grades_and_unjudged_is_zero() -> None:
    qrels = {"a": 3, "b": 0, "c": 1}
    # a -> 3, x unjudged -> 0, b judged non-relevant -> 0, c -> 1
    assert graded_ranking(["a", "x", "b", "c"], qrels) == [3, 0, 0, 1]
    assert graded_ranking([], qrels) == []
    # accepts any iterable, e.g. a generator, consumed once
    assert graded_ranking((d for d in ["c", "a"]), qrels) == [1, 3]


def test_graded_ranking_duplicate_doc_counts_once_and_later_slot_is_non_relevant() -> None:
    qrels = {"d1": 2, "d2": 0, "d3": 3}
    # d1 at rank 1 -> 2; d2 -> 0; d1 again at rank 3 -> 0 (slot kept, not removed); d3 at rank 4 -> 3; d4 -> 0
    assert graded_ranking(["d1", "d2", "d1", "d3", "d4"], qrels) == [2, 0, 0, 3, 0]
    # three chunks of the same relevant doc: only the first rank carries the grade
    assert graded_ranking(["d3", "d3", "d3"], qrels) == [3, 0, 0]
    # a repeated unjudged doc stays 0 and keeps its rank, so d1 is still at rank 3
    assert graded_ranking(["x", "x", "d1"], qrels) == [0, 0, 2]


def test_relevant_count_counts_grades_at_least_one() -> None:
    # grades 3, 1, 2 are relevant; 0 and -1 are not -> 3
    assert relevant_count({"a": 3, "b": 0, "c": 1, "d": 2, "e": -1}) == 3
    assert relevant_count({"a": 0}) == 0  # only grade 0 -> 0
    assert relevant_count({}) == 0  # empty -> 0


def test_gain_of_linear_and_exponential() -> None:
    assert gain_of(0, "linear") == 0.0  # grade 0 -> 0
    assert gain_of(1, "linear") == 1.0  # linear gain = grade
    assert gain_of(3, "linear") == 3.0  # linear gain = grade
    assert gain_of(0, "exponential") == 0.0  # 2^0 - 1 = 0
    assert gain_of(1, "exponential") == 1.0  # 2^1 - 1 = 1
    assert gain_of(2, "exponential") == 3.0  # 2^2 - 1 = 3
    assert gain_of(3, "exponential") == 7.0  # 2^3 - 1 = 7
    assert gain_of(-1, "linear") == 0.0  # negative grade -> no gain
    assert gain_of(-1, "exponential") == 0.0  # negative grade -> no gain


# ---------------------------------------------------------------------------------------------------------------
# recall / precision / hit_rate at k
# ---------------------------------------------------------------------------------------------------------------

# ranks:        1  2  3  4  5      relevant at ranks 2 (grade 2) and 4 (grade 1); 3 relevant docs in qrels
GRADES_RPH = [0, 2, 0, 1, 0]
N_REL_RPH = 3


def test_recall_at_k() -> None:
    assert recall_at_k(GRADES_RPH, N_REL_RPH, 1) == approx(0.0)  # 0 relevant in top 1 / 3 = 0
    assert recall_at_k(GRADES_RPH, N_REL_RPH, 2) == approx(1 / 3)  # 1 relevant in top 2 / 3 = 0.333...
    assert recall_at_k(GRADES_RPH, N_REL_RPH, 3) == approx(1 / 3)  # 1 / 3
    assert recall_at_k(GRADES_RPH, N_REL_RPH, 4) == approx(2 / 3)  # grade 1 counts: 2 / 3 = 0.666...
    assert recall_at_k(GRADES_RPH, N_REL_RPH, 10) == approx(2 / 3)  # k > len: still 2 / 3
    assert recall_at_k([1, 1], 2, 10) == approx(1.0)  # 2 / 2 = 1
    assert recall_at_k([], 2, 5) == approx(0.0)  # nothing retrieved: 0 / 2 = 0


def test_precision_at_k_divides_by_k_even_beyond_ranking_length() -> None:
    assert precision_at_k(GRADES_RPH, 1) == approx(0.0)  # 0 / 1 = 0
    assert precision_at_k(GRADES_RPH, 2) == approx(0.5)  # 1 / 2 = 0.5
    assert precision_at_k(GRADES_RPH, 4) == approx(0.5)  # 2 / 4 = 0.5
    assert precision_at_k(GRADES_RPH, 5) == approx(0.4)  # 2 / 5 = 0.4
    assert precision_at_k(GRADES_RPH, 10) == approx(0.2)  # k=10 > 5 retrieved: 2 / 10 = 0.2 (not 2 / 5)
    assert precision_at_k([3], 3) == approx(1 / 3)  # 1 retrieved, relevant: 1 / 3 = 0.333...
    assert precision_at_k([], 5) == approx(0.0)  # 0 / 5 = 0


def test_hit_rate_at_k() -> None:
    assert hit_rate_at_k(GRADES_RPH, 1) == 0.0  # rank 1 is non-relevant -> 0
    assert hit_rate_at_k(GRADES_RPH, 2) == 1.0  # rank 2 relevant -> 1
    assert hit_rate_at_k(GRADES_RPH, 10) == 1.0  # k > len, a relevant doc present -> 1
    assert hit_rate_at_k([0, 0, 0, 1], 3) == 0.0  # first relevant at rank 4 > 3 -> 0
    assert hit_rate_at_k([0, 0, 0, 1], 4) == 1.0  # grade 1 at rank 4 <= 4 -> 1
    assert hit_rate_at_k([], 5) == 0.0  # nothing retrieved -> 0


def test_duplicate_chunks_do_not_inflate_precision_or_recall() -> None:
    # one relevant doc "a" retrieved as 3 chunks -> grades [1, 0, 0]
    m = retrieval_metrics(["a", "a", "a"], {"a": 1, "b": 1}, [3])
    assert m is not None
    assert m["precision@3"] == approx(1 / 3)  # distinct relevant 1 / k=3 = 0.333... (not 3/3)
    assert m["recall@3"] == approx(0.5)  # 1 distinct relevant / 2 relevant = 0.5 (not 3/2)
    assert m["map"] == approx(0.5)  # (1/1) / 2 relevant = 0.5
    # DCG = 1/log2(2) = 1 (later chunks are grade 0); IDCG = 1/log2(2) + 1/log2(3) = 1.6309...
    assert m["ndcg@3"] == approx(1 / (1 + 1 / math.log2(3)))


# ---------------------------------------------------------------------------------------------------------------
# reciprocal rank / average precision
# ---------------------------------------------------------------------------------------------------------------


def test_reciprocal_rank() -> None:
    assert reciprocal_rank([2, 0, 1]) == approx(1.0)  # first relevant at rank 1 -> 1/1
    assert reciprocal_rank([0, 0, 1, 3]) == approx(1 / 3)  # first relevant (grade 1) at rank 3 -> 1/3
    assert reciprocal_rank([0, 0, 0, 0, 0, 0, 0, 2]) == approx(0.125)  # rank 8 -> 1/8 = 0.125
    assert reciprocal_rank([0, 0]) == 0.0  # no relevant retrieved -> 0
    assert reciprocal_rank([]) == 0.0  # nothing retrieved -> 0


def test_average_precision() -> None:
    # relevant at ranks 1, 3, 6; 4 relevant in qrels: (1/1 + 2/3 + 3/6) / 4 = (13/6) / 4 = 13/24 = 0.541666...
    assert average_precision([1, 0, 1, 0, 0, 1], 4) == approx(13 / 24)
    # graded labels are binarised: relevant at ranks 1, 3; 2 relevant: (1/1 + 2/3) / 2 = 5/6 = 0.8333...
    assert average_precision([3, 0, 2], 2) == approx(5 / 6)
    # relevant at ranks 2, 3; 2 relevant: (1/2 + 2/3) / 2 = 7/12 = 0.58333...
    assert average_precision([0, 1, 1], 2) == approx(7 / 12)
    assert average_precision([0, 0, 0], 3) == 0.0  # no relevant retrieved -> 0 / 3 = 0
    assert average_precision([], 1) == 0.0  # nothing retrieved -> 0


# ---------------------------------------------------------------------------------------------------------------
# DCG / nDCG, linear and exponential, graded labels 0..3
# ---------------------------------------------------------------------------------------------------------------

# qrels grades: a=3, b=2, c=1, d=0; ideal order 3, 2, 1, 0.
# ranking c, d, a, x(unjudged), b -> grades [1, 0, 3, 0, 2]
NDCG_QRELS = {"a": 3, "b": 2, "c": 1, "d": 0}
NDCG_RANKING = ["c", "d", "a", "x", "b"]
NDCG_GRADES = [1, 0, 3, 0, 2]


def test_ndcg_fixture_grades() -> None:
    assert graded_ranking(NDCG_RANKING, NDCG_QRELS) == NDCG_GRADES  # c=1, d=0, a=3, x=0, b=2


def test_dcg_linear() -> None:
    assert dcg_at_k(NDCG_GRADES, 1) == approx(1.0)  # DCG@1 = 1/log2(2) = 1
    assert dcg_at_k(NDCG_GRADES, 3) == approx(2.5)  # DCG@3 = 1/log2(2) + 0 + 3/log2(4) = 1 + 1.5 = 2.5
    # DCG@5 = 2.5 + 0/log2(5) + 2/log2(6) = 2.5 + 0.773705614... = 3.273705614...
    assert dcg_at_k(NDCG_GRADES, 5) == approx(2.5 + 2 / math.log2(6))
    assert dcg_at_k(NDCG_GRADES, 50) == approx(2.5 + 2 / math.log2(6))  # k > len: same as DCG@5
    assert dcg_at_k([], 5) == 0.0  # empty -> 0


def test_dcg_exponential() -> None:
    assert dcg_at_k(NDCG_GRADES, 1, "exponential") == approx(1.0)  # (2^1-1)/log2(2) = 1
    # DCG@3 = 1/log2(2) + 0 + (2^3-1)/log2(4) = 1 + 7/2 = 4.5
    assert dcg_at_k(NDCG_GRADES, 3, "exponential") == approx(4.5)
    # DCG@5 = 4.5 + (2^2-1)/log2(6) = 4.5 + 3/2.584962... = 4.5 + 1.160558... = 5.660558...
    assert dcg_at_k(NDCG_GRADES, 5, "exponential") == approx(4.5 + 3 / math.log2(6))


def test_ndcg_linear_graded() -> None:
    # DCG@1 = 1/log2(2) = 1; IDCG@1 = 3/log2(2) = 3 -> 1/3
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 1) == approx(1 / 3)
    # DCG@3 = 1 + 3/log2(4) = 2.5; IDCG@3 = 3 + 2/log2(3) + 1/log2(4) = 4.761859507... -> 0.525004989...
    idcg3 = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 3) == approx(2.5 / idcg3)
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 3) == pytest.approx(0.5250049893849101, abs=1e-12)
    # DCG@5 = 2.5 + 2/log2(6) = 3.273705614...; IDCG@5 = IDCG@3 + 0/log2(5) = 4.761859507... -> 0.687484712...
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 5) == approx((2.5 + 2 / math.log2(6)) / idcg3)
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 5) == pytest.approx(0.6874847125494647, abs=1e-12)


def test_ndcg_exponential_graded() -> None:
    # DCG@1 = (2^1-1)/1 = 1; IDCG@1 = (2^3-1)/1 = 7 -> 1/7
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 1, "exponential") == approx(1 / 7)
    # DCG@3 = 1 + 7/log2(4) = 4.5; IDCG@3 = 7 + 3/log2(3) + 1/log2(4) = 9.392789260... -> 0.479090914...
    idcg3 = 7 + 3 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 3, "exponential") == approx(4.5 / idcg3)
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 3, "exponential") == pytest.approx(0.47909091485969846, abs=1e-12)
    # DCG@5 = 4.5 + 3/log2(6) = 5.660558421...; IDCG@5 = IDCG@3 -> 0.602649358...
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 5, "exponential") == approx((4.5 + 3 / math.log2(6)) / idcg3)
    assert ndcg_at_k(NDCG_GRADES, NDCG_QRELS, 5, "exponential") == pytest.approx(0.6026493584157245, abs=1e-12)


def test_ndcg_perfect_ranking_is_one_and_ideal_uses_unretrieved_judged_docs() -> None:
    # ranking a, b, c is the ideal order: DCG@3 = IDCG@3 -> 1
    assert ndcg_at_k([3, 2, 1], NDCG_QRELS, 3) == approx(1.0)
    assert ndcg_at_k([3, 2, 1], NDCG_QRELS, 3, "exponential") == approx(1.0)
    # only "a" retrieved, but b and c are in the ideal: DCG@3 = 3; IDCG@3 = 3 + 2/log2(3) + 1/2 -> 0.630007...
    assert ndcg_at_k([3], NDCG_QRELS, 3) == approx(3 / (3 + 2 / math.log2(3) + 0.5))


def test_ndcg_without_relevant_labels_is_zero() -> None:
    assert ndcg_at_k([0, 0], {"a": 0, "b": 0}, 5) == 0.0  # IDCG = 0 -> defined as 0, no ZeroDivisionError
    assert ndcg_at_k([0, 0], {}, 5) == 0.0  # empty qrels -> IDCG = 0 -> 0
    assert ndcg_at_k([], {"a": 2}, 5) == 0.0  # DCG = 0, IDCG = 2 -> 0


def test_exponential_gain_differs_from_linear_on_graded_data() -> None:
    # Same ranking, same labels; only the gain changes.
    # linear:      DCG@3 = 1 + 3/2 = 2.5;  IDCG@3 = 3 + 2/log2(3) + 1/2 = 4.761859507...  -> 0.525004989...
    # exponential: DCG@3 = 1 + 7/2 = 4.5;  IDCG@3 = 7 + 3/log2(3) + 1/2 = 9.392789260...  -> 0.479090914...
    lin = retrieval_metrics(NDCG_RANKING, NDCG_QRELS, [1, 3, 5], gain="linear")
    exp = retrieval_metrics(NDCG_RANKING, NDCG_QRELS, [1, 3, 5], gain="exponential")
    assert lin is not None and exp is not None
    assert lin["ndcg@1"] == approx(1 / 3)  # 1 / 3
    assert exp["ndcg@1"] == approx(1 / 7)  # 1 / (2^3 - 1) = 1/7
    assert lin["ndcg@3"] == pytest.approx(0.5250049893849101, abs=1e-12)  # 2.5 / 4.761859507...
    assert exp["ndcg@3"] == pytest.approx(0.47909091485969846, abs=1e-12)  # 4.5 / 9.392789260...
    assert lin["ndcg@5"] == pytest.approx(0.6874847125494647, abs=1e-12)  # 3.273705614... / 4.761859507...
    assert exp["ndcg@5"] == pytest.approx(0.6026493584157245, abs=1e-12)  # 5.660558421... / 9.392789260...
    for k in (1, 3, 5):
        assert abs(lin[f"ndcg@{k}"] - exp[f"ndcg@{k}"]) > 0.04  # gains 3 vs 7 for grade 3 -> clearly different
    # the gain affects nDCG only: every other metric is the same
    for key in lin:
        if not key.startswith("ndcg@"):
            assert lin[key] == exp[key], key


def test_exponential_equals_linear_on_binary_labels() -> None:
    # with grades 0/1 only, 2^1 - 1 = 1 = linear gain, so nDCG is identical
    qrels = {"a": 1, "b": 1, "c": 0}
    ranking = ["c", "a", "x", "b"]  # grades [0, 1, 0, 1]
    lin = retrieval_metrics(ranking, qrels, [4])
    exp = retrieval_metrics(ranking, qrels, [4], gain="exponential")
    assert lin is not None and exp is not None
    # DCG@4 = 1/log2(3) + 1/log2(5) = 1.061606...; IDCG@4 = 1 + 1/log2(3) = 1.630929... -> 0.650915...
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert lin["ndcg@4"] == approx(expected)
    assert exp["ndcg@4"] == approx(expected)


# ---------------------------------------------------------------------------------------------------------------
# retrieval_metrics
# ---------------------------------------------------------------------------------------------------------------


def test_retrieval_metrics_none_without_relevant_labels() -> None:
    assert retrieval_metrics(["a", "b"], {"a": 0, "b": 0}, [1, 5]) is None  # only grade-0 docs -> None
    assert retrieval_metrics(["a"], {}, [1, 5]) is None  # empty qrels -> None
    assert retrieval_metrics([], {}, [1, 5]) is None  # nothing retrieved, nothing labelled -> None
    assert retrieval_metrics(["a"], {"a": -1, "b": 0}, [1]) is None  # negative grade is not relevant -> None


def test_retrieval_metrics_full_dict() -> None:
    # qrels: a=3, b=2, c=1, d=0 (3 relevant); ranking c, d, a, x, b -> grades [1, 0, 3, 0, 2]
    m = retrieval_metrics(NDCG_RANKING, NDCG_QRELS, [1, 3, 10])
    assert m is not None
    assert set(m) == {
        *(f"{name}@{k}" for name in ("recall", "precision", "hit_rate", "ndcg") for k in (1, 3, 10)),
        "mrr",
        "map",
    }
    assert m["recall@1"] == approx(1 / 3)  # c in top 1: 1 / 3
    assert m["recall@3"] == approx(2 / 3)  # c, a in top 3: 2 / 3
    assert m["recall@10"] == approx(1.0)  # c, a, b: 3 / 3
    assert m["precision@1"] == approx(1.0)  # 1 / 1
    assert m["precision@3"] == approx(2 / 3)  # 2 / 3
    assert m["precision@10"] == approx(0.3)  # 3 / 10 (only 5 retrieved, still / 10)
    assert m["hit_rate@1"] == 1.0  # c at rank 1
    assert m["hit_rate@3"] == 1.0
    assert m["hit_rate@10"] == 1.0
    assert m["ndcg@1"] == approx(1 / 3)  # DCG 1 / IDCG 3
    assert m["ndcg@3"] == approx(2.5 / (3 + 2 / math.log2(3) + 0.5))  # 2.5 / 4.761859507... = 0.525004989...
    # DCG@10 = 2.5 + 2/log2(6) = 3.273705614...; IDCG@10 = 4.761859507... -> 0.687484712...
    assert m["ndcg@10"] == approx((2.5 + 2 / math.log2(6)) / (3 + 2 / math.log2(3) + 0.5))
    assert m["mrr"] == approx(1.0)  # first relevant at rank 1
    assert m["map"] == approx((1 / 1 + 2 / 3 + 3 / 5) / 3)  # relevant at 1, 3, 5: (1 + 2/3 + 3/5) / 3 = 0.755...


def test_retrieval_metrics_nothing_relevant_retrieved_is_all_zero() -> None:
    m = retrieval_metrics(["x", "y", "d"], {"a": 2, "d": 0}, [1, 5])
    assert m is not None
    assert all(v == 0.0 for v in m.values()), m  # no relevant doc retrieved -> every metric 0


def test_retrieval_metrics_empty_ranking_is_all_zero() -> None:
    m = retrieval_metrics([], {"a": 2}, [1, 5])
    assert m is not None
    assert all(v == 0.0 for v in m.values()), m  # nothing retrieved -> every metric 0


def test_retrieval_metrics_duplicate_ranks_shift_later_docs() -> None:
    # a, a, b -> grades [1, 0, 2]: the duplicate keeps rank 2, so b sits at rank 3
    m = retrieval_metrics(["a", "a", "b"], {"a": 1, "b": 2}, [2, 3])
    assert m is not None
    assert m["recall@2"] == approx(0.5)  # only a in top 2: 1 / 2
    assert m["precision@2"] == approx(0.5)  # 1 / 2 (duplicate not counted)
    assert m["recall@3"] == approx(1.0)  # a, b: 2 / 2
    assert m["precision@3"] == approx(2 / 3)  # 2 / 3
    assert m["map"] == approx((1 / 1 + 2 / 3) / 2)  # relevant at 1, 3: (1 + 2/3) / 2 = 0.8333...
    # DCG@3 = 1/log2(2) + 0 + 2/log2(4) = 2; IDCG@3 = 2/log2(2) + 1/log2(3) = 2.630929... -> 0.760182...
    assert m["ndcg@3"] == approx(2 / (2 + 1 / math.log2(3)))


# ---------------------------------------------------------------------------------------------------------------
# Randomised cross-check against trec_eval
# ---------------------------------------------------------------------------------------------------------------

KS = [1, 3, 5, 10]
CUTOFFS = ",".join(map(str, KS))
TREC_MEASURES = {f"P.{CUTOFFS}", f"recall.{CUTOFFS}", f"ndcg_cut.{CUTOFFS}", "recip_rank", "map"}


def ours_to_trec(ours: dict[str, float]) -> dict[str, float]:
    """Our keys mapped to pytrec_eval's keys (hit_rate has no trec_eval counterpart and is derived)."""
    out = {"recip_rank": ours["mrr"], "map": ours["map"]}
    for k in KS:
        out[f"P_{k}"] = ours[f"precision@{k}"]
        out[f"recall_{k}"] = ours[f"recall@{k}"]
        out[f"ndcg_cut_{k}"] = ours[f"ndcg@{k}"]
    return out


def random_queries(seed: int, n: int) -> dict[str, tuple[dict[str, int], list[str]]]:
    """qid -> (qrels, ranking with distinct doc ids)."""
    rng = random.Random(seed)
    queries: dict[str, tuple[dict[str, int], list[str]]] = {}
    for q in range(n):
        pool = [f"d{i}" for i in range(40)]
        rng.shuffle(pool)
        n_judged = rng.randint(0, 15)
        judged = pool[:n_judged]
        shape = rng.random()
        if shape < 0.08:
            grades = [0] * n_judged  # judged, but nothing relevant -> None
        elif shape < 0.2:
            grades = [rng.choice([0, 1]) for _ in judged]  # binary labels
        else:
            grades = [rng.choice([0, 0, 1, 1, 2, 3]) for _ in judged]  # graded 0..3
        qrels = dict(zip(judged, grades, strict=True))
        length = 0 if rng.random() < 0.07 else rng.randint(0, 25)  # some empty runs
        if rng.random() < 0.15:
            # nothing relevant retrieved: judged non-relevant and unjudged docs only
            candidates = [d for d in pool if qrels.get(d, 0) < 1]
        else:
            candidates = pool  # relevant, judged non-relevant and unjudged docs mixed
        ranking = rng.sample(candidates, min(length, len(candidates)))
        queries[f"q{q}"] = (qrels, ranking)
    return queries


def test_cross_check_against_trec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    queries = random_queries(seed=20240611, n=300)

    trec_qrels = {qid: {d: int(g) for d, g in qrels.items()} for qid, (qrels, _) in queries.items() if qrels}
    # strictly decreasing scores in rank order: trec_eval re-sorts by score (ties broken by docid)
    trec_run = {
        qid: {d: float(len(ranking) - rank) for rank, d in enumerate(ranking)} for qid, (_, ranking) in queries.items()
    }
    evaluator = pytrec_eval.RelevanceEvaluator(trec_qrels, TREC_MEASURES)
    trec = evaluator.evaluate(trec_run)

    counts = {"compared": 0, "none": 0, "empty_run": 0, "no_rel_retrieved": 0, "graded": 0, "long": 0}
    for qid, (qrels, ranking) in queries.items():
        assert len(set(ranking)) == len(ranking)  # distinct ids, as trec_eval requires
        ours = retrieval_metrics(ranking, qrels, KS, gain="linear")
        if not any(g >= 1 for g in qrels.values()):
            assert ours is None, qid  # unanswerable: kept out of the means
            counts["none"] += 1
            continue
        assert ours is not None, qid
        for k in KS:  # hit_rate has no trec_eval measure: check it against its definition
            assert ours[f"hit_rate@{k}"] == (1.0 if any(qrels.get(d, 0) >= 1 for d in ranking[:k]) else 0.0)
        if not ranking:
            # trec_eval may drop a query with an empty run (pytrec_eval keeps it, all zeros); ours must be 0 everywhere
            assert all(v == 0.0 for v in ours.values()), (qid, ours)
            counts["empty_run"] += 1
            if qid not in trec:
                continue
        assert qid in trec, qid
        expected = trec[qid]
        mapped = ours_to_trec(ours)
        assert set(expected) == set(mapped), (qid, sorted(expected))
        for name, value in expected.items():
            assert mapped[name] == pytest.approx(value, abs=1e-9), (qid, name, qrels, ranking, mapped[name], value)
        counts["compared"] += 1
        if ranking and not any(qrels.get(d, 0) >= 1 for d in ranking):
            counts["no_rel_retrieved"] += 1
        if any(g >= 2 for g in qrels.values()):
            counts["graded"] += 1
        if len(ranking) > 10:
            counts["long"] += 1

    # the generator must actually exercise every case
    assert counts["compared"] >= 200, counts
    assert counts["none"] >= 10, counts
    assert counts["empty_run"] >= 5, counts
    assert counts["no_rel_retrieved"] >= 10, counts
    assert counts["graded"] >= 100, counts
    assert counts["long"] >= 50, counts
