"""`ragpulse judge qualify` in process, driving the real Anthropic SDK against a fake Messages API on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragpulse.ops.cli import main
from ragpulse.qualification import suite
from tests.fake_anthropic import FakeAnthropic, scripted_verdicts

LABELS = {(item.trace.query, item.trace.answer): item.hallucinated for item in suite.all_items()}
"""What the labels fake answers: the suite's own label for the question and answer it was sent."""


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("RAGPULSE_JUDGE_BASE_URL", server.url)
        monkeypatch.setenv("REDIS_URL", redis_url)   # the judge's shared rate limiter
        yield server


def test_a_judge_that_always_answers_supported_is_not_qualified(fake: FakeAnthropic,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    scripted_verdicts(fake, lambda trace: False)
    assert main(["judge", "qualify", "--judge", "anthropic", "--limit", "80"]) == 1
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.strip().startswith("all "))
    # all, items, errors, accuracy [low, high], sensitivity [low, high], ...
    assert line.split()[6:8] == ["0.00", "[0.00,"]                     # sensitivity 0
    assert "VERDICT: not qualified" in out and "sensitivity 0.00 is below" in out
    assert len(fake.requests) == 80


def test_a_judge_that_answers_the_labels_is_qualified_with_kappa_1(fake: FakeAnthropic,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    scripted_verdicts(fake, lambda trace: LABELS[trace["question"], trace["answer"]])
    assert main(["judge", "qualify", "--judge", "anthropic"]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.strip().startswith("all "))
    assert line.split()[-3:] == ["1.00", "[1.00,", "1.00]"]            # kappa 1
    assert "VERDICT: qualified" in out and "MISSES" not in out
    assert len(fake.requests) == len(suite.all_items())


def test_bad_arguments_exit_2(fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["judge", "qualify", "--split", "dev"])
    assert exit_.value.code == 2
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert main(["judge", "qualify", "--judge", "anthropic", "--limit", "5"]) == 2
    assert not fake.requests
