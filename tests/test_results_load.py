"""Loading a job's results pauses the garbage collector while it decodes (issue 28) and always gives it back as it
found it; one trace's result is found without loading them all."""

from __future__ import annotations

import gc
import uuid

import pytest
import redis

from ragpulse.config import keys
from ragpulse.model.results import TraceResult
from ragpulse.store.results import Results, collection_paused


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


def test_one_traces_result_is_found_by_id_without_decoding_the_job(redis_client: redis.Redis,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A label lookup (POST /v1/labels, the review result page) decoded every result of a job of up to 10,000 to
    find one; it now decodes only those whose bytes hold the id, the first by trace order when the id repeats."""
    from ragpulse.store import results as module  # noqa: PLC0415

    store, job_id = Results(redis_client, 600), uuid.uuid4().hex
    ids = [f"t{i}" for i in range(300)] + ["t1"]                     # t1 repeats at the end; t10..t199 contain it
    for index, trace_id in enumerate(ids):
        store.record(job_id, TraceResult(trace_id=trace_id, index=index, status="ok", app="a", labels="unlabelled",
                                         retrieval=None))
    decoded = []
    real = module._result_decoder.decode
    monkeypatch.setattr(module, "_result_decoder", type("Spy", (), {"decode": staticmethod(
        lambda raw: decoded.append(1) or real(raw))})())
    found = store.of_trace(job_id, "t1")
    assert found is not None and found.index == 1 and len(decoded) == 2
    assert store.of_trace(job_id, "t999") is None and store.of_trace(uuid.uuid4().hex, "t1") is None
    assert redis_client.hlen(keys.job_results(job_id)) == 301
