"""The shipped qualification suite: its composition, its splits, and that the committed file is what the generator
writes."""

from __future__ import annotations

import collections
import tomllib
from pathlib import Path

from ragpulse.qualification import build_suite, suite
from ragpulse.qualification.model import HALLUCINATED

ROOT = Path(__file__).resolve().parent.parent


def test_the_committed_suite_is_what_the_seeded_generator_writes() -> None:
    assert build_suite.encode(build_suite.build()) == build_suite.SUITE_PATH.read_bytes()


def test_counts_kinds_domains_and_classes() -> None:
    items = suite.all_items()
    kinds = collections.Counter(item.kind for item in items)
    assert kinds["single"] >= 300 and kinds["chat"] >= 60
    assert len({item.domain for item in items}) >= 10
    classes = collections.Counter(item.failure_class for item in items)
    assert set(classes) == set(HALLUCINATED)
    assert min(classes.values()) >= 20        # every class measurable on its own
    share = sum(item.hallucinated for item in items) / len(items)
    assert 0.4 <= share <= 0.6, share
    assert len({item.id for item in items}) == len(items)


def test_chat_turns_carry_their_session_and_history() -> None:
    chats = [item for item in suite.all_items() if item.kind == "chat"]
    for item in chats:
        assert item.trace.session_id and item.trace.turn is not None
        assert (item.trace.history is None) == (item.trace.turn == 0)
    assert {item.trace.turn for item in chats} == {0, 1, 2}


def test_split_is_the_hash_of_the_id_about_30_percent_held_out() -> None:
    items = suite.all_items()
    assert all(item.split == build_suite.split_of(item.id) for item in items)
    held = sum(item.split == "held_out" for item in items) / len(items)
    assert 0.22 <= held <= 0.38, held
    assert {item.split for item in suite.select("held_out")} == {"held_out"}


def test_a_limit_takes_items_spread_over_every_class() -> None:
    picked = suite.select("all", 60)
    assert len(picked) == 60
    assert len({item.failure_class for item in picked}) >= 12


def test_no_question_and_answer_carry_two_labels() -> None:
    """A reader (or the labels fake) that sees only the question and the answer can always know the label."""
    labels: dict[tuple[str, str | None], set[bool]] = collections.defaultdict(set)
    for item in suite.all_items():
        labels[item.trace.query, item.trace.answer].add(item.hallucinated)
    assert all(len(values) == 1 for values in labels.values())


def test_pyproject_ships_the_suite_as_package_data() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert suite.SUITE_FILE.replace("items", "*") in declared["ragpulse.qualification"]


def test_the_request_names_exactly_the_judges_that_judge() -> None:
    from typing import get_args

    from ragpulse.judges import kinds
    from ragpulse.qualification.model import QualifyingJudge

    assert sorted(get_args(QualifyingJudge)) == sorted([*kinds.judging_names(), *kinds.ALIASES])
