"""Chunks waiting on a provider batch (batch delivery): the batch ids and counts of each, when each is next due a
poll, and the lease of its one poller.

Per chunk: one JSON value (its state) and, while a poll runs, one lease; one member of the shared sorted set of due
polls. Every key carries a TTL: the state the job's, the lease its PX, the set the job TTL from its latest write.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

import msgspec
import redis

from ragpulse.config import defaults, keys

ProviderStatus = Literal["submitting", "waiting", "canceling", "ended"]

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
"""Delete the poll lease only when it is still the caller's (KEYS: lease; ARGV: token)."""


class SubmitIntent(msgspec.Struct, kw_only=True):
    """A provider batch about to be created, saved before the request goes out: a worker killed after the provider
    accepted it and before its id was saved leaves this, and the submission resumed looks the batch up by it instead
    of creating it again."""

    key: str
    """Client-side idempotency key: in the batch's metadata where the provider keeps some (OpenAI), and at the end of
    every request's custom_id (both)."""
    part: int
    """Which part of the chunk's requests (split_requests) the batch carries."""
    at: float
    """When the intent was saved (epoch seconds): the batch, if created, was created after this."""
    requests: int
    """How many requests the batch carries."""


class ProviderState(msgspec.Struct, kw_only=True):
    """One chunk's provider batches: `submitting` (ids of the parts sent so far), `waiting`, `canceling` (the job
    was cancelled, the provider asked to stop), `ended` (results ready); summed request counts; the next poll wait."""

    ids: list[str] = []
    status: ProviderStatus = "submitting"
    counts: dict[str, int] = {}
    delay: float = 0.0
    planned: int = 0
    """How many of the chunk's judged traces are submitted (fewer than all when a budget holds the rest back)."""
    reserved_usd: float = 0.0
    """The requests' estimated cost at the batch price, counted in the job's and tenant's spend at submission (so
    budgets see it while the batch runs) and given back once the chunk has run on the results (their actual cost is
    counted then, call by call)."""
    intent: SubmitIntent | None = None
    """The batch being created, until its id is saved with `ids` (submitting only)."""


_decoder = msgspec.json.Decoder(ProviderState)


class ProviderBatches:
    """Provider batch state, due polls and poll leases; every key written carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._release = client.register_script(RELEASE)

    def get(self, job_id: str, chunk: int) -> ProviderState | None:
        """The chunk's state, or None when it never submitted."""
        raw = self.redis.get(keys.provider_batch(job_id, chunk))
        return _decoder.decode(raw) if raw is not None else None

    def states(self, job_id: str, chunks: int) -> list[ProviderState | None]:
        """Every chunk's state, in one round trip."""
        raw = self.redis.mget([keys.provider_batch(job_id, n) for n in range(chunks)]) if chunks else []
        return [_decoder.decode(r) if r is not None else None for r in raw]

    def save(self, job_id: str, chunk: int, state: ProviderState) -> None:
        """Write the chunk's state."""
        self.redis.set(keys.provider_batch(job_id, chunk), msgspec.json.encode(state), ex=self.ttl)

    def queue_save(self, pipe: redis.client.Pipeline, job_id: str, chunk: int, state: ProviderState) -> None:
        """Queue the write of the chunk's state onto `pipe`."""
        pipe.set(keys.provider_batch(job_id, chunk), msgspec.json.encode(state), ex=self.ttl)

    def submitted(self, job_id: str, chunk: int, state: ProviderState, batch_id: str) -> None:
        """Save the state holding a newly created batch's id, and remember the id as this deployment's."""
        now = time.time()
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(keys.provider_batch(job_id, chunk), msgspec.json.encode(state), ex=self.ttl)
            pipe.zadd(keys.provider_submitted(), {batch_id: now})
            pipe.zremrangebyscore(keys.provider_submitted(), "-inf", now - defaults.SUBMITTED_REGISTRY_SECONDS)
            pipe.expire(keys.provider_submitted(), defaults.SUBMITTED_REGISTRY_SECONDS)
            pipe.execute()

    def submitted_since(self, since: float) -> set[str]:
        """Ids of the provider batches this deployment created since `since` (epoch seconds)."""
        return {m.decode() for m in self.redis.zrangebyscore(keys.provider_submitted(), since, "+inf")}

    def wait(self, job_id: str, chunk: int, state: ProviderState, due_in: float) -> None:
        """The chunk waits on its provider batches: state saved, due a poll in `due_in` seconds, and no longer
        `started` under a lease (the janitor requeues only started chunks whose lease lapsed)."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(keys.provider_batch(job_id, chunk), msgspec.json.encode(state), ex=self.ttl)
            pipe.hset(keys.job_chunk_states(job_id), chunk, "waiting")
            pipe.delete(keys.job_lease(job_id, chunk))
            self.queue_due(pipe, job_id, chunk, due_in)
            pipe.execute()

    def queue_due(self, pipe: redis.client.Pipeline, job_id: str, chunk: int, due_in: float) -> None:
        """Queue the writes making the chunk due a poll in `due_in` seconds onto `pipe`."""
        pipe.zadd(keys.provider_polls(), {_member(job_id, chunk): time.time() + due_in})
        pipe.expire(keys.provider_polls(), self.ttl)

    def due_now(self, job_id: str, chunks: Sequence[int]) -> None:
        """Make these chunks due a poll at once (the job was cancelled)."""
        if chunks:
            self.redis.zadd(keys.provider_polls(), {_member(job_id, n): 0 for n in chunks}, xx=True)

    def due(self, limit: int) -> list[tuple[str, int]]:
        """(job id, chunk) of chunks due a poll now, most overdue first."""
        members = self.redis.zrangebyscore(keys.provider_polls(), "-inf", time.time(), start=0, num=limit)
        return [_parse(m.decode()) for m in members]

    def queue_ended(self, pipe: redis.client.Pipeline, job_id: str, chunk: int, state: ProviderState) -> None:
        """Queue the writes saying the chunk's batches have ended onto `pipe` (with the enqueue of the chunk, so
        that it runs on the results): state saved, no more polls, the chunk queued."""
        self.queue_save(pipe, job_id, chunk, state)
        pipe.zrem(keys.provider_polls(), _member(job_id, chunk))
        pipe.hset(keys.job_chunk_states(job_id), chunk, "queued")

    def queue_forget(self, pipe: redis.client.Pipeline, job_id: str, chunk: int) -> None:
        """Queue the writes dropping the chunk's batches (state and due poll) onto `pipe`: it submits afresh."""
        pipe.delete(keys.provider_batch(job_id, chunk))
        pipe.zrem(keys.provider_polls(), _member(job_id, chunk))

    def forget(self, job_id: str, chunk: int) -> None:
        """No more polls of the chunk (its job is gone)."""
        self.redis.zrem(keys.provider_polls(), _member(job_id, chunk))

    def lease(self, job_id: str, chunk: int, token: str, seconds: int) -> bool:
        """Take the chunk's poll lease for `token` (or keep it, when it is `token`'s already): one poller at a time."""
        key = keys.provider_poll_lease(job_id, chunk)
        if self.redis.set(key, token, nx=True, px=seconds * 1000):
            return True
        return self.redis.get(key) == token.encode()

    def release(self, job_id: str, chunk: int, token: str) -> None:
        """Give the lease back, if it is still `token`'s."""
        self._release(keys=[keys.provider_poll_lease(job_id, chunk)], args=[token])


def _member(job_id: str, chunk: int) -> str:
    return f"{job_id}:{chunk}"


def _parse(member: str) -> tuple[str, int]:
    job_id, _, chunk = member.rpartition(":")
    return job_id, int(chunk)
