"""The Redis store: jobs, their traces (msgpack, never pickle), per-trace results, reports and spend."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Iterable, Sequence

import msgspec
import redis

from ragpulse import keys
from ragpulse.exceptions import InvalidParameter, JobNotFound
from ragpulse.jobs import CallbackState, JobView, Progress, ResultsPage, Spend, TraceResult
from ragpulse.schema import BatchOptions, Trace

_encoder = msgspec.msgpack.Encoder()
_chunk_decoder = msgspec.msgpack.Decoder(list[Trace])
_result_decoder = msgspec.msgpack.Decoder(TraceResult)
_options_decoder = msgspec.json.Decoder(BatchOptions)
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
TERMINAL_RESULT = {"ok": None, "skipped_budget": "skipped"}
"""Result status -> the index set it belongs to (None: neither failed nor skipped)."""

# Mark a chunk done; return 1 to exactly one caller when that completes the job's current attempt.
# KEYS: job hash, chunks-done set, chunk states, lease. ARGV: chunk, ttl, now.
_COMPLETE_CHUNK = """
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], 'done')
redis.call('DEL', KEYS[4])
if redis.call('SCARD', KEYS[2]) < tonumber(redis.call('HGET', KEYS[1], 'n_chunks')) then return 0 end
local attempt = redis.call('HGET', KEYS[1], 'attempt') or '0'
return redis.call('HSETNX', KEYS[1], 'finalizing:' .. attempt, ARGV[3])
"""

# Claim a chunk whose worker died: started, lease gone, not done. KEYS: chunk states, lease. ARGV: chunk.
_CLAIM_STALE = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= 'started' then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], 'requeued')
return 1
"""


# queued -> running, and nothing else (a failed or finished job keeps its status). KEYS: job hash.
_MARK_RUNNING = """
if redis.call('HGET', KEYS[1], 'status') == 'queued' then redis.call('HSET', KEYS[1], 'status', 'running') end
"""


def utcnow() -> str:
    """Current UTC time in RFC 3339, as every timestamp ragpulse stores."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utcday() -> str:
    """Current UTC day, YYYYMMDD, the unit of tenant budgets."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%d")


def chunked(items: Sequence[Trace], size: int) -> list[Sequence[Trace]]:
    """Split traces into consecutive chunks of at most `size`."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class Store:
    """Job state in Redis; every key it writes carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._complete_chunk = client.register_script(_COMPLETE_CHUNK)
        self._claim_stale = client.register_script(_CLAIM_STALE)
        self._mark_running = client.register_script(_MARK_RUNNING)

    # --- creating and reading jobs -------------------------------------------------------------------------

    def stage_job(self, pipe: redis.client.Pipeline, job_id: str, tenant: str, traces: Sequence[Trace],
                  options: BatchOptions, warnings: list, chunk_size: int, queue: str, rq_queue: str) -> int:
        """Queue the writes that create a job onto `pipe`; returns the number of chunks."""
        chunks = chunked(traces, chunk_size)
        pipe.hset(keys.job(job_id), mapping={
            "tenant": tenant, "status": "queued", "created_at": utcnow(), "queue": queue, "rq_queue": rq_queue,
            "attempt": 0,
            "total": len(traces), "n_chunks": len(chunks), "chunk_size": chunk_size,
            "options": msgspec.json.encode(options), "warnings": msgspec.json.encode(warnings),
        })
        for n, chunk in enumerate(chunks):
            pipe.set(keys.job_chunk(job_id, n), _encoder.encode(chunk), ex=self.ttl)
        pipe.hset(keys.job_chunk_states(job_id), mapping=dict.fromkeys(range(len(chunks)), "queued"))
        pipe.zadd(keys.active_jobs(), {job_id: time.time()})
        for key in (keys.job(job_id), keys.job_chunk_states(job_id), keys.active_jobs()):
            pipe.expire(key, self.ttl)
        return len(chunks)

    def job(self, job_id: str, tenant: str | None = None) -> JobView:
        """The job as clients see it; JobNotFound when absent or owned by another tenant."""
        fields = self._fields(job_id, tenant)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hlen(keys.job_results(job_id))
            pipe.scard(keys.job_failed(job_id))
            pipe.scard(keys.job_skipped(job_id))
            stored, failed, skipped = pipe.execute()
        return JobView(
            job_id=job_id, status=fields["status"], queue=fields.get("queue", "batch"),
            progress=Progress(total=int(fields["total"]), done=stored - failed - skipped, failed=failed,
                              skipped=skipped),
            created_at=fields["created_at"], started_at=fields.get("started_at"),
            finished_at=fields.get("finished_at"), error=fields.get("error"),
            warnings=msgspec.json.decode(fields["warnings"]), spend=_spend(fields), callback=_callback(fields),
        )

    def failure(self, job_id: str) -> str | None:
        """The job's error when it has failed, else None (one cheap read, checked before every trace)."""
        status, error = self.redis.hmget(keys.job(job_id), ["status", "error"])
        return (error or b"failed").decode() if status == b"failed" else None

    def rq_queue(self, job_id: str) -> str:
        """Name of the RQ queue the job's chunks were enqueued on (requeues and callbacks go there too)."""
        return self._fields(job_id)["rq_queue"]

    def tenant_of(self, job_id: str) -> str:
        """The tenant owning the job."""
        return self._fields(job_id)["tenant"]

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

    # --- running chunks -------------------------------------------------------------------------------------

    def start_chunk(self, job_id: str, chunk: int, lease_seconds: int) -> None:
        """Mark the chunk started under a lease, and the job running (the first start sets started_at)."""
        with self.redis.pipeline() as pipe:
            pipe.set(keys.job_lease(job_id, chunk), "1", ex=lease_seconds)
            pipe.hset(keys.job_chunk_states(job_id), chunk, "started")
            pipe.hsetnx(keys.job(job_id), "started_at", utcnow())
            pipe.execute()
        self._mark_running(keys=[keys.job(job_id)])

    def renew_lease(self, job_id: str, chunk: int, lease_seconds: int) -> None:
        """Heartbeat: keep the chunk's lease alive while its worker runs."""
        self.redis.set(keys.job_lease(job_id, chunk), "1", ex=lease_seconds)

    def stored_indexes(self, job_id: str, indexes: Iterable[int]) -> set[int]:
        """Which of these traces already have a result (a re-run chunk skips them)."""
        wanted = list(indexes)
        if not wanted:
            return set()
        present = self.redis.hmget(keys.job_results(job_id), [str(i) for i in wanted])
        return {i for i, raw in zip(wanted, present) if raw is not None}

    def record_result(self, job_id: str, result: TraceResult) -> bool:
        """Store one trace's result idempotently, filed under failed or skipped as its status says.

        True when no result was stored for this trace before: only new results are counted in metrics.
        """
        index = str(result.index)
        bucket = TERMINAL_RESULT.get(result.status, "failed")
        with self.redis.pipeline() as pipe:
            pipe.hset(keys.job_results(job_id), index, _encoder.encode(result))
            for name, key in (("failed", keys.job_failed(job_id)), ("skipped", keys.job_skipped(job_id))):
                (pipe.sadd if bucket == name else pipe.srem)(key, index)
                pipe.expire(key, self.ttl)
            pipe.expire(keys.job_results(job_id), self.ttl)
            return bool(pipe.execute()[0])

    def complete_chunk(self, job_id: str, chunk: int) -> bool:
        """Mark the chunk done; True for the one caller whose chunk completed the job (it must finalize)."""
        args = [chunk, self.ttl, int(time.time())]
        return bool(self._complete_chunk(keys=[keys.job(job_id), keys.job_chunks_done(job_id),
                                               keys.job_chunk_states(job_id), keys.job_lease(job_id, chunk)],
                                         args=args))

    def finish(self, job_id: str, status: str, error: str | None = None) -> None:
        """Move the job to a terminal status (it stays watched by the janitor until its report is built)."""
        mapping = {"status": status, "finished_at": utcnow()}
        if error:
            mapping["error"] = error
        self.redis.hset(keys.job(job_id), mapping=mapping)

    def deactivate(self, job_id: str) -> None:
        """Stop the janitor from watching a job (its report is built)."""
        self.redis.zrem(keys.active_jobs(), job_id)

    def set_callback(self, job_id: str, status: str, error: str | None = None, attempted: bool = False) -> None:
        """Record the completion callback's state: pending, delivered or failed."""
        with self.redis.pipeline() as pipe:
            pipe.hset(keys.job(job_id), mapping={"callback_status": status, "callback_error": error or ""})
            if attempted:
                pipe.hincrby(keys.job(job_id), "callback_attempts", 1)
            pipe.execute()

    # --- recovery -------------------------------------------------------------------------------------------

    def active_job_ids(self) -> list[str]:
        """Ids of jobs not yet finalized; ids whose job expired are dropped from the set."""
        ids = [raw.decode() for raw in self.redis.zrange(keys.active_jobs(), 0, -1)]
        with self.redis.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.exists(keys.job(job_id))
            present = pipe.execute()
        gone = [job_id for job_id, exists in zip(ids, present) if not exists]
        if gone:
            self.redis.zrem(keys.active_jobs(), *gone)
        return [i for i in ids if i not in gone]

    def claim_stale_chunks(self, job_id: str) -> list[int]:
        """Chunks whose worker died (lease expired before completion), each claimed by one caller only."""
        states = self.redis.hgetall(keys.job_chunk_states(job_id))
        claimed = []
        for chunk, state in states.items():
            if state == b"started" and self._claim_stale(
                    keys=[keys.job_chunk_states(job_id), keys.job_lease(job_id, int(chunk))], args=[int(chunk)]):
                claimed.append(int(chunk))
        return claimed

    def stuck_finalizing(self, job_id: str, older_than_seconds: int) -> bool:
        """True when every chunk is done but no report appeared within `older_than_seconds` (the finalizer died)."""
        fields = self._fields(job_id)
        started = fields.get(f"finalizing:{fields.get('attempt', '0')}")
        return (fields["status"] not in {"finished", "finished_with_errors", "failed"} and started is not None
                and time.time() - int(started) > older_than_seconds)

    def reopen_unfinished(self, job_id: str, tenant: str) -> list[int]:
        """For a retry: forget failed and skipped results and return the chunks to run again."""
        fields = self._fields(job_id, tenant)
        indexes = [int(i) for i in self.redis.sunion(keys.job_failed(job_id), keys.job_skipped(job_id))]
        chunks = sorted({i // int(fields["chunk_size"]) for i in indexes})
        if not chunks:
            return []
        with self.redis.pipeline() as pipe:
            pipe.hdel(keys.job_results(job_id), *[str(i) for i in indexes])
            pipe.delete(keys.job_failed(job_id), keys.job_skipped(job_id), keys.job_report(job_id))
            pipe.srem(keys.job_chunks_done(job_id), *chunks)
            pipe.hset(keys.job_chunk_states(job_id), mapping=dict.fromkeys(chunks, "queued"))
            pipe.hincrby(keys.job(job_id), "attempt", 1)
            pipe.hset(keys.job(job_id), "status", "queued")
            pipe.hdel(keys.job(job_id), "finished_at", "error")
            pipe.zadd(keys.active_jobs(), {job_id: time.time()})
            pipe.execute()
        return chunks

    # --- results, reports, calibration ---------------------------------------------------------------------

    def all_results(self, job_id: str) -> list[TraceResult]:
        """Every stored result of the job, in trace order."""
        raw = self.redis.hgetall(keys.job_results(job_id))
        return sorted((_result_decoder.decode(v) for v in raw.values()), key=lambda r: r.index)

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

    # --- spend -----------------------------------------------------------------------------------------------

    def add_spend(self, job_id: str, tenant: str, cost_usd: float, input_tokens: int, output_tokens: int) -> None:
        """Count one judge call against the job and the tenant's day (real spend: retries count too)."""
        day_key = keys.tenant_spend(tenant, utcday())
        with self.redis.pipeline() as pipe:
            for key in (keys.job(job_id), day_key):
                pipe.hincrbyfloat(key, "cost_usd", cost_usd)
                pipe.hincrby(key, "judge_calls", 1)
                pipe.hincrby(key, "input_tokens", input_tokens)
                pipe.hincrby(key, "output_tokens", output_tokens)
            pipe.expire(day_key, 2 * 86400)
            pipe.execute()

    def spent(self, job_id: str, tenant: str) -> tuple[float, float]:
        """(job spend, tenant spend today) in USD."""
        job_cost, day_cost = (self.redis.hget(keys.job(job_id), "cost_usd"),
                              self.redis.hget(keys.tenant_spend(tenant, utcday()), "cost_usd"))
        return float(job_cost or 0), float(day_cost or 0)

    def _fields(self, job_id: str, tenant: str | None = None) -> dict[str, str]:
        if not _JOB_ID.match(job_id):
            raise JobNotFound(job_id)
        raw = self.redis.hgetall(keys.job(job_id))
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            raise JobNotFound(job_id)
        return fields


def _spend(fields: dict[str, str]) -> Spend:
    return Spend(judge_calls=int(fields.get("judge_calls", 0)), input_tokens=int(fields.get("input_tokens", 0)),
                 output_tokens=int(fields.get("output_tokens", 0)), cost_usd=round(float(fields.get("cost_usd", 0)), 6))


def _callback(fields: dict[str, str]) -> CallbackState | None:
    if "callback_status" not in fields:
        return None
    return CallbackState(status=fields["callback_status"], attempts=int(fields.get("callback_attempts", 0)),
                         last_error=fields.get("callback_error") or None)


def _parse_cursor(cursor: str | None) -> int:
    if cursor in (None, ""):
        return 0
    if not cursor.isdigit() or len(cursor) > 12:
        raise InvalidParameter("cursor is not one this API issued",
                               [{"path": "query.cursor", "message": "pass back next_cursor unchanged"}])
    return int(cursor)
