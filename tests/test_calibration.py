"""Judge calibration against human labels: the warning's wording on exact values."""

from __future__ import annotations

import pytest

from ragpulse.judges.calibration import KAPPA_RELIABLE, _warning, below
from ragpulse.model.calibration import Agreement


def agreement(kappa: float) -> Agreement:
    return Agreement(n=100, accuracy=0.8, kappa=kappa, kappa_ci95=(kappa - 0.1, kappa + 0.1))


@pytest.mark.parametrize(("kappa", "shown"), [(0.598, "0.598"), (0.5996, "0.5996"), (0.59999996, "0.59999996"),
                                              (0.2, "0.200"), (-0.05, "-0.050")])
def test_the_kappa_warning_never_prints_a_value_that_contradicts_it(kappa: float, shown: str) -> None:
    warning = _warning(agreement(kappa))
    assert warning is not None and warning.startswith(f"Cohen's kappa {shown} < {KAPPA_RELIABLE}:")
    assert float(below(kappa, KAPPA_RELIABLE)) < KAPPA_RELIABLE


def test_no_warning_at_or_above_the_threshold() -> None:
    assert _warning(agreement(0.6)) is None and _warning(agreement(0.61)) is None
