"""Qualification figures and verdict on hand-computed cases."""

from __future__ import annotations

import datetime

import pytest

from ragpulse.qualification import suite
from ragpulse.qualification.agreement import Outcome, figures
from ragpulse.qualification.runner import measure
from ragpulse.qualification.verdict import KAPPA_MIN, decide

NOW = datetime.datetime(2026, 12, 8, tzinfo=datetime.UTC)


def outcomes(tp: int, fn: int, tn: int, fp: int, errors: int = 0) -> list[Outcome]:
    return ([Outcome(True, True)] * tp + [Outcome(True, False)] * fn + [Outcome(False, False)] * tn
            + [Outcome(False, True)] * fp + [Outcome(True, None)] * errors)


def test_figures_of_a_confusion_table() -> None:
    f = figures(outcomes(tp=40, fn=10, tn=45, fp=5))
    assert f.accuracy.point == pytest.approx(0.85)          # (40 + 45) / 100
    assert f.sensitivity.point == pytest.approx(0.8)        # 40 / 50
    assert f.specificity.point == pytest.approx(0.9)        # 45 / 50
    # p_o 0.85; judge says yes 45/100, labels 50/100: p_e = .5*.45 + .5*.55 = 0.5; kappa = (.85 - .5) / .5 = 0.7
    assert f.kappa.point == pytest.approx(0.7)
    low, high = f.kappa.ci95
    assert low < 0.7 < high
    low, high = f.sensitivity.ci95
    assert low < 0.8 < high


def test_errors_are_counted_apart_never_as_a_verdict() -> None:
    f = figures(outcomes(tp=10, fn=0, tn=10, fp=0, errors=5))
    assert (f.items, f.judged, f.errors) == (25, 20, 5)
    assert f.sensitivity.point == 1.0 and f.sensitivity.n == 10


def test_a_judge_that_says_supported_to_everything_is_not_qualified() -> None:
    f = figures(outcomes(tp=0, fn=50, tn=50, fp=0))
    assert f.sensitivity.point == 0.0 and f.kappa.point == 0.0
    verdict, reasons = decide(f)
    assert verdict == "not_qualified"
    assert any(r.startswith("sensitivity 0.00") for r in reasons)
    assert any(r.startswith(f"kappa 0.00 is below {KAPPA_MIN}") for r in reasons)


def test_perfect_agreement_on_enough_items_is_qualified() -> None:
    verdict, reasons = decide(figures(outcomes(tp=100, fn=0, tn=100, fp=0)))
    assert (verdict, reasons) == ("qualified", [])


def test_kappa_above_the_point_floor_but_with_a_wide_interval_is_not_qualified() -> None:
    f = figures(outcomes(tp=4, fn=1, tn=4, fp=1))   # kappa 0.6 on 10 items
    assert f.kappa.point == pytest.approx(0.6)
    verdict, reasons = decide(f)
    assert verdict == "not_qualified" and any("interval" in r for r in reasons)


def test_too_many_errors_is_not_qualified() -> None:
    verdict, reasons = decide(figures(outcomes(tp=40, fn=0, tn=40, fp=0, errors=20)))
    assert verdict == "not_qualified" and any("judge error" in r for r in reasons)


def test_measure_groups_by_split_and_class_and_lists_misses() -> None:
    items = suite.select("all", 60)
    calls = [(not item.hallucinated if i == 0 else item.hallucinated, None) for i, item in enumerate(items)]
    calls[1] = (None, "judge output invalid")
    result = measure("local", "m", items, calls, "all", NOW)
    assert set(result.by_split) == {"tune", "held_out"}
    assert sum(f.items for f in result.by_class.values()) == 60
    assert [(m.id, m.judged, m.error) for m in result.misses] == [
        (items[0].id, not items[0].hallucinated, None), (items[1].id, None, "judge output invalid")]
    assert result.overall.errors == 1
