"""Loading a job's results pauses the garbage collector while it decodes (issue 28) and always gives it back as it
found it."""

from __future__ import annotations

import gc

import pytest

from ragpulse.store.results import collection_paused


def test_the_collector_is_paused_inside_and_enabled_again_after() -> None:
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_still_enables_it_again() -> None:
    with pytest.raises(ValueError), collection_paused():
        raise ValueError("a corrupt result")
    assert gc.isenabled()


def test_a_collector_the_caller_had_disabled_stays_disabled() -> None:
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
