"""Judge calibration against human labels: the warning's wording on exact values."""

from __future__ import annotations

import msgspec
import pytest

from ragpulse.exceptions import InvalidBody
from ragpulse.judges.calibration import KAPPA_RELIABLE, _warning, below, calibrate, check_labels
from ragpulse.model.calibration import Agreement, CalibrationRequest
from ragpulse.model.results import TraceResult
from ragpulse.model.verdicts import Claim


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


# -- labels that contradict one another, or name claims the judge never made: 422 naming the path ----------------

def judged_result(trace_id: str, verdicts: list[str]) -> TraceResult:
    from tests.test_monitoring_unit import scored

    claims = [Claim(text=f"claim {i}", verdict=v) for i, v in enumerate(verdicts)]   # type: ignore[arg-type]
    return TraceResult(trace_id=trace_id, index=0, status="ok", app="a", labels="unlabelled", retrieval=None,
                       judge="local", generation=scored("unsupported" in verdicts, 0.5), claims=claims)


def request(*labels: dict) -> CalibrationRequest:
    return msgspec.convert({"job_id": "j", "labels": list(labels)}, CalibrationRequest)


def paths(caught: pytest.ExceptionInfo[InvalidBody]) -> list[str]:
    return [e["path"] for e in caught.value.errors]


def test_a_trace_labelled_twice_is_refused_naming_the_second_label() -> None:
    twice = request({"trace_id": "t1", "faithful": True}, {"trace_id": "t2", "faithful": True},
                    {"trace_id": "t1", "faithful": False})                 # before: both counted in the kappa
    with pytest.raises(InvalidBody) as caught:
        check_labels(twice)
    assert paths(caught) == ["$.labels[2].trace_id"] and "contradicting $.labels[0]" in str(caught.value.errors)
    check_labels(request({"trace_id": "t1", "faithful": True}, {"trace_id": "t2", "faithful": False}))


def test_a_claim_given_two_verdicts_in_one_label_is_refused() -> None:
    label = {"trace_id": "t1", "faithful": False, "claims": [{"index": 0, "verdict": "supported"},
                                                             {"index": 0, "verdict": "unsupported"}]}
    with pytest.raises(InvalidBody) as caught:
        check_labels(request(label))
    assert paths(caught) == ["$.labels[0].claims[1].index"]


def test_a_claim_index_the_judge_never_made_is_refused_not_ignored() -> None:
    results = [judged_result("t1", ["supported", "unsupported"]), judged_result("t2", ["supported"])]
    labels = request({"trace_id": "t1", "faithful": False, "claims": [{"index": 1, "verdict": "unsupported"}]},
                     {"trace_id": "t2", "faithful": True, "claims": [{"index": 0, "verdict": "supported"},
                                                                     {"index": 2**70, "verdict": "supported"}]},
                     {"trace_id": "gone", "faithful": True, "claims": [{"index": 9, "verdict": "supported"}]})
    with pytest.raises(InvalidBody) as caught:
        calibrate("j", labels, results)                                    # before: index 2**70 silently skipped
    assert paths(caught) == ["$.labels[1].claims[1].index"]               # `gone` matched nothing: listed unmatched
    assert caught.value.errors[0]["message"] == "trace t2 has 1 claims (index 0 to 0)"
    labels.labels[1].claims.pop()
    calibration = calibrate("j", labels, results)
    assert calibration.claims is not None and calibration.claims.n == 2 and calibration.unmatched_trace_ids == ["gone"]
