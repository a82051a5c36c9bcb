"""Chunk leases: a job's traces in msgpack chunks (never pickle), each chunk's state, and the lease its worker
renews while it runs, so the janitor can tell a dead worker's chunk from a slow one."""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec
import redis

from ragpulse.config import keys
from ragpulse.exceptions import JobNotFound
from ragpulse.model.trace import Trace
from ragpulse.store import scripts

_encoder = msgspec.msgpack.Encoder()
_chunk_decoder = msgspec.msgpack.Decoder(list[Trace])


def chunked(items: Sequence[Trace], size: int) -> list[Sequence[Trace]]:
    """Split traces into consecutive chunks of at most `size`."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class ChunkLeases:
    """Chunk payloads, chunk states (queued, started, requeued, done) and leases; every key carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._complete = client.register_script(scripts.COMPLETE_CHUNK)
        self._claim_stale = client.register_script(scripts.CLAIM_STALE)
        self._take = client.register_script(scripts.TAKE_CHUNK)

    def stage(self, pipe: redis.client.Pipeline, job_id: str, chunks: Sequence[Sequence[Trace]]) -> None:
        """Queue the writes storing the chunks, all queued, onto `pipe`."""
        for n, chunk in enumerate(chunks):
            pipe.set(keys.job_chunk(job_id, n), _encoder.encode(chunk), ex=self.ttl)
        pipe.hset(keys.job_chunk_states(job_id), mapping=dict.fromkeys(range(len(chunks)), "queued"))
        pipe.expire(keys.job_chunk_states(job_id), self.ttl)

    def load(self, job_id: str, chunk: int) -> list[Trace]:
        """The traces of one chunk."""
        raw = self.redis.get(keys.job_chunk(job_id, chunk))
        if raw is None:
            raise JobNotFound(job_id)
        return _chunk_decoder.decode(raw)

    def start(self, job_id: str, chunk: int, lease_seconds: int) -> None:
        """Mark the chunk started under a lease."""
        with self.redis.pipeline() as pipe:
            pipe.set(keys.job_lease(job_id, chunk), "1", ex=lease_seconds)
            pipe.hset(keys.job_chunk_states(job_id), chunk, "started")
            pipe.execute()

    def take(self, job_id: str, chunk: int, lease_seconds: int) -> bool:
        """Start the chunk under a lease unless it is done or a live worker holds it (it ran it as the next chunk of
        its run); True when this caller took it."""
        return self._take_chunk(job_id, chunk, lease_seconds, waiting_only=False)

    def take_next(self, job_id: str, lease_seconds: int) -> int | None:
        """Start the job's first chunk still queued for its first run under a lease; its number, or None when none
        is. Its RQ job, when a worker dequeues it, finds it held (`take`). A chunk the janitor requeued is left to the
        RQ job it enqueued."""
        states = self.redis.hgetall(keys.job_chunk_states(job_id))
        waiting = sorted(int(chunk) for chunk, state in states.items() if state == b"queued")
        return next((chunk for chunk in waiting if self._take_chunk(job_id, chunk, lease_seconds, True)), None)

    def _take_chunk(self, job_id: str, chunk: int, lease_seconds: int, waiting_only: bool) -> bool:
        return bool(self._take(keys=[keys.job_chunk_states(job_id), keys.job_lease(job_id, chunk)],
                               args=[chunk, lease_seconds, int(waiting_only)]))

    @staticmethod
    def queue_renew(pipe: redis.client.Pipeline, job_id: str, chunk: int, lease_seconds: int) -> None:
        """Heartbeat: queue the write keeping the chunk's lease alive while its worker runs onto `pipe` (a sync or
        an asyncio pipeline)."""
        pipe.set(keys.job_lease(job_id, chunk), "1", ex=lease_seconds)

    def complete(self, job_id: str, chunk: int) -> bool:
        """Mark the chunk done; True for the one caller whose chunk completed the job (it must finalize)."""
        args = [chunk, self.ttl, int(time.time())]
        return bool(self._complete(keys=[keys.job(job_id), keys.job_chunks_done(job_id),
                                         keys.job_chunk_states(job_id), keys.job_lease(job_id, chunk)], args=args))

    def claim_stale(self, job_id: str) -> list[int]:
        """Chunks whose worker died (lease expired before completion), each claimed by one caller only."""
        states = self.redis.hgetall(keys.job_chunk_states(job_id))
        claimed = []
        for chunk, state in states.items():
            if state == b"started" and self._claim_stale(
                    keys=[keys.job_chunk_states(job_id), keys.job_lease(job_id, int(chunk))], args=[int(chunk)]):
                claimed.append(int(chunk))
        return claimed

    def in_flight(self, job_id: str) -> list[int]:
        """Chunks a live worker still holds (started, lease not lapsed): a cancelled job's chunks finish their
        current traces before they stop."""
        started = [int(c) for c, state in self.redis.hgetall(keys.job_chunk_states(job_id)).items()
                   if state == b"started"]
        if not started:
            return []
        with self.redis.pipeline(transaction=False) as pipe:
            for chunk in started:
                pipe.exists(keys.job_lease(job_id, chunk))
            leased = pipe.execute()
        return [chunk for chunk, held in zip(started, leased) if held]

    def reopen(self, pipe: redis.client.Pipeline, job_id: str, chunks: Sequence[int]) -> None:
        """Queue the writes that make these chunks run again onto `pipe`."""
        pipe.srem(keys.job_chunks_done(job_id), *chunks)
        pipe.hset(keys.job_chunk_states(job_id), mapping=dict.fromkeys(chunks, "queued"))
