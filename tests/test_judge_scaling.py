"""The local judge's time grows linearly with its input (bench/judge_scaling.py measures it at full size).

Each test judges a small and a ten-times larger input of the same shape and compares seconds per character: about
1 for a linear judge, about 10 for a quadratic one. The bound (4) leaves room for a shared, noisy machine; each
time is the best of a few runs.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from ragpulse.judges.local import LocalJudge
from ragpulse.judges.text import clear_read_cache, split_sentences
from ragpulse.model.trace import RetrievedDoc, Trace

ROOT = Path(__file__).resolve().parents[1]
MAX_RATIO = 4.0
"""Largest accepted (seconds per character of the large input) / (that of the small one)."""


def bench_module():
    spec = importlib.util.spec_from_file_location("judge_scaling", ROOT / "bench" / "judge_scaling.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("judge_scaling", module)
    spec.loader.exec_module(module)
    return module


def best_time(work: Callable[[], object], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def per_char_ratio(small: Trace, large: Trace) -> float:
    judge = LocalJudge()
    size = lambda trace: len(msgspec.json.encode(trace))  # noqa: E731

    def cold(trace: Trace) -> None:
        clear_read_cache()  # text.read remembers texts: a rerun would skip the reading whose cost is measured
        judge.evaluate(trace)

    small_time = best_time(lambda: cold(small), runs=5)
    large_time = best_time(lambda: cold(large), runs=2)
    return (large_time / size(large)) / (small_time / size(small))


@pytest.fixture(scope="module")
def maker():
    return bench_module().TextMaker(seed=7)


def test_many_similar_documents_cost_grows_linearly() -> None:
    """Each passage's fit used to be checked against every other passage for swapped words (quadratic in passages):
    here every passage shares most of the claim, so every one is a rival of every other."""

    def similar(docs: int) -> Trace:
        texts = [" ".join(f"Customer {d * 1000 + k} on the annual plan gets priority support." for k in range(20))
                 for d in range(docs)]
        return Trace(query="What does the annual plan include?",
                     answer="The annual plan includes priority support and audit logs. It costs 40 dollars a month.",
                     retrieved_docs=[RetrievedDoc(id=f"d{i}", text=text) for i, text in enumerate(texts)])

    assert per_char_ratio(similar(10), similar(200)) < MAX_RATIO


def test_long_answer_cost_grows_linearly(maker) -> None:
    bench = bench_module()
    small, large = bench.long_answer(maker, 6_000), bench.long_answer(maker, 60_000)
    assert per_char_ratio(small, large) < MAX_RATIO


def test_yes_no_answers_read_the_question_once() -> None:
    """Each "Yes." used to re-read the whole question: answer length times question length."""
    query = "Does the plan include single sign-on for every workspace member? " * 300
    doc = "Single sign-on is included in the plan for every workspace member."

    def yes_trace(n: int) -> Trace:
        return Trace(query=query[:32_000], answer="Yes, it does. " * n, retrieved_docs=[RetrievedDoc(id="d", text=doc)])

    assert per_char_ratio(yes_trace(20), yes_trace(200)) < MAX_RATIO


def test_sentence_splitting_after_many_abbreviations_is_linear() -> None:
    """Each "e.g." boundary used to re-split the sentence so far."""
    small, large = "e.g. " * 3_000, "e.g. " * 30_000
    ratio = (best_time(lambda: split_sentences(large), 2) / len(large)) / (best_time(lambda: split_sentences(small), 5)
                                                                          / len(small))
    assert ratio < MAX_RATIO
    assert split_sentences("See e.g. the table. Then stop.") == ["See e.g. the table.", "Then stop."]


def test_a_claim_fits_a_few_passages_however_many_share_its_words(monkeypatch) -> None:
    """Every claim shares all its words with every passage (a claim x passage loop at its worst): the search fits
    a handful of passages per claim, where fitting each one cost claims x passages fits."""
    from ragpulse.judges import local

    answer = " ".join(f"Refunds for order {i} are issued." for i in range(100))
    passages = " ".join(f"Refunds for order {1000 + k} are issued within {500 + k % 30} days." for k in range(2000))
    trace = Trace(query="When are refunds issued?", answer=answer, retrieved_docs=[RetrievedDoc(id="d", text=passages)])
    fits = 0
    real_fit = local._fit

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        nonlocal fits
        fits += 1
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(local, "_fit", counted)
    output = LocalJudge().evaluate(trace)
    assert len(output.claims) == 100 and all(c.verdict == "contradicted" for c in output.claims)  # another number
    assert fits <= 100 * 30, f"{fits} fits for 100 claims over 2,000 passages"
