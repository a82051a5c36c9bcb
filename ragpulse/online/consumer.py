"""A worker's loop over the online stream: read posts, process them concurrently, acknowledge them in groups.

Beside the reading loop run three small tasks: the acknowledger (one script call for every post finished since the
last one, carrying the buffered judge metrics and spend), the refresher (keeps the posts still being judged from
looking abandoned), and the claimer (takes over posts of a worker that died, gives up on a post that kept failing,
and forgets consumers long gone so the group's consumer list stays bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid

import msgspec
import redis
import redis.asyncio

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.evaluation.calls import marker_seconds
from ragpulse.evaluation.reserve import SpendReservations
from ragpulse.judges.kinds import make_judge
from ragpulse.monitoring import catalog
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.online import post as posts
from ragpulse.online.process import BufferedCallObserver, PostProcessor
from ragpulse.online.stream import Done, Entry, OnlineStream
from ragpulse.store.atomic import Group, Writes
from ragpulse.store.connection import RETRIED_ERRORS

log = logging.getLogger("ragpulse.online")

MAX_IN_FLIGHT = 4 * defaults.ONLINE_READ_COUNT
"""Posts one worker holds at once (being evaluated or waiting for their acknowledgement); it reads no more until
some are done, so a slow judge bounds the worker's memory, not the stream's length."""
MAX_IN_FLIGHT_TRACES = 2048
"""Traces one worker holds at once, whatever the size of the posts (a post holds up to 1,000): reads are sized by
the traces per post seen so far, so 100-trace posts do not fill a worker with 100,000 decoded traces."""
READ_BLOCK_MS = 500
"""How long one read waits for a new post; also how quickly a stopping worker notices."""
ACK_EVERY_SECONDS = 0.05
"""Longest a finished post waits for its acknowledgement (posts finished meanwhile share the call)."""
GONE_CONSUMER_SECONDS = 3600
"""A consumer of the group with nothing pending, idle this long, is deleted (a worker that stopped)."""
STOP_POLL_SECONDS = 0.1
"""How often the consumer looks whether it was asked to stop."""
STOP_GRACE_SECONDS = 10.0
"""How long a stopping worker lets posts in flight finish; the rest stay pending and are claimed by another."""


class OnlineConsumer:
    """One worker's consumer of the online stream."""

    def __init__(self, settings: Settings, stream: OnlineStream, processor: PostProcessor,
                 observer: BufferedCallObserver) -> None:
        self.settings, self.stream, self.processor, self.observer = settings, stream, processor, observer
        self.claim_idle_ms = settings.online_claim_idle_seconds * 1000
        self.in_flight: dict[bytes, asyncio.Task[None]] = {}
        self.traces_in_flight = 0
        self._sizes: dict[bytes, int] = {}
        self._traces_per_post = 1.0
        self.finished: list[Done] = []
        self._unsent: tuple[Group, str] | None = None
        """A failed acknowledgement's shared writes and nonce, sent again as they were before anything new (so a
        first send that did land, its reply lost, is not applied twice)."""
        self._finished_event = asyncio.Event()
        self._room = asyncio.Event()
        self._stopping = asyncio.Event()
        """Set as the consumer stops: the helpers' loops end at their next turn even when a cancellation was lost
        (redis-py's asyncio client was seen to swallow one inside its timeouts and retries, and a chunk run's
        heartbeat then renewed its leases for ever)."""

    async def run(self, stop: threading.Event) -> None:
        """Consume until `stop` is set. Then a read in progress is dropped at once (even one retrying through a Redis
        outage: it holds nothing), the posts in flight get up to STOP_GRACE_SECONDS to finish and be acknowledged,
        and whatever is left stays pending for another worker to claim. Redis outages that outlast the client's
        retries propagate: the caller runs a new consumer."""
        helpers = [asyncio.create_task(coro) for coro in
                   (self._read_loop(stop), self._acknowledger(), self._refresher(), self._claimer())]
        try:
            while not stop.is_set():
                done, _ = await asyncio.wait(helpers, timeout=STOP_POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    await task   # re-raises its error (a Redis outage): the caller starts over
            self._stop_helpers(helpers)
            await asyncio.gather(*helpers, return_exceptions=True)
            await self._finish_in_flight()
        finally:
            self._stop_helpers(helpers)
            for task in self.in_flight.values():
                task.cancel()
            await asyncio.gather(*helpers, *self.in_flight.values(), return_exceptions=True)

    def _stop_helpers(self, helpers: list[asyncio.Task[None]]) -> None:
        """Tell the helper loops to end (`_stopping`, which outlives a lost cancellation) and cancel them."""
        self._stopping.set()
        self._finished_event.set()   # the acknowledger, waiting for finished posts, sees `_stopping`
        for task in helpers:
            task.cancel()

    async def _running_after(self, seconds: float) -> bool:
        """Wait `seconds`, or less when the consumer stops; True while it runs."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)
        return not self._stopping.is_set()

    async def _read_loop(self, stop: threading.Event) -> None:
        await self.stream.ensure_group()
        while not stop.is_set() and not self._stopping.is_set():
            count = self._room_for()
            if count <= 0:
                self._room.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._room.wait(), READ_BLOCK_MS / 1000)
                continue
            for entry in await self.stream.read(count, READ_BLOCK_MS):
                self._start(entry)

    def _room_for(self) -> int:
        """How many posts to read now: within MAX_IN_FLIGHT posts and, at the traces per post seen so far, within
        MAX_IN_FLIGHT_TRACES traces."""
        posts_room = MAX_IN_FLIGHT - len(self.in_flight)
        traces_room = int((MAX_IN_FLIGHT_TRACES - self.traces_in_flight) / self._traces_per_post)
        return min(defaults.ONLINE_READ_COUNT, posts_room, traces_room)

    def _hold(self, entry_id: bytes, traces: int) -> None:
        self._sizes[entry_id] = traces
        self.traces_in_flight += traces
        self._traces_per_post = 0.9 * self._traces_per_post + 0.1 * max(1, traces)

    def _release(self, entry_id: bytes) -> None:
        self.in_flight.pop(entry_id, None)
        self.traces_in_flight -= self._sizes.pop(entry_id, 0)
        self._room.set()

    def _start(self, entry: Entry, deliveries: int = 1) -> None:
        entry_id, fields = entry
        if entry_id in self.in_flight:
            return
        self.in_flight[entry_id] = asyncio.create_task(self._process(entry_id, fields, deliveries))

    async def _process(self, entry_id: bytes, fields: dict[bytes, bytes], deliveries: int) -> None:
        try:
            writes = await self._writes(entry_id, fields, deliveries)
        except RETRIED_ERRORS as exc:
            # Redis went away mid-post: leave it pending; once it is idle long enough, a worker claims it again.
            log.warning("online post %s left pending, Redis unreachable: %s", entry_id.decode(), exc)
            self._release(entry_id)
            return
        self.finished.append(Done(entry_id, writes, fields.get(posts.TENANT_FIELD, b"")))
        self._finished_event.set()

    async def _writes(self, entry_id: bytes, fields: dict[bytes, bytes], deliveries: int) -> Group:
        """The post's writes: its traces evaluated and counted; or, when it cannot be read or has failed too often,
        its failure recorded and counted."""
        try:
            post = posts.decode(fields[posts.POST_FIELD])
        except (KeyError, msgspec.DecodeError) as exc:
            log.error("online post %s cannot be read, dropped: %s", entry_id.decode(), exc)
            return self._failed_post_count("undecodable")
        self._hold(entry_id, len(post.traces))
        if deliveries > defaults.ONLINE_MAX_DELIVERIES:
            error = f"delivered {deliveries - 1} times without being processed (its worker died each time)"
            log.error("online post %s: %s; its traces are recorded as failed", entry_id.decode(), error)
            return self._failed_post_count("redelivered") + self.processor.failed_writes(post, error)
        return await self.processor.process(post)

    def _failed_post_count(self, reason: str) -> Group:
        batch = MetricsBatch(())
        batch.inc(catalog.ONLINE_POSTS_FAILED, {"reason": reason})
        pipe = Writes()
        batch.queue_onto(pipe)
        return pipe.group

    async def _acknowledger(self) -> None:
        while True:
            await self._finished_event.wait()
            if not await self._running_after(ACK_EVERY_SECONDS):
                return   # what is finished is acknowledged by _finish_in_flight
            await self._acknowledge()

    async def _acknowledge(self) -> None:
        """Acknowledge every finished post in one call. On a Redis error the posts stay finished and are sent again
        (a post whose first acknowledgement did land is not counted twice: its XACK then finds it acknowledged), and
        the shared writes are sent again with the same nonce, alone, before anything new (applied once)."""
        self._finished_event.clear()
        if self._unsent is not None:
            await self.stream.acknowledge([], *self._unsent)
            self._unsent = None
        batch, self.finished = self.finished, []
        pipe = Writes()
        self.observer.drain(pipe)
        shared, nonce = pipe.group, uuid.uuid4().hex
        if not batch and not shared:
            return
        try:
            await self.stream.acknowledge(batch, shared, nonce)
        except BaseException:
            self.finished[:0] = batch
            if shared:
                self._unsent = (shared, nonce)
            raise
        for entry_id, *_ in batch:
            self._release(entry_id)

    async def _refresher(self) -> None:
        while await self._running_after(self.claim_idle_ms / 3000):
            await self.stream.refresh(list(self.in_flight))

    async def _claimer(self) -> None:
        while await self._running_after(max(0.2, self.claim_idle_ms / 4000)):
            claimed = await self.stream.claim_stale(self.claim_idle_ms, defaults.ONLINE_READ_COUNT)
            for entry in claimed.entries:
                log.warning("online post %s claimed from a worker that stopped acknowledging it", entry[0].decode())
                self._start(entry, claimed.deliveries.get(entry[0], 1))
            await self.stream.forget_gone_consumers(GONE_CONSUMER_SECONDS * 1000)

    async def _finish_in_flight(self) -> None:
        """Let the posts in flight finish and acknowledge them, within STOP_GRACE_SECONDS in all."""
        deadline = asyncio.get_running_loop().time() + STOP_GRACE_SECONDS
        pending = list(self.in_flight.values())
        if pending:
            await asyncio.wait(pending, timeout=STOP_GRACE_SECONDS)
        left = deadline - asyncio.get_running_loop().time()
        if left > 0 and (self.finished or self._unsent is not None or self.observer.counted_anything):
            with contextlib.suppress(TimeoutError, *RETRIED_ERRORS):
                await asyncio.wait_for(self._acknowledge(), left)


async def consume(settings: Settings, client: redis.asyncio.Redis, consumer: str, stop: threading.Event) -> None:
    """Run one consumer of the online stream on `client` until `stop` is set."""
    observer = BufferedCallObserver(dict(settings.judge_prices), SpendReservations(client, marker_seconds(settings)))
    judge = make_judge(settings.default_judge, settings, observer)
    processor = PostProcessor(settings, client, judge, observer)
    stream = OnlineStream(client, posts.stream_key(settings), consumer,
                          marker_seconds=2 * settings.worker_redis_outage_seconds)
    try:
        await OnlineConsumer(settings, stream, processor, observer).run(stop)
    finally:
        if judge is not None:
            await judge.aclose()
