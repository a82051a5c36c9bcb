"""The Redis store: jobs, their traces (msgpack, never pickle), per-trace results and reports."""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence

import msgspec
import redis

from ragpulse import keys
from ragpulse.exceptions import InvalidParameter, JobNotFound
from ragpulse.jobs import DataWarning, JobView, Progress, ResultsPage, TraceResult
from ragpulse.schema import BatchOptions, Trace

_trace_encoder = msgspec.msgpack.Encoder()
_chunk_decoder = msgspec.msgpack.Decoder(list[Trace])
_result_decoder = msgspec.msgpack.Decoder(TraceResult)
_warnings_decoder = msgspec.json.Decoder(list[DataWarning])
_options_decoder = msgspec.json.Decoder(BatchOptions)
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")

# Counts a chunk's results exactly once, however often the chunk is re-run, and tells the caller whether it
# completed the job. KEYS: job hash, chunks-done set. ARGV: chunk index, done, failed, ttl seconds.
_RECORD_CHUNK = """
local added = redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[4])
if added == 0 then return -1 end
redis.call('HINCRBY', KEYS[1], 'done', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'failed', ARGV[3])
local finished = redis.call('HINCRBY', KEYS[1], 'chunks_done', 1)
if finished == tonumber(redis.call('HGET', KEYS[1], 'n_chunks')) then return 1 end
return 0
"""


def utcnow() -> str:
    """Current UTC time in RFC 3339, as every timestamp ragpulse stores."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def chunked(items: Sequence[Trace], size: int) -> list[Sequence[Trace]]:
    """Split traces into consecutive chunks of at most `size`."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class Store:
    """Job state in Redis; every key it writes carries the job's TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._record_chunk = client.register_script(_RECORD_CHUNK)

    def stage_job(
        self, pipe: redis.client.Pipeline, job_id: str, tenant: str, traces: Sequence[Trace],
        options: BatchOptions, warnings: list[DataWarning], chunk_size: int,
    ) -> int:
        """Queue the writes that create a job onto `pipe`; returns the number of chunks."""
        chunks = chunked(traces, chunk_size)
        pipe.hset(keys.job(job_id), mapping={
            "tenant": tenant, "status": "queued", "created_at": utcnow(),
            "total": len(traces), "done": 0, "failed": 0, "n_chunks": len(chunks), "chunks_done": 0, "chunk_size": chunk_size,
            "options": msgspec.json.encode(options), "warnings": msgspec.json.encode(warnings),
        })
        for n, chunk in enumerate(chunks):
            pipe.set(keys.job_chunk(job_id, n), _trace_encoder.encode(chunk), ex=self.ttl)
        pipe.expire(keys.job(job_id), self.ttl)
        return len(chunks)

    def job(self, job_id: str, tenant: str | None = None) -> JobView:
        """The job as clients see it; JobNotFound when absent or owned by another tenant."""
        fields = self._fields(job_id, tenant)
        return JobView(
            job_id=job_id, status=fields["status"],
            progress=Progress(total=int(fields["total"]), done=int(fields["done"]), failed=int(fields["failed"])),
            created_at=fields["created_at"], started_at=fields.get("started_at"),
            finished_at=fields.get("finished_at"), error=fields.get("error"),
            warnings=_warnings_decoder.decode(fields["warnings"]),
        )

    def options(self, job_id: str) -> BatchOptions:
        """The evaluation options the batch was posted with."""
        return _options_decoder.decode(self._fields(job_id)["options"])

    def chunk_offset(self, job_id: str, chunk: int) -> int:
        """Index, within the batch, of the first trace of `chunk`."""
        return chunk * int(self._fields(job_id)["chunk_size"])

    def load_chunk(self, job_id: str, chunk: int) -> list[Trace]:
        """The traces of one chunk."""
        raw = self.redis.get(keys.job_chunk(job_id, chunk))
        if raw is None:
            raise JobNotFound(job_id)
        return _chunk_decoder.decode(raw)

    def mark_running(self, job_id: str) -> None:
        """Record that a worker started on the job (only the first call changes anything)."""
        if self.redis.hsetnx(keys.job(job_id), "started_at", utcnow()):
            self.redis.hset(keys.job(job_id), "status", "running")

    def record_chunk(self, job_id: str, chunk: int, results: Sequence[TraceResult]) -> bool:
        """Store a chunk's results idempotently; True when this call completed the job's last chunk."""
        if results:
            with self.redis.pipeline() as pipe:
                pipe.hset(keys.job_results(job_id), mapping={str(r.index): _trace_encoder.encode(r) for r in results})
                pipe.expire(keys.job_results(job_id), self.ttl)
                pipe.execute()
        failed = sum(1 for r in results if r.status != "ok")
        outcome = self._record_chunk(keys=[keys.job(job_id), keys.job_chunks_done(job_id)],
                                     args=[chunk, len(results) - failed, failed, self.ttl])
        return outcome == 1

    def finish(self, job_id: str, status: str, error: str | None = None) -> None:
        """Move the job to a terminal status."""
        mapping = {"status": status, "finished_at": utcnow()}
        if error:
            mapping["error"] = error
        self.redis.hset(keys.job(job_id), mapping=mapping)

    def all_results(self, job_id: str) -> list[TraceResult]:
        """Every stored result of the job, in trace order."""
        raw = self.redis.hgetall(keys.job_results(job_id))
        results = [_result_decoder.decode(v) for v in raw.values()]
        return sorted(results, key=lambda r: r.index)

    def results_page(self, job_id: str, tenant: str, cursor: str | None, limit: int) -> ResultsPage:
        """Results in trace order from `cursor`; the cursor is the next trace index, opaque to clients."""
        total = int(self._fields(job_id, tenant)["total"])
        start = _parse_cursor(cursor)
        indexes = list(range(start, min(start + limit, total)))
        raw = self.redis.hmget(keys.job_results(job_id), [str(i) for i in indexes]) if indexes else []
        items = [_result_decoder.decode(v) for v in raw if v is not None]
        end = start + len(indexes)
        return ResultsPage(items=items, next_cursor=str(end) if end < total else None)

    def save_report(self, job_id: str, report: bytes) -> None:
        """Store the job's JSON report."""
        self.redis.set(keys.job_report(job_id), report, ex=self.ttl)

    def report(self, job_id: str, tenant: str) -> bytes | None:
        """The job's JSON report, or None while it is not built yet."""
        self._fields(job_id, tenant)
        return self.redis.get(keys.job_report(job_id))

    def save_calibration(self, job_id: str, calibration: bytes) -> None:
        """Store the job's calibration, replacing an earlier one."""
        self.redis.set(keys.job_calibration(job_id), calibration, ex=self.ttl)

    def calibration(self, job_id: str) -> bytes | None:
        """The job's stored calibration JSON, if any."""
        return self.redis.get(keys.job_calibration(job_id))

    def _fields(self, job_id: str, tenant: str | None = None) -> dict[str, str]:
        if not _JOB_ID.match(job_id):
            raise JobNotFound(job_id)
        raw = self.redis.hgetall(keys.job(job_id))
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            raise JobNotFound(job_id)
        return fields


def _parse_cursor(cursor: str | None) -> int:
    if cursor in (None, ""):
        return 0
    if not cursor.isdigit() or len(cursor) > 12:
        raise InvalidParameter("cursor is not one this API issued",
                               [{"path": "query.cursor", "message": "pass back next_cursor unchanged"}])
    return int(cursor)

