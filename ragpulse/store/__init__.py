"""The Redis store, split by noun: job records, chunk leases, results and spend, each holding its own keys.

`Store` composes them and adds the operations that span several (creating a job, its client view, a retry), with
the tenant check every client-facing read goes through.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from ragpulse.exceptions import Conflict, JobNotFound
from ragpulse.model.dataset import DatasetBinding
from ragpulse.model.job_list import JobFilter
from ragpulse.model.results import OUTCOMES, TERMINAL, JobView, Progress, ProviderProgress, ResultsPage, Spend
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.store import sessions
from ragpulse.store.chunks import ChunkLeases, chunked
from ragpulse.store.clock import utcday, utcnow
from ragpulse.store.job_index import JobIndex
from ragpulse.store.provider_batches import ProviderBatches
from ragpulse.store.records import JobRecord, JobRecords
from ragpulse.store.results import Results
from ragpulse.store.spend import SpendLedger

__all__ = ["ChunkLeases", "JobRecord", "JobRecords", "Results", "SpendLedger", "Store", "chunked", "utcday", "utcnow"]


CANCELLED = "cancelled by the client (POST /v1/jobs/{id}/cancel)"
"""The error of a cancelled job."""


class Store:
    """Job state in Redis; every key it writes carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self.jobs = JobRecords(client, ttl_seconds)
        self.chunks = ChunkLeases(client, ttl_seconds)
        self.results = Results(client, ttl_seconds)
        self.spend = SpendLedger(client)
        self.index = JobIndex(client, ttl_seconds)
        self.provider = ProviderBatches(client, ttl_seconds)

    def stage_job(self, pipe: redis.client.Pipeline, job_id: str, tenant: str, traces: Sequence[Trace],
                  options: BatchOptions, warnings: list, chunk_size: int, queue: str, rq_queue: str,
                  dataset: DatasetBinding | None = None) -> int:
        """Queue the writes that create a job onto `pipe`; returns the number of chunks."""
        chunks = chunked(traces, chunk_size)
        self.jobs.stage(pipe, job_id, tenant, total=len(traces), n_chunks=len(chunks), chunk_size=chunk_size,
                        options=options, warnings=warnings, queue=queue, rq_queue=rq_queue,
                        apps=sorted({trace.app for trace in traces}), dataset=dataset)
        self.chunks.stage(pipe, job_id, chunks)
        self.index.stage(pipe, tenant, job_id)
        sessions.queue_job_turns(pipe, job_id, traces, self.ttl)
        return len(chunks)

    def job(self, job_id: str, tenant: str | None = None) -> JobView:
        """The job as clients see it; JobNotFound when absent or owned by another tenant."""
        record = self.jobs.get(job_id, tenant)
        view = record.view(self.progress(record))
        if record.options.delivery == "batch":
            view.provider = self.provider_progress(record)
        return view

    def provider_progress(self, record: JobRecord) -> ProviderProgress | None:
        """Where a batch-delivery job's provider batches stand; None before any was submitted."""
        states = [s for s in self.provider.states(record.job_id, record.n_chunks) if s is not None]
        if not states:
            return None
        counts = {name: sum(s.counts.get(name, 0) for s in states) for name in OUTCOMES}
        return ProviderProgress(waiting=any(s.status != "ended" for s in states),
                                batch_ids=[i for s in states for i in s.ids], counts=counts,
                                awaiting_judge=self.results.awaiting(record.job_id))

    def cancel(self, job_id: str, tenant: str) -> JobView:
        """Cancel a job that has not ended: it fails with the reason, its running chunks fail their remaining traces,
        and its provider batches are cancelled at their next poll, made due at once. Conflict once it has ended."""
        record = self.jobs.get(job_id, tenant)
        if record.status in TERMINAL:
            raise Conflict(f"job {job_id} has already ended ({record.status})")
        self.jobs.finish(job_id, "failed", CANCELLED)
        self.provider.due_now(job_id, range(record.n_chunks))
        return self.job(job_id, tenant)

    def progress(self, record: JobRecord) -> Progress:
        """The job's trace counts so far."""
        return self.progress_many([record])[0]

    def list_jobs(self, tenant: str, where: JobFilter, cursor: str | None, limit: int,
                  budget: int) -> tuple[list[JobRecord], str | None]:
        """One page of the tenant's job records, newest first, matching `where`; and the next cursor. Index
        entries whose job has expired are dropped from the index."""
        found: dict[str, JobRecord] = {}

        def keep(job_ids: list[str]) -> list[bool]:
            records = self.jobs.find_many(job_ids, tenant)
            self.index.forget(tenant, [job_id for job_id, record in zip(job_ids, records) if record is None])
            found.update((r.job_id, r) for r in records if r is not None and _matches(r, where))
            return [job_id in found for job_id in job_ids]

        ids, next_cursor = self.index.scan(tenant, cursor, limit, budget, keep)
        return [found[i] for i in ids], next_cursor

    def progress_many(self, records: Sequence[JobRecord]) -> list[Progress]:
        """The trace counts of several jobs, in one round trip."""
        counts = self.results.counts_many([r.job_id for r in records])
        return [Progress(total=r.total, done=stored - failed - skipped, failed=failed, skipped=skipped)
                for r, (stored, failed, skipped) in zip(records, counts)]

    def results_page(self, job_id: str, tenant: str, cursor: str | None, limit: int) -> ResultsPage:
        """One page of the tenant's job results."""
        return self.results.page(job_id, self.jobs.get(job_id, tenant).total, cursor, limit)

    def queries(self, job_id: str, tenant: str, indexes: Sequence[int]) -> dict[int, str]:
        """The questions of the traces at these batch positions, read from their chunks (kept as long as the job)."""
        size = self.jobs.get(job_id, tenant).chunk_size
        wanted: dict[int, list[int]] = {}
        for index in indexes:
            wanted.setdefault(index // size, []).append(index)
        found = {}
        for chunk, positions in wanted.items():
            try:
                traces = self.chunks.load(job_id, chunk)
            except JobNotFound:   # a chunk gone before its job (expired apart): the cards go without questions
                continue
            found.update({i: traces[i % size].query for i in positions if i % size < len(traces)})
        return found

    def report(self, job_id: str, tenant: str) -> bytes | None:
        """The tenant's job report, or None while it is not built yet."""
        self.jobs.get(job_id, tenant)
        return self.results.report(job_id)

    def reopen_unfinished(self, job_id: str, tenant: str) -> list[int]:
        """For a retry: forget failed and skipped results and return the chunks to run again. A batch-delivery chunk
        forgets its ended provider batches too, so the traces it runs again go to the provider in fresh requests
        instead of being answered by the old results (expired, errored, canceled or judged before)."""
        record = self.jobs.get(job_id, tenant)
        indexes = self.results.unfinished_indexes(job_id)
        chunks = sorted({i // record.chunk_size for i in indexes})
        if not chunks:
            return []
        states = self.provider.states(job_id, record.n_chunks)
        with self.redis.pipeline() as pipe:
            self.results.forget(pipe, job_id, indexes)
            self.chunks.reopen(pipe, job_id, chunks)
            self.jobs.reopen(pipe, job_id)
            for chunk in chunks:
                state = states[chunk]
                if state is not None and state.reserved_usd:  # a reservation never given back: given back now
                    SpendLedger.queue_add(pipe, job_id, record.tenant, Spend(
                        judge_calls=0, input_tokens=0, output_tokens=0, cost_usd=-state.reserved_usd))
                self.provider.queue_forget(pipe, job_id, chunk)
            pipe.execute()
        return chunks


def _matches(record: JobRecord, where: JobFilter) -> bool:
    return ((where.app is None or where.app in record.apps) and (where.run is None or where.run == record.options.run)
            and (where.status is None or where.status == record.status))
