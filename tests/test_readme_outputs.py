"""The README's example outputs are what a fresh service prints for the example files (tests/readme_outputs.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.readme_outputs import RUNS, cut, evaluate, fresh_service, readme_blocks

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    with fresh_service() as url:
        yield url


def test_every_block_is_produced_by_a_run() -> None:
    assert set(readme_blocks()) == set(RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_readme_shows_what_a_run_prints(service: str, name: str) -> None:
    assert readme_blocks()[name] == evaluate(service, RUNS[name]), \
        "README.md is stale: run `python -m tests.readme_outputs` and commit the result"


def test_the_cut_keeps_the_head_and_the_named_sections() -> None:
    report = "job " + "a" * 32 + "  environment e\ncounts\nmethod\nmore\n\nRETRIEVAL\n  r\n\nOTHER\n  o\n\nSECURITY\n  s\n"
    assert cut(report, ("RETRIEVAL", "SECURITY")) == "job …  environment e\ncounts\nmethod\n…\nRETRIEVAL\n  r\n…\nSECURITY\n  s\n…\n"
