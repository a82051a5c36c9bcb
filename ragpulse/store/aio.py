"""One job's reads and writes while a chunk of it runs, awaited on redis.asyncio instead of blocking the event loop.

With 32 judge calls in flight, the eight blocking round trips a trace made on the sync client were half of the
work-horse's time, and every one of them held up every call in flight. Each operation here builds its commands with
the same code as the sync store (`Store`'s nouns keep the one home of each key, field and script); only the round
trip differs.
"""

from __future__ import annotations

from collections.abc import Callable

import redis.asyncio

from ragpulse.config import keys
from ragpulse.model.results import TraceResult
from ragpulse.store import Store, scripts
from ragpulse.store.atomic import Group, pack_group
from ragpulse.store.chunks import ChunkLeases
from ragpulse.store.group_commit import GroupCommit
from ragpulse.store.records import FAILURE_FIELDS, failure_from, finish_fields
from ragpulse.store.results import Counting
from ragpulse.store.spend import SpendLedger

Recorded = tuple[TraceResult, Counting | None]
"""A result to store and the writes that count it."""


class AsyncJobStore:
    """The per-trace operations of a chunk run on one job: its failure flag, its spend, its results, its lease."""

    def __init__(self, store: Store, client: redis.asyncio.Redis, job_id: str, tenant: str) -> None:
        self.store, self.client, self.job_id, self.tenant = store, client, job_id, tenant
        self._record = client.register_script(scripts.RECORD_RESULT)
        self._record_all = client.register_script(scripts.RECORD_RESULTS)
        self._write_once = client.register_script(scripts.WRITE_ONCE)
        self._records: GroupCommit[Recorded, bool] = GroupCommit(self._store, same_turn=True)

    async def failure(self) -> str | None:
        """The job's error when it has failed, else None."""
        return failure_from(await self.client.hmget(keys.job(self.job_id), FAILURE_FIELDS))

    async def finish(self, status: str, error: str | None = None) -> None:
        """Move the job to a terminal status (JobRecords.finish)."""
        await self.client.hset(keys.job(self.job_id), mapping=finish_fields(status, error))

    async def spent(self) -> tuple[float, float]:
        """(job spend, tenant spend today) in USD, in one round trip."""
        async with self.client.pipeline(transaction=False) as pipe:
            SpendLedger.queue_spent(pipe, self.job_id, self.tenant)
            return SpendLedger.spent_from(await pipe.execute())

    async def record(self, result: TraceResult, counting: Counting | None = None) -> bool:
        """Store one trace's result idempotently and count it exactly once (Results.record, the same script).

        Results that finish together are stored together (a group commit, issue 28): in one script call that also
        applies their counting writes merged, when none of them was stored before; else (a group sent again) in one
        pipeline of a script call each, applied and counted on its own. An error reaches every caller of the group,
        and each may send its result again."""
        return await self._records.submit((result, counting))

    async def _store(self, group: list[Recorded]) -> list[bool | BaseException]:
        """Each result's answer (True: stored now) or error: all at once when none was stored before, else one by
        one."""
        if len(group) > 1 and len({result.index for result, _ in group}) == len(group):
            keys_, args = self.store.results.record_group_script_call(self.job_id, group)
            if await self._record_all(keys=keys_, args=args):
                return [True] * len(group)
        async with self.client.pipeline(transaction=False) as pipe:
            for result, counting in group:
                keys_, args = self.store.results.record_script_call(self.job_id, result, counting)
                await self._record(keys=keys_, args=args, client=pipe)
            answers = await pipe.execute(raise_on_error=False)
        return [a if isinstance(a, BaseException) else bool(a) for a in answers]

    async def renew(self, chunks: list[int], lease_seconds: int) -> None:
        """Heartbeat: keep the leases of these chunks alive (ChunkLeases.renew), in one round trip."""
        def queue(pipe: redis.asyncio.client.Pipeline) -> None:
            for chunk in chunks:
                ChunkLeases.queue_renew(pipe, self.job_id, chunk, lease_seconds)

        await self.write(queue)

    async def write_once(self, write_id: str, group: Group, marker_seconds: int) -> bool:
        """Apply `group` (atomic.Writes' commands, each naming its key first) unless the write `write_id` was applied
        already: safe to send again when its outcome is unknown. True when it was applied now."""
        touched = list(dict.fromkeys(str(args[1]) for args in group))
        return bool(await self._write_once(keys=[keys.counted_write(write_id), *touched],
                                           args=[pack_group(group), marker_seconds]))

    async def write(self, queue: Callable[[redis.asyncio.client.Pipeline], None]) -> None:
        """Apply the writes `queue` puts on a pipeline, in one transaction (nothing is sent when it queues none)."""
        async with self.client.pipeline(transaction=True) as pipe:
            queue(pipe)
            if pipe.command_stack:
                await pipe.execute()
