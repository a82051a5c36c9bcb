"""Intervals that do not claim certainty they lack (issue 25, defect 8)."""

from __future__ import annotations

import pytest

from ragpulse.metrics.stats import estimate, estimate_columns, wilson_interval
from ragpulse.model.estimate import DEGENERATE_METHOD, UNBOUNDED_POINT_METHOD
from ragpulse.monitoring.rolling import FIELDS, monitor_view


def test_a_one_trace_mean_is_as_uncertain_as_a_one_trace_share() -> None:
    # one trace, recall@1 = 0: the bootstrap resamples [0] only and would say [0, 0]; a share of 0 of 1 says
    # Wilson [0, 0.793] (z^2 / (1 + z^2) = 3.8415 / 4.8415 = 0.7935)
    share = estimate([0.0], "proportion")
    mean = estimate([0.0], "mean", (0.0, 1.0))
    assert mean.ci95 == pytest.approx(share.ci95) and mean.ci95[1] == pytest.approx(0.7935, abs=1e-4)
    assert mean.ci_method == DEGENERATE_METHOD
    columns = estimate_columns({"recall@1": [0.0], "mrr": [0.0]}, {"recall@1": "mean", "mrr": "mean"},
                               {"recall@1": (0.0, 1.0), "mrr": (0.0, 1.0)})
    assert all(est.ci95[1] == pytest.approx(0.7935, abs=1e-4) for est in columns.values())


def test_a_degenerate_graded_mean_is_widened_on_its_own_scale() -> None:
    # answer relevance 3 of a 1-3 scale, one trace: share 1 of 1 is Wilson [0.2065, 1], on 1-3: [1.413, 3]
    est = estimate([3.0], "mean", (1.0, 3.0))
    assert est.ci95 == pytest.approx((1.0 + 2 * 0.20655, 3.0), abs=1e-4)


@pytest.mark.parametrize("value", [0.2, 1 / 3, 2 / 3, 0.7])
@pytest.mark.parametrize("n", [7, 10, 17, 40])
def test_equal_values_are_told_from_the_values_not_from_a_float_noise_interval(value: float, n: int) -> None:
    """Ten precision@5 = 0.2 bootstrapped to (0.19999999999999998, 0.20000000000000004): wider than zero, so the
    report showed it as certain instead of the bounded-variance interval."""
    est = estimate_columns({"m": [value] * n}, {"m": "mean"}, {"m": (0.0, 1.0)})["m"]
    assert est.ci_method == DEGENERATE_METHOD and est.ci95[1] - est.ci95[0] > 0.1


def test_an_unbounded_mean_of_equal_values_says_it_has_no_interval() -> None:
    one = estimate([2.0], "mean")
    assert one.ci_method == UNBOUNDED_POINT_METHOD and one.ci95 == (2.0, 2.0)
    assert estimate([1.0, 3.0], "mean").ci_method != UNBOUNDED_POINT_METHOD


def test_a_varied_sample_keeps_its_bootstrap_interval() -> None:
    values = [0.0, 1.0, 0.5, 1.0]
    assert estimate(values, "mean", (0.0, 1.0)) == estimate(values, "mean")
    assert estimate([0.5] * 3, "mean").ci95 == (0.5, 0.5)    # no scale (e.g. cost in USD): nothing to bound by


@pytest.mark.parametrize("n", [*range(1, 60), 500])
def test_wilson_bounds_at_zero_and_all_are_exact(n: int) -> None:
    # float noise used to leave 5.6e-17 (n = 3) where 0 is meant, which the monitor printed as such
    assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0


def test_the_monitor_shows_zero_not_float_noise() -> None:
    # 0 hallucinated of 500 answered: the lower bound was 4.3e-19 (the figure), it is 0
    totals = dict.fromkeys(FIELDS, 0.0) | {"answered": 500.0, "judged": 500.0, "received": 500.0, "processed": 500.0}
    view = monitor_view(totals, "app", "1h", 1.0)
    assert view["hallucination_rate"]["rate"] == 0.0 and view["hallucination_rate"]["ci95"][0] == 0.0
