"""ragpulse.sdk: the non-blocking trace logger against a scripted fake of POST /v1/traces (retries, drops,
rejections, flush and close), its import weight, then the logger and the job helpers against the real service."""

from __future__ import annotations

import os
import subprocess
import sys
import json
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from ragpulse.exceptions import ClientError
from ragpulse.sdk import RagpulseClient, RagpulseSDKError
from ragpulse.sdk.sender import bad_indices
from ragpulse.sdk.transport import Backoff, retry_after
from tests.fake_ragpulse import DROP, FakeIngest, Step
from tests.traces import dropped_for_a_third, faithful_traces

FAST = {"backoff_base": 0.01, "backoff_cap": 0.05}
"""Backoff small enough that scripted faults cost milliseconds."""


def trace(i: int, tag: str = "t") -> dict:
    # an app of its own: sampling policies are stored per tenant and app, and other tests set some (shop at 0.5)
    return {"trace_id": f"{tag}-{i}", "app": f"sdk-{tag}", "query": f"question {i}?", "answer": f"Fact {i}.",
            "source": "production"}


# -- pieces ------------------------------------------------------------------------------------------------------


def test_backoff_is_full_jitter_under_a_doubling_cap_and_never_below_retry_after_up_to_the_cap() -> None:
    backoff = Backoff(max_retries=5, base=0.1, cap=0.3)
    for attempt, ceiling in [(0, 0.1), (1, 0.2), (2, 0.3), (6, 0.3)]:   # 0.1 * 2**n, capped at 0.3
        delays = [backoff.delay(attempt, None) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays) and max(delays) > ceiling / 2
    assert all(backoff.delay(0, 0.25) == 0.25 for _ in range(50))        # the hint exceeds any jitter at attempt 0
    assert all(backoff.delay(0, 86400.0) == 0.3 for _ in range(50))      # a day's hint waits the cap, no more


@pytest.mark.parametrize(("status", "header", "seconds"), [
    (429, "0.2", 0.2), (503, "5", 5.0), (500, "5", None), (429, "Wed, 21 Oct 2015 07:28:00 GMT", None),
    (429, "-1", None), (429, None, None)])
def test_retry_after_is_read_in_seconds_on_429_and_503_only(status: int, header: str | None, seconds) -> None:
    headers = {"retry-after": header} if header is not None else {}
    assert retry_after(httpx.Response(status, headers=headers)) == seconds


def test_rejection_errors_name_trace_indices_or_nothing() -> None:
    assert bad_indices([{"path": "$.traces[1].query"}, {"path": "$.traces[3]"}], 5) == {1, 3}
    assert bad_indices([{"path": "$.traces[1].query"}, {"path": "$.traces"}], 5) is None   # one names the batch
    assert bad_indices([{"path": "$.traces[9].query"}], 5) is None                         # not in this batch
    assert bad_indices([], 5) is None


def test_importing_the_sdk_loads_none_of_the_service_dependencies() -> None:
    code = ("import ragpulse.sdk, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'litestar','redis','rq','numpy','anthropic','msgspec'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_caller_bug_raises_at_once_and_the_trace_is_copied() -> None:
    with FakeIngest() as fake, RagpulseClient(fake.url, flush_interval_ms=10) as client:
        with pytest.raises(TypeError):
            client.log_trace(["not", "a", "dict"])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            client.log_trace(query="q", metadata={"when": object()})
        with pytest.raises(ValueError):
            client.log_trace(query="q", metadata={"score": float("nan")})
        mine = trace(0)
        assert client.log_trace(mine, answer="overridden") == "t-0"
        mine["trace_id"] = "changed-after"
        made = client.log_trace(query="no id given")
        assert client.flush(5)
    assert fake.delivered() == ["t-0", made] and len(made) == 32


# -- delivery against the scripted fake ---------------------------------------------------------------------------


def test_faults_are_retried_and_every_trace_is_delivered_exactly_once_in_order() -> None:
    with FakeIngest() as fake:
        fake.push(Step(429, {"retry-after": "0.2"}), Step(503, {"retry-after": "0"}), Step(500), Step(DROP))
        # a cap above the 0.2 s hint, which is honoured (under the cap, the hint would wait the cap only)
        with RagpulseClient(fake.url, "key-1", batch_size=10, flush_interval_ms=20, backoff_base=0.01,
                            backoff_cap=1.0) as client:
            ids = [client.log_trace(trace(i)) for i in range(30)]
            assert client.flush(timeout=10)
            stats = client.stats()
    assert fake.delivered() == ids                       # failed posts delivered nothing; each trace once, in order
    assert [a.status for a in fake.attempts[:5]] == [429, 503, 500, DROP, 202]
    assert all(a.trace_ids == ids[:10] for a in fake.attempts[:5])           # the same batch, resent whole
    assert fake.attempts[1].at - fake.attempts[0].at >= 0.2                  # Retry-After honoured
    assert {a.authorization for a in fake.attempts} == {"Bearer key-1"}
    assert (stats.sent, stats.retries, stats.failed, stats.queued, stats.dropped) == (30, 4, 0, 0, 0)
    keys = [a.idempotency_key for a in fake.attempts]
    assert len(set(keys[:5])) == 1 and len(keys[0]) == 32       # one key for the batch, sent again on each retry
    assert len(set(keys)) == 3                                   # and a new one for each of the next two batches


def test_a_retry_after_beyond_the_backoff_cap_does_not_freeze_delivery() -> None:
    with FakeIngest() as fake:
        fake.push(Step(503, {"retry-after": "86400"}), Step(429, {"retry-after": "86400"}))
        with RagpulseClient(fake.url, flush_interval_ms=10, **FAST) as client:
            ids = [client.log_trace(trace(i)) for i in range(3)]
            assert client.flush(timeout=10)      # honouring the hint would wait a day: False after 10 s
    assert fake.delivered() == ids and [a.status for a in fake.attempts] == [503, 429, 202]


def test_retries_are_bounded_then_the_batch_fails_and_the_next_goes_on() -> None:
    with FakeIngest() as fake:
        fake.push(*[Step(500)] * 3)
        with RagpulseClient(fake.url, batch_size=5, max_retries=2, flush_interval_ms=20, **FAST) as client:
            ids = [client.log_trace(trace(i)) for i in range(10)]
            assert client.flush(timeout=10)
            stats = client.stats()
    assert len(fake.attempts) == 4 and fake.delivered() == ids[5:]
    assert (stats.failed, stats.sent, stats.retries) == (5, 5, 2)


def test_log_trace_never_waits_for_a_stalled_service() -> None:
    # Behaviour, not a benchmark: every post stalls 2 s, yet no call waits for it. The bound is a quarter of the stall,
    # so a call that waited fails it, and loose enough for a loaded CI machine (50 ms flaked under a full suite on 2
    # cores: GIL switches among the 4 logging threads, the sender and the other tests' processes).
    with FakeIngest(Step(stall=2.0)) as fake:
        client = RagpulseClient(fake.url, batch_size=50, flush_interval_ms=10)
        client.log_trace(trace(0, "first"))
        deadline = time.monotonic() + 5
        while not fake.attempts and time.monotonic() < deadline:   # the sender is now stuck in a stalled post
            time.sleep(0.01)
        worst: list[float] = []

        def log_many(thread: int) -> None:
            longest = 0.0
            for i in range(250):
                start = time.perf_counter()
                client.log_trace(trace(i, f"th{thread}"))
                longest = max(longest, time.perf_counter() - start)
            worst.append(longest)
        threads = [threading.Thread(target=log_many, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(fake.attempts) >= 1 and client.stats().sent == 0          # a post was stalled while we logged
        assert max(worst) < 0.5, f"a log_trace call took {max(worst) * 1000:.1f} ms"
        assert client.stats().queued + client.stats().dropped == 1001
        client.close(timeout=0.1)


def test_a_full_queue_drops_the_oldest_and_the_newest_are_delivered() -> None:
    with FakeIngest(Step(stall=0.2)) as fake:
        # batches of 100 and a 60 s interval: nothing leaves the queue before the flush
        with RagpulseClient(fake.url, max_queue=10, batch_size=100, flush_interval_ms=60_000) as client:
            ids = [client.log_trace(trace(i)) for i in range(25)]
            assert client.dropped == 15 and client.stats().queued == 10
            assert client.stats().dropped_by == {"queue_full": 15}
            assert client.flush(timeout=10)
    assert fake.delivered() == ids[15:]


def test_the_queue_is_bounded_in_bytes_too_dropping_the_oldest_and_any_trace_larger_than_the_bound(caplog) -> None:
    bound = 10_000
    traces = [{**trace(i), "answer": "x" * 1000} for i in range(25)]
    sizes = [len(json.dumps(t, separators=(",", ":"))) for t in traces]
    kept = next(n for n in range(25, 0, -1) if sum(sizes[-n:]) <= bound)   # the newest that fit: 9 of ~1.1 KB
    with FakeIngest() as fake:
        with RagpulseClient(fake.url, max_queue_bytes=bound, batch_size=100, flush_interval_ms=60_000) as client:
            ids = [client.log_trace(t) for t in traces]
            client.log_trace(trace(99), answer="x" * bound)                 # alone over the bound: dropped itself
            stats = client.stats()
            assert client.flush(timeout=10)
    assert 5 < kept < 25 and stats.queued == kept
    assert stats.dropped_by == {"queue_full": 25 - kept, "larger_than_queue": 1} and stats.dropped == 26 - kept
    assert fake.delivered() == ids[-kept:]
    assert "t-99 dropped: its JSON is" in caplog.text


def test_a_422_rejects_the_traces_it_names_without_retrying_and_resends_the_rest_once() -> None:
    named = {"title": "Unprocessable", "errors": [{"path": "$.traces[1].query", "message": "Object missing"}]}
    whole = {"title": "Unprocessable", "errors": [{"path": "$.traces", "message": "duplicate trace_id"}]}
    with FakeIngest() as fake:
        fake.push(Step(422, body=named), Step(202), Step(422, body=whole))
        with RagpulseClient(fake.url, batch_size=3, flush_interval_ms=20, **FAST) as client:
            ids = [client.log_trace(trace(i)) for i in range(6)]
            assert client.flush(timeout=10)
            stats = client.stats()
    assert [a.trace_ids for a in fake.attempts] == [ids[:3], [ids[0], ids[2]], ids[3:]]
    assert len({a.idempotency_key for a in fake.attempts}) == 3  # the resend is another body: another key
    assert fake.delivered() == [ids[0], ids[2]]
    assert (stats.rejected, stats.sent, stats.retries, stats.failed) == (4, 2, 0, 0)


def test_a_413_splits_the_post_in_halves_down_to_one_trace_and_drops_a_trace_too_large_alone(caplog) -> None:
    # ~10 KB each but trace 5, ~30 KB; the fake's limit is 25 KB: 8 -> 4 + 4 -> [0,1] [2,3] and [4,5] [6,7] ->
    # [4] [5]; [5] alone is still too large. The script's 503 goes to the first post under the limit, [0,1].
    sizes = [10_000] * 5 + [30_000] + [10_000] * 2
    with FakeIngest(max_bytes=25_000) as fake:
        fake.push(Step(503))
        with RagpulseClient(fake.url, batch_size=8, flush_interval_ms=20, **FAST) as client:
            ids = [client.log_trace(trace(i), answer="x" * size) for i, size in enumerate(sizes)]
            assert client.flush(timeout=10)
            stats = client.stats()
    posts = [(a.trace_ids, a.status) for a in fake.attempts]
    assert posts == [(ids, 413), (ids[:4], 413), (ids[:2], 503), (ids[:2], 202), (ids[2:4], 202), (ids[4:], 413),
                     (ids[4:6], 413), ([ids[4]], 202), ([ids[5]], 413), (ids[6:], 202)]
    assert fake.delivered() == ids[:5] + ids[6:]
    assert (stats.sent, stats.dropped, stats.dropped_by, stats.rejected, stats.failed, stats.queued) == (
        7, 1, {"too_large": 1}, 0, 0, 0)
    assert "trace t-5 dropped: the service refuses it as too large even alone" in caplog.text
    assert "the limit is 25000" in caplog.text                                  # the service's reason
    keys = [a.idempotency_key for a in fake.attempts]
    assert keys[2] == keys[3] and len(set(keys)) == len(keys) - 1               # a key per half, kept on its retry


def test_close_delivers_what_is_queued_is_idempotent_and_later_traces_are_dropped() -> None:
    with FakeIngest() as fake:
        client = RagpulseClient(fake.url, batch_size=100, flush_interval_ms=60_000)
        ids = [client.log_trace(trace(i)) for i in range(7)]
        assert client.close(timeout=10) and client.close(timeout=10)
        client.log_trace(trace(99))
        assert fake.delivered() == ids and client.stats().sent == 7 and client.dropped == 1


def test_close_gives_up_after_its_timeout_and_counts_the_rest_as_failed_not_queued() -> None:
    with FakeIngest(Step(stall=1.0)) as fake:
        client = RagpulseClient(fake.url, batch_size=2, flush_interval_ms=10)
        for i in range(6):
            client.log_trace(trace(i))
        assert client.close(timeout=0.3) is False
        stats = client.stats()
        assert (stats.queued, stats.failed, stats.sent) == (0, 6, 0)   # the batch on the wire too: none left queued


def test_close_keeps_its_word_against_a_service_that_never_answers(caplog) -> None:
    # The probe's case: every post hangs (here 3 s, far beyond close's 0.5 s and short of the client's 30 s timeout).
    # close() used to wait for the post on the wire and then up to 1 s more for the thread, leaving its traces
    # "queued". The bound below is the timeout plus slack for a loaded machine, well short of the old 1.5 s.
    with FakeIngest(Step(stall=3.0)) as fake:
        client = RagpulseClient(fake.url, batch_size=100, flush_interval_ms=10, timeout=30.0)
        ids = [client.log_trace(trace(i)) for i in range(150)]
        deadline = time.monotonic() + 5
        while not fake.attempts and time.monotonic() < deadline:   # the first 100 are on the wire
            time.sleep(0.01)
        start = time.monotonic()
        assert client.close(timeout=0.5) is False
        took = time.monotonic() - start
        stats = client.stats()
        assert took < 1.2, f"close(0.5) took {took:.2f} s"
        assert (stats.queued, stats.failed, stats.sent) == (0, 150, 0)
        assert "150 traces not delivered" in caplog.text and ids[100] in caplog.text
        client._thread.join(timeout=10)                    # the hung post ends (202), its batch is not counted again
        assert not client._thread.is_alive() and client.stats() == stats
    assert fake.delivered() == ids[:100]                   # (delivered after all: at least once, never twice)


def test_an_unused_client_is_collected_and_its_thread_ends() -> None:
    import gc  # noqa: PLC0415
    import weakref  # noqa: PLC0415
    with FakeIngest() as fake:
        client = RagpulseClient(fake.url, flush_interval_ms=10)
        client.log_trace(trace(0))
        thread, ref = client._thread, weakref.ref(client)
        del client
        gc.collect()
        assert ref() is None
        thread.join(timeout=5)
        assert not thread.is_alive() and fake.delivered() == ["t-0"]


def test_submit_batch_retries_a_503_under_one_idempotency_key() -> None:
    with FakeIngest(Step(202, body={"job_id": "job-1"})) as fake:
        fake.push(Step(503))
        with RagpulseClient(fake.url, **FAST) as client:
            assert client.submit_batch([trace(0)], k=[1]) == "job-1"
            assert client.submit_batch([trace(1)], k=[1]) == "job-1"
    assert [(a.path, a.status) for a in fake.attempts] == [("/v1/batches", 503), ("/v1/batches", 202), ("/v1/batches", 202)]
    first, retry, second = (a.idempotency_key for a in fake.attempts)
    assert first == retry and second not in (None, first)     # the retry is the same post; the next one is not


# -- against the real service --------------------------------------------------------------------------------------


@pytest.mark.integration
def test_logged_traces_read_back_from_the_real_service(stack) -> None:
    tag = uuid.uuid4().hex[:8]
    with RagpulseClient(stack.url, flush_interval_ms=50) as client:
        ids = [client.log_trace(trace(i, tag), retrieved_docs=[{"id": "d", "text": f"Fact {i}."}],
                                latency_ms={"total": 120.0}, usage={"prompt_tokens": 50}) for i in range(3)]
        assert client.flush(timeout=30) and client.stats().sent == 3
        deadline = time.monotonic() + 60
        while (record := client.trace(ids[0]))["status"] == "pending" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert record["trace_id"] == ids[0] and record["status"] == "done" and record["sampled"] is True
        with pytest.raises(RagpulseSDKError) as missing:
            client.trace(f"{tag}-never-logged")
        assert missing.value.status == 404 and isinstance(missing.value, ClientError)


@pytest.mark.integration
def test_a_413_from_the_real_service_splits_the_post_and_drops_only_the_trace_too_large_alone(api_factory) -> None:
    tag = uuid.uuid4().hex[:8]
    url = api_factory({"RAGPULSE_MAX_BODY_BYTES": str(64 * 1024)})
    sizes = [20_000] * 6 + [100_000] + [20_000] * 3                  # 300 KB in one post; one trace over 64 KiB
    with RagpulseClient(url, batch_size=10, flush_interval_ms=20) as client:
        ids = [client.log_trace(trace(i, tag), answer="x" * size) for i, size in enumerate(sizes)]
        assert client.flush(timeout=60)
        stats = client.stats()
        assert (stats.sent, stats.dropped_by, stats.rejected, stats.failed) == (9, {"too_large": 1}, 0, 0)
        assert client.trace(ids[9])["trace_id"] == ids[9]
        with pytest.raises(RagpulseSDKError) as missing:
            client.trace(ids[6])
        assert missing.value.status == 404


@pytest.mark.integration
def test_batch_helpers_round_trip_against_the_real_service(stack) -> None:
    with RagpulseClient(stack.url) as client:
        base = client.submit_batch(faithful_traces(12), judge="local", k=[1, 5], run="base")
        cand = client.submit_batch(dropped_for_a_third(faithful_traces(12)), judge="local", k=[1, 5], run="cand")
        assert client.wait(base, timeout=120, poll=0.2)["status"] == "finished"
        assert client.wait(cand, timeout=120, poll=0.2)["status"] == "finished"
        assert [r["trace_id"] for r in client.results(base)] == [f"q{i}" for i in range(12)]
        assert client.report(base)["run"] == "base"
        compared = client.compare(cand, base, threshold=0.3)
        assert "recall@5" in compared["significant_regressions"] or compared["regressions_total"] > 0
        with pytest.raises(RagpulseSDKError) as bad:
            client.submit_batch([{"answer": "no query"}])
        assert bad.value.status == 422 and any(e["path"].startswith("$.traces[0]") for e in bad.value.errors)


@pytest.mark.integration
def test_the_example_app_logs_its_answers(stack) -> None:
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "examples" / "sdk_app.py"), "--server", stack.url],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    assert "Stats(queued=0, sent=5, dropped=0, rejected=0, failed=0" in out.stdout


@pytest.mark.integration
@pytest.mark.parametrize("app", ["sdk_app.py", "otel_app.py"])
def test_the_example_apps_find_the_server_by_ragpulse_port(stack, app: str) -> None:
    """`./scripts/run --port N` sets RAGPULSE_PORT; the example apps default their --server to it (otel_app.py
    did not, and sent to :8080 whatever the port)."""
    root = Path(__file__).resolve().parent.parent
    port = str(urlsplit(stack.url).port)
    out = subprocess.run([sys.executable, str(root / "examples" / app)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(root), "RAGPULSE_PORT": port})
    assert out.returncode == 0, out.stderr
    if app == "sdk_app.py":
        assert "sent=5, dropped=0, rejected=0, failed=0" in out.stdout
        return
    trace_ids = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    assert len(trace_ids) == 2
    with httpx.Client(base_url=stack.url, timeout=10) as http:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(http.get(f"/v1/traces/{t}").status_code == 200 for t in trace_ids):
                break
            time.sleep(0.5)
        assert all(http.get(f"/v1/traces/{t}").status_code == 200 for t in trace_ids), trace_ids


@pytest.mark.parametrize(("typed", "struct"), [
    ("Job", "ragpulse.model.results:JobView"), ("TraceRecord", "ragpulse.store.online_records:OnlineTrace"),
    ("Session", "ragpulse.store.sessions:SessionView"), ("SessionTurn", "ragpulse.store.sessions:SessionTurnView"),
    ("Report", "ragpulse.reporting.report:Report"), ("Comparison", "ragpulse.model.compare:Comparison"),
])
def test_the_helpers_types_name_exactly_the_services_fields(typed: str, struct: str) -> None:
    import importlib
    import typing

    import msgspec

    from ragpulse.sdk import types

    module, name = struct.split(":")
    fields = {f.encode_name for f in msgspec.structs.fields(getattr(importlib.import_module(module), name))}
    assert set(typing.get_type_hints(getattr(types, typed))) == fields
