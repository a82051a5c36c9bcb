"""The security checks grow linearly with hostile input, and stop at their deadline: growth is measured as a ratio
of times (1 MiB / 128 KiB, linear is 8), never as a wall-clock bound; the inputs are bench/security_growth.py's."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable

import msgspec
import pytest

from bench.security_growth import LARGE, SMALL, answer, document, injection_document, password_table
from ragpulse.model.results import Security
from ragpulse.model.trace import Trace
from ragpulse.monitoring import catalog
from ragpulse.monitoring.counters import MetricsBatch, field
from ragpulse.monitoring.recorder import count_security
from ragpulse.security.credentials import MAX_VALUES, credential_scan
from ragpulse.security.deadline import CLOCK_EVERY, Deadline
from ragpulse.security.injection import injection_scan
from ragpulse.security.pii import pii_scan
from ragpulse.security.trace import TIME_BUDGET, check_trace

MAX_GROWTH = 10
"""Time at 1 MiB over time at 128 KiB: 8 when linear (64 when quadratic), with room for a loaded machine."""
NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def _least(work: Callable[[], object], reps: int = 2) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _growth(make: Callable[[int], Callable[[], object]]) -> float:
    small, large = make(SMALL), make(LARGE)
    small()  # warm: compiled patterns, caches
    return _least(large) / _least(small)


@pytest.fixture(scope="module")
def megabyte_document() -> list[str]:
    return [document(LARGE)]


@pytest.mark.parametrize("shape", ["phones", "emails", "cards", "ibans"])
@pytest.mark.parametrize("distinct", [True, False], ids=["distinct", "repeated"])
def test_pii_grows_linearly_in_the_answer(shape: str, distinct: bool, megabyte_document: list[str]) -> None:
    def make(size: int) -> Callable[[], object]:
        text = answer(shape, size, distinct)
        return lambda: pii_scan(text, megabyte_document)

    assert pii_scan(answer(shape, 2_000, distinct), []).found, shape  # the shape is found: the check did its work
    assert _growth(make) <= MAX_GROWTH


def test_a_password_table_beside_a_megabyte_document_grows_linearly(megabyte_document: list[str]) -> None:
    def make(size: int) -> Callable[[], object]:
        table = password_table(size)
        return lambda: credential_scan(table, megabyte_document)

    assert credential_scan(password_table(SMALL), []).found == {"password": MAX_VALUES}  # the table path is capped
    assert _growth(make) <= MAX_GROWTH


def test_the_injection_scan_of_a_large_document_grows_linearly() -> None:
    def make(size: int) -> Callable[[], object]:
        doc = injection_document(size)
        return lambda: injection_scan(doc)

    assert injection_scan(injection_document(2_000)).found == []   # every cue quoted: read, and not a finding
    assert _growth(make) <= MAX_GROWTH


# -- the deadline -------------------------------------------------------------------------------------------------

def test_a_deadline_reads_the_clock_every_so_many_asks() -> None:
    deadline = Deadline(0.0)
    time.sleep(0.001)
    assert not any(deadline.passed() for _ in range(CLOCK_EVERY - 1))
    assert deadline.passed() and deadline.expired and deadline.passed()
    assert not any(Deadline().passed() for _ in range(10 * CLOCK_EVERY))


@pytest.mark.parametrize("scan", [
    lambda deadline: pii_scan(answer("phones", SMALL, False), [], deadline),
    lambda deadline: credential_scan(password_table(SMALL), [], deadline),
    lambda deadline: injection_scan(injection_document(SMALL), deadline),
], ids=["pii", "credentials", "injection"])
def test_a_check_past_its_deadline_stops_and_says_so(scan: Callable[[Deadline], object]) -> None:
    assert scan(Deadline(0.0)).timed_out is True   # type: ignore[attr-defined]
    assert scan(Deadline(60.0)).timed_out is False  # type: ignore[attr-defined]


def _hostile(answer_text: str, doc: str) -> Trace:
    return msgspec.convert({"trace_id": "t", "query": "q", "answer": answer_text,
                            "retrieved_docs": [{"id": "d", "text": doc}]}, Trace)


def test_check_trace_records_checks_cut_short_as_skipped_never_as_passed() -> None:
    trace = _hostile(answer("phones", SMALL, False), injection_document(SMALL))
    done = check_trace(trace, NOW, None, budget_seconds=60.0)
    assert done.skipped == {} and done.pii == {"phone": 50}
    cut = check_trace(trace, NOW, None, budget_seconds=0.0)
    assert cut.skipped == {"injection": TIME_BUDGET, "pii": TIME_BUDGET, "credentials": TIME_BUDGET}
    assert cut.pii_checked and cut.credentials_checked and cut.injection_checked
    assert msgspec.json.decode(msgspec.json.encode(cut), type=Security).skipped == cut.skipped  # in the JSON


def test_a_skipped_check_is_counted() -> None:
    batch = MetricsBatch({"a"}, {"t1"})
    labels = {"tenant": "t1", "app": "a", "environment": "production"}
    count_security(batch, labels, Security(pii_checked=True, skipped={"pii": TIME_BUDGET}), "none")
    wanted = field(catalog.SECURITY_SKIPPED.name, "total", {**labels, "check": "pii", "reason": TIME_BUDGET})
    assert catalog.SECURITY_SKIPPED in catalog.ALL and batch.pending[wanted] == 1


# -- one tenant's hostile answer does not stall another's traces (real Redis, API and worker) ---------------------

HOSTILE_PHONES = " ".join(f"+44 20 7946 {i % 10000:04d}" for i in range(25000))
"""453 KB of phone numbers: the answer a probe posted twice as one tenant to stall the other's traces."""
STALL_BOUND_SECONDS = 30.0
"""Generous: the time budget (2 s a trace) plus a loaded 2-core machine's slack."""


@pytest.mark.integration
def test_a_hostile_tenant_does_not_stall_another_tenants_traces(redis_url: str, tmp_path) -> None:
    import httpx  # noqa: PLC0415

    from tests.support import start_api, start_worker  # noqa: PLC0415
    from tests.test_online import wait_until  # noqa: PLC0415

    run = uuid.uuid4().hex[:8]
    tenants = {f"t1-{run}": f"key-1-{run}", f"t2-{run}": f"key-2-{run}"}
    env = {"RAGPULSE_QUEUE": f"stall-{run}", "RAGPULSE_APPS": "shop", "RAGPULSE_JUDGE": "none",
           "RAGPULSE_API_KEYS": ",".join(f"{tenant}:{key}" for tenant, key in tenants.items())}
    url, api = start_api(redis_url, tmp_path, env)
    worker = start_worker(redis_url, tmp_path, env)
    t1, t2 = (httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
              for key in tenants.values())
    try:
        for client in (t1, t2):
            assert client.put("/v1/apps/shop/policy", json={"sample_rate": 1.0}).status_code == 200
        hostile = [{"trace_id": f"hostile-{n}", "app": "shop", "query": "Who can I call?", "answer": HOSTILE_PHONES,
                    "retrieved_docs": [{"id": "d", "text": "Call the front desk."}]} for n in range(2)]
        for trace in hostile:
            assert t1.post("/v1/traces", json={"traces": [trace]}).status_code == 202
        posted = time.monotonic()
        quiet = {"trace_id": "quiet", "app": "shop", "query": "When do refunds arrive?",
                 "answer": "Refunds arrive within 14 days.", "retrieved_docs": [{"id": "r", "text": "Refunds: 14 days."}]}
        assert t2.post("/v1/traces", json={"traces": [quiet]}).status_code == 202

        def done(client: httpx.Client, trace_id: str) -> bool:
            return client.get(f"/v1/traces/{trace_id}").json().get("status") == "done"

        wait_until(lambda: done(t2, "quiet"), timeout=STALL_BOUND_SECONDS, what="the quiet tenant's trace processed")
        waited = time.monotonic() - posted
        wait_until(lambda: all(done(t1, t["trace_id"]) for t in hostile), timeout=120, what="the hostile traces")
        quiet_at = t2.get("/v1/traces/quiet").json()["processed_at"]
        records = [t1.get(f"/v1/traces/{t['trace_id']}").json() for t in hostile]
        assert waited < STALL_BOUND_SECONDS
        assert quiet_at <= max(r["processed_at"] for r in records)   # not queued behind both hostile traces
        for record in records:   # the hostile answer is checked (or recorded as cut short), never silently passed
            security = record["result"]["security"]
            assert security["pii"].get("phone") or security["skipped"].get("pii") == TIME_BUDGET, security
    finally:
        t1.close()
        t2.close()
        worker.stop()
        api.stop()
