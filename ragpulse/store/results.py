"""Per-trace results (msgpack, written idempotently), the failed and skipped index sets, the report and the
calibration of a job."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator, Sequence

import msgspec
import redis

from ragpulse.config import keys
from ragpulse.exceptions import InvalidParameter
from ragpulse.model.results import ResultsPage, TraceResult
from ragpulse.store import scripts
from ragpulse.store.atomic import Group, MergedWrites, Writes, WriteQueue, pack_group

_encoder = msgspec.msgpack.Encoder()
_result_decoder = msgspec.msgpack.Decoder(TraceResult)
TERMINAL_RESULT = {"ok": None, "skipped_budget": "skipped"}
"""Result status -> the index set it belongs to (None: neither failed nor skipped)."""
Counting = Callable[[WriteQueue], None]
"""Queues the writes that count one newly stored result (monitoring.recorder.queue_result_counts)."""


class Results:
    """A job's results, report and calibration; every key written carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._record = client.register_script(scripts.RECORD_RESULT)

    def stored_indexes(self, job_id: str, indexes: Iterable[int]) -> set[int]:
        """Which of these traces already have a result (a re-run chunk skips them)."""
        wanted = list(indexes)
        if not wanted:
            return set()
        present = self.redis.hmget(keys.job_results(job_id), [str(i) for i in wanted])
        return {i for i, raw in zip(wanted, present) if raw is not None}

    def record(self, job_id: str, result: TraceResult, counting: Counting | None = None) -> bool:
        """Store one trace's result idempotently, filed under failed or skipped as its status says.

        True when no result was stored for this trace before. `counting` queues the writes that count a new
        result (metric increments) onto a pipeline; they are applied atomically with the store, and only when the
        result is new, so each trace is counted exactly once even when a retried call runs twice.
        """
        keys_, args = self.record_script_call(job_id, result, counting)
        return bool(self._record(keys=keys_, args=args))

    def record_script_call(self, job_id: str, result: TraceResult,
                           counting: Counting | None = None) -> tuple[list[str], list[object]]:
        """The KEYS and ARGV of the RECORD_RESULT call that `record` makes (an asyncio client makes the same call):
        `counting`'s writes are recorded (atomic.Writes), then packed into one argument."""
        writes = Writes()
        if counting is not None:
            counting(writes)
        return _record_keys(job_id, writes.group), [
            str(result.index), _encoder.encode(result), self.ttl, _bucket(result), pack_group(writes.group)]

    def record_group_script_call(self, job_id: str, recorded: Sequence[tuple[TraceResult, Counting | None]],
                                 ) -> tuple[list[str], list[object]]:
        """The KEYS and ARGV of a RECORD_RESULTS call storing these results (distinct traces) and applying their
        counting writes merged (atomic.MergedWrites), for when none is stored yet."""
        writes, args = MergedWrites(), []
        for result, counting in recorded:
            if counting is not None:
                counting(writes)
            args += [str(result.index), _encoder.encode(result), _bucket(result)]
        group = writes.merged()
        return _record_keys(job_id, group), [self.ttl, pack_group(group), *args]

    def counts(self, job_id: str) -> tuple[int, int, int]:
        """(stored, failed, skipped) result counts."""
        return self.counts_many([job_id])[0]

    def counts_many(self, job_ids: list[str]) -> list[tuple[int, int, int]]:
        """(stored, failed, skipped) result counts of each job, in one round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hlen(keys.job_results(job_id))
                pipe.scard(keys.job_failed(job_id))
                pipe.scard(keys.job_skipped(job_id))
            flat = pipe.execute()
        return [(flat[i], flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)]

    def any(self, job_id: str) -> TraceResult | None:
        """One stored result of the job (no order promised), None without any: what a job's app is read from."""
        _cursor, fields = self.redis.hscan(keys.job_results(job_id), 0, count=1)
        return _result_decoder.decode(next(iter(fields.values()))) if fields else None

    def all(self, job_id: str) -> list[TraceResult]:
        """Every stored result of the job, in trace order."""
        raw = self.redis.hgetall(keys.job_results(job_id))
        with collection_paused():
            return sorted((_result_decoder.decode(v) for v in raw.values()), key=lambda r: r.index)

    def of_trace(self, job_id: str, trace_id: str) -> TraceResult | None:
        """The stored result of the job's trace with this id (its first, by trace order, when the id repeats), or
        None. Reads the results a page at a time and decodes only those whose bytes hold the id (msgpack stores a
        string as it is), never the whole job at once."""
        needle = _encoder.encode(trace_id)
        found = [_result_decoder.decode(raw) for _, raw in self.redis.hscan_iter(keys.job_results(job_id), count=500)
                 if needle in raw]
        matches = [r for r in found if r.trace_id == trace_id]
        return min(matches, key=lambda r: r.index) if matches else None

    def page(self, job_id: str, total: int, cursor: str | None, limit: int) -> ResultsPage:
        """Results in trace order from `cursor`; the cursor is the next trace index, opaque to clients."""
        start = _parse_cursor(cursor)
        indexes = list(range(start, min(start + limit, total)))
        raw = self.redis.hmget(keys.job_results(job_id), [str(i) for i in indexes]) if indexes else []
        missing = [str(i) for i, v in zip(indexes, raw) if v is None]
        if missing:  # a trace waiting on a provider batch shows its interim result meanwhile
            interim = dict(zip(missing, self.redis.hmget(keys.job_awaiting(job_id), missing)))
            raw = [v if v is not None else interim[str(i)] for i, v in zip(indexes, raw)]
        items = [_result_decoder.decode(v) for v in raw if v is not None]
        end = start + len(indexes)
        return ResultsPage(items=items, next_cursor=str(end) if end < total else None)

    def store_awaiting(self, job_id: str, results: Sequence[TraceResult]) -> None:
        """Keep the interim results (retrieval metrics and checks) of traces whose judge request waits on a provider
        batch; a trace's final result, once stored, takes their place."""
        if results:
            with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(keys.job_awaiting(job_id), mapping={str(r.index): _encoder.encode(r) for r in results})
                pipe.expire(keys.job_awaiting(job_id), self.ttl)
                pipe.execute()

    def drop_awaiting(self, job_id: str, indexes: Iterable[int]) -> None:
        """Forget the interim results of these traces (their final results are stored)."""
        fields = [str(i) for i in indexes]
        if fields:
            self.redis.hdel(keys.job_awaiting(job_id), *fields)

    def awaiting(self, job_id: str) -> int:
        """How many interim results wait on a provider batch."""
        return self.redis.hlen(keys.job_awaiting(job_id))

    def unfinished_indexes(self, job_id: str) -> list[int]:
        """Indexes of the traces that failed or were skipped."""
        return sorted(int(i) for i in self.redis.sunion(keys.job_failed(job_id), keys.job_skipped(job_id)))

    def forget(self, pipe: redis.client.Pipeline, job_id: str, indexes: Sequence[int]) -> None:
        """Queue the writes dropping these results, the failed and skipped sets and the report onto `pipe`."""
        pipe.hdel(keys.job_results(job_id), *[str(i) for i in indexes])
        pipe.delete(keys.job_failed(job_id), keys.job_skipped(job_id), keys.job_report(job_id))

    def save_report(self, job_id: str, report: bytes) -> None:
        """Store the job's JSON report."""
        self.redis.set(keys.job_report(job_id), report, ex=self.ttl)

    def report(self, job_id: str) -> bytes | None:
        """The job's JSON report, or None while it is not built yet."""
        return self.redis.get(keys.job_report(job_id))

    def save_calibration(self, job_id: str, calibration: bytes) -> None:
        """Store the job's calibration, replacing an earlier one."""
        self.redis.set(keys.job_calibration(job_id), calibration, ex=self.ttl)

    def calibration(self, job_id: str) -> bytes | None:
        """The job's stored calibration JSON, if any."""
        return self.redis.get(keys.job_calibration(job_id))


def _parse_cursor(cursor: str | None) -> int:
    if cursor in (None, ""):
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 12:   # str.isdigit() takes "²", "①", "٣", "１"
        raise InvalidParameter("cursor is not one this API issued",
                               [{"path": "query.cursor", "message": "pass back next_cursor unchanged"}])
    return int(cursor)


def _bucket(result: TraceResult) -> str:
    """The index set a result is filed under: 'failed', 'skipped' or '' (neither)."""
    return TERMINAL_RESULT.get(result.status, "failed") or ""


def _record_keys(job_id: str, counting: Group) -> list[str]:
    """KEYS of RECORD_RESULT(S): the results hash, the failed and skipped sets, then every key the counting writes
    touch (each names its key first)."""
    touched = dict.fromkeys(str(command[1]) for command in counting)
    return [keys.job_results(job_id), keys.job_failed(job_id), keys.job_skipped(job_id), *touched]


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while many results are decoded and kept: each decoded result adds
    ~100 tracked objects, and the collections they set off scanned every result decoded before (issue 28: 10,000
    results 0.88 s with it on, 0.16 s paused). Decoding makes no reference cycles, so nothing is left to collect."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
