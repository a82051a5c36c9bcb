"""The online stream's consumer-group operations and a post's processing, against a real Redis (no API, no worker
process): exactly-once counting on acknowledgement, claiming, refreshing, forgetting stopped consumers, giving up
on a post that kept failing, and the backlog the lag gauge reads."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import msgspec
import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.model.trace import Trace
from ragpulse.monitoring.sampling import SamplingPolicy
from ragpulse.online import post as posts
from ragpulse.online.consumer import OnlineConsumer
from ragpulse.online.process import BufferedCallObserver, PostProcessor
from ragpulse.online.stream import Done, OnlineStream, backlog
from ragpulse.exceptions import Backlogged, OverBacklogShare
from ragpulse.store.atomic import GroupCommitter, Writes


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def stream_key() -> str:
    return f"ragpulse:test:online:{uuid.uuid4().hex}"


async def _stream(redis_url: str, key: str, consumer: str = "c1") -> OnlineStream:
    stream = OnlineStream(AsyncRedis.from_url(redis_url), key, consumer)
    await stream.ensure_group()
    return stream


def test_a_post_acknowledged_twice_is_counted_once(redis_url: str, redis_client: redis.Redis,
                                                   stream_key: str) -> None:
    counter = f"{stream_key}:count"

    async def main() -> tuple[list[bool], list[bool]]:
        first = await _stream(redis_url, stream_key, "slow")
        second = await _stream(redis_url, stream_key, "claimer")
        entry_id = await first.client.xadd(stream_key, {b"p": b"x"})
        await first.read(10, 100)
        # The first consumer looks dead; the second claims the post and finishes it first.
        claimed = await second.claim_stale(0, 10)
        assert [e for e, _ in claimed.entries] == [entry_id] and claimed.deliveries[entry_id] == 2
        writes = [("INCR", counter)]
        by_claimer = await second.acknowledge([Done(entry_id, writes)], [], "a")
        by_slow = await first.acknowledge([Done(entry_id, writes)], [], "b")   # the slow one finishes after all
        return by_claimer, by_slow

    assert run(main()) == ([True], [False])
    assert redis_client.get(counter) == b"1"
    assert redis_client.xlen(stream_key) == 0, "an acknowledged post is deleted"


def test_shared_writes_apply_even_when_no_post_is_new(redis_url: str, redis_client: redis.Redis,
                                                      stream_key: str) -> None:
    async def main() -> None:
        stream = await _stream(redis_url, stream_key)
        await stream.acknowledge([], [("INCRBYFLOAT", f"{stream_key}:spend", 0.25)], "n1")
        await stream.acknowledge([], [("INCRBYFLOAT", f"{stream_key}:spend", 0.5)], "n2")
    run(main())
    assert float(redis_client.get(f"{stream_key}:spend")) == 0.75


def test_an_acknowledgement_sent_again_after_a_lost_reply_applies_its_shared_writes_once(
        redis_url: str, redis_client: redis.Redis, stream_key: str) -> None:
    """The judge calls' counts and the tenant's spend ride on the acknowledgement; the client retries a call whose
    connection dropped after Redis ran it, and the consumer sends a failed acknowledgement again: once applied, the
    same nonce applies them no more (before: judge cost and spend counted twice)."""
    spend = [("INCRBYFLOAT", f"{stream_key}:spend", 0.25)]

    async def main() -> None:
        stream = await _stream(redis_url, stream_key)
        entry_id = await stream.client.xadd(stream_key, {b"p": b"x"})
        await stream.read(10, 100)
        done = [Done(entry_id, [("INCR", f"{stream_key}:count")])]
        assert await stream.acknowledge(done, spend, "same") == [True]
        assert await stream.acknowledge(done, spend, "same") == [False]        # the reply was lost: sent again
    run(main())
    assert float(redis_client.get(f"{stream_key}:spend")) == 0.25 and redis_client.get(f"{stream_key}:count") == b"1"
    marker = f"{stream_key}:ack:same"
    assert 0 < redis_client.ttl(marker) <= 2 * 60


def test_refreshed_posts_are_not_claimed(redis_url: str, stream_key: str) -> None:
    async def main() -> tuple[int, int]:
        owner = await _stream(redis_url, stream_key, "owner")
        other = await _stream(redis_url, stream_key, "other")
        entry_id = await owner.client.xadd(stream_key, {b"p": b"x"})
        await owner.read(10, 100)
        await asyncio.sleep(0.3)
        await owner.refresh([entry_id])
        kept = await other.claim_stale(200, 10)
        await asyncio.sleep(0.3)
        taken = await other.claim_stale(200, 10)
        return len(kept.entries), len(taken.entries)

    assert run(main()) == (0, 1)


def test_stopped_consumers_are_forgotten_unless_they_hold_posts(redis_url: str, redis_client: redis.Redis,
                                                               stream_key: str) -> None:
    async def main() -> None:
        holder = await _stream(redis_url, stream_key, "holder")
        await holder.client.xadd(stream_key, {b"p": b"x"})
        await holder.read(10, 100)
        idle = await _stream(redis_url, stream_key, "idle")
        await idle.read(10, 10)                                      # registers, holds nothing
        me = await _stream(redis_url, stream_key, "me")
        await asyncio.sleep(0.2)
        await me.forget_gone_consumers(100)

    run(main())
    names = {c["name"] for c in redis_client.xinfo_consumers(stream_key, keys.ONLINE_GROUP)}
    assert names == {b"holder", b"me"}   # the caller keeps itself


def test_backlog_reads_the_oldest_unprocessed_posts_age(redis_client: redis.Redis, stream_key: str) -> None:
    assert backlog(redis_client, stream_key).posts == 0
    assert backlog(redis_client, stream_key).oldest_age_seconds == 0.0
    redis_client.xadd(stream_key, {b"p": b"x"}, id=f"{int(time.time() * 1000) - 90_000}-0")
    redis_client.xadd(stream_key, {b"p": b"y"})
    waiting = backlog(redis_client, stream_key)
    assert waiting.posts == 2 and 89 < waiting.oldest_age_seconds < 100


def _consumer(redis_url: str, key: str, settings: Settings) -> OnlineConsumer:
    client = AsyncRedis.from_url(redis_url)
    observer = BufferedCallObserver({})
    processor = PostProcessor(settings, client, None, observer)
    return OnlineConsumer(settings, OnlineStream(client, key, "c"), processor, observer)


def _post(tenant: str, n: int, sampled: bool) -> posts.Post:
    traces = [Trace(query=f"q{i}", trace_id=f"{tenant}-{i}", answer="A.") for i in range(n)]
    decisions = [posts.Decision(sampled, "sampled" if sampled else "not_sampled", []) for _ in traces]
    return posts.Post(tenant=tenant, received_at="2026-11-30T00:00:00.000Z", traces=traces, decisions=decisions)


def test_a_post_delivered_too_often_is_recorded_failed(redis_url: str, redis_client: redis.Redis) -> None:
    tenant = f"t{uuid.uuid4().hex[:8]}"
    settings = Settings(queue_prefix=f"q{uuid.uuid4().hex[:8]}")
    consumer = _consumer(redis_url, posts.stream_key(settings), settings)
    post = _post(tenant, 2, sampled=True)
    fields = {posts.POST_FIELD: msgspec.msgpack.encode(post)}

    writes = run(consumer._writes(b"1-0", fields, deliveries=6))
    with redis_client.pipeline() as pipe:
        pipe.command_stack.extend((args, {}) for args in writes)
        pipe.execute()
    record = msgspec.msgpack.decode(redis_client.get(keys.online_trace(tenant, f"{tenant}-0")))
    assert record["status"] == "failed" and "delivered 5 times" in record["error"]
    assert any(args[0] == "HINCRBYFLOAT" and "ragpulse_online_posts_failed" in str(args[2]) and
               "redelivered" in str(args[2]) for args in writes)


def test_an_unreadable_post_is_counted_and_dropped(redis_url: str) -> None:
    settings = Settings(queue_prefix=f"q{uuid.uuid4().hex[:8]}")
    consumer = _consumer(redis_url, posts.stream_key(settings), settings)
    writes = run(consumer._writes(b"1-0", {posts.POST_FIELD: b"\xc1 not msgpack"}, deliveries=1))
    assert [args[0] for args in writes] == ["HINCRBYFLOAT", "EXPIRE"]
    assert "undecodable" in str(writes[0][2])


def test_the_consumer_processes_counts_and_deletes_posts(redis_url: str, redis_client: redis.Redis) -> None:
    tenant = f"t{uuid.uuid4().hex[:8]}"
    settings = Settings(queue_prefix=f"q{uuid.uuid4().hex[:8]}")
    key = posts.stream_key(settings)
    writes = Writes()
    staged = posts.stage_post(writes, settings, tenant, [Trace(query="q", trace_id=f"{tenant}-a", answer="A.")],
                              {"default": SamplingPolicy(sample_rate=0.0)}, "2026-11-30T00:00:00.000Z")
    for args in writes.group:
        redis_client.execute_command(*args)
    assert staged.sampled_ids == []
    stop = threading.Event()

    async def main() -> None:
        consumer = _consumer(redis_url, key, settings)
        task = asyncio.create_task(consumer.run(stop))
        deadline = time.monotonic() + 10
        while redis_client.xlen(key) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        stop.set()
        await task

    run(main())
    assert redis_client.xlen(key) == 0
    assert redis_client.get(keys.online_trace(tenant, f"{tenant}-a")) is None
    assert redis_client.xpending(key, keys.ONLINE_GROUP)["pending"] == 0


def test_the_consumer_stops_though_a_round_trip_in_progress_swallows_its_cancellation(
        redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py's asyncio client was seen to lose a cancellation inside its timeouts and retries (a chunk run's
    heartbeat then renewed its leases for ever); a helper loop that only a cancellation ends would never end."""
    settings = Settings(queue_prefix=f"q{uuid.uuid4().hex[:8]}", online_claim_idle_seconds=1)
    refreshes: list[float] = []

    async def refresh_swallowing_cancel(self: OnlineStream, entry_ids: list[bytes]) -> None:
        refreshes.append(time.monotonic())
        try:
            await asyncio.sleep(0.2)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)   # the cancellation is lost here: the round trip "goes on" and returns

    monkeypatch.setattr(OnlineStream, "refresh", refresh_swallowing_cancel)
    stop = threading.Event()

    async def main() -> float:
        consumer = _consumer(redis_url, posts.stream_key(settings), settings)
        task = asyncio.create_task(consumer.run(stop))
        while len(refreshes) < 2:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.05)   # a refresh is in progress
        stop.set()
        stopped = time.monotonic()
        await asyncio.wait_for(task, 5)
        return time.monotonic() - stopped

    assert run(main()) < 2
    assert len(refreshes) <= 3


def _two_tenants(cap: int) -> Settings:
    return Settings(queue_prefix=f"q{uuid.uuid4().hex[:8]}", online_max_backlog=cap,
                    api_key_digests={"digest-a": "a", "digest-b": "b"})


async def _post_online(committer: GroupCommitter, settings: Settings, tenant: str, tag: str) -> None:
    """What POST /v1/traces commits for one trace: the tenant's room, then the post's writes."""
    pipe = Writes()
    posts.stage_post(pipe, settings, tenant, [Trace(query="q", trace_id=tag)], {"default": SamplingPolicy()},
                     "2026-11-30T00:00:00.000Z")
    await committer.apply([posts.room_for(settings, tenant), *pipe.group])


def test_a_tenant_holding_its_share_is_refused_while_another_posts(redis_url: str, redis_client: redis.Redis) -> None:
    settings = _two_tenants(cap=4)     # two tenants: a share is 4 // 2 = 2 posts
    stream = posts.stream_key(settings)
    shares = keys.online_backlog_shares(stream)

    async def main() -> list[str]:
        client = AsyncRedis.from_url(redis_url)
        committer = GroupCommitter(client)
        refusals = []
        for tenant, tag in [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("b", "b2"), ("b", "b3")]:
            try:
                await _post_online(committer, settings, tenant, tag)
            except Backlogged as exc:
                refusals.append(f"{tag} {type(exc).__name__}")
        # A worker processes a's first post; a second worker that claimed it acknowledges it too.
        worker, late = await _stream(redis_url, stream, "w"), await _stream(redis_url, stream, "late")
        (entry_id, fields), *_ = await worker.read(1, 100)
        tenant = fields[posts.TENANT_FIELD]
        await worker.acknowledge([Done(entry_id, [], tenant)], [], "w")
        await late.acknowledge([Done(entry_id, [], tenant)], [], "l")
        await _post_online(committer, settings, "a", "a4")     # room again for a, in a's share
        await client.aclose()
        return refusals

    # Without shares a3 fills the stream's third place and b's posts are refused with the stream full.
    assert run(main()) == ["a3 OverBacklogShare", "b3 Backlogged"]
    assert redis_client.hgetall(shares) == {b"a": b"2", b"b": b"2"}, "a's acknowledged post was given back once"
    assert redis_client.xlen(stream) == 4
    assert 0 < redis_client.ttl(shares) <= defaults.ONLINE_SHARES_TTL_SECONDS


def test_a_deployments_only_tenant_may_fill_the_stream(redis_url: str, redis_client: redis.Redis) -> None:
    settings = Settings(queue_prefix=f"q{uuid.uuid4().hex[:8]}", online_max_backlog=3)   # open: tenant "default"

    async def main() -> BaseException | None:
        client = AsyncRedis.from_url(redis_url)
        committer = GroupCommitter(client)
        for n in range(3):
            await _post_online(committer, settings, "default", f"d{n}")
        try:
            await _post_online(committer, settings, "default", "over")
        except Backlogged as exc:
            return exc
        finally:
            await client.aclose()
        return None

    refused = run(main())
    assert type(refused) is Backlogged and refused.held == 3      # the stream's cap, not a share


def test_a_share_count_left_behind_by_a_deleted_stream_heals(redis_url: str, redis_client: redis.Redis) -> None:
    settings = _two_tenants(cap=2)
    stream = posts.stream_key(settings)
    redis_client.hset(keys.online_backlog_shares(stream), "a", 5)   # the stream is gone, its count is not

    async def main() -> None:
        client = AsyncRedis.from_url(redis_url)
        await _post_online(GroupCommitter(client), settings, "a", "a1")
        await client.aclose()

    run(main())
    assert redis_client.hgetall(keys.online_backlog_shares(stream)) == {b"a": b"1"}


def test_over_its_share_is_refused_on_the_transaction_path_too(redis_url: str, redis_client: redis.Redis) -> None:
    settings = _two_tenants(cap=2)

    async def main() -> list[type]:
        client = AsyncRedis.from_url(redis_url)
        committer = GroupCommitter(client)
        outcomes = []
        for tag in ("a1", "a2"):
            pipe = Writes()
            posts.stage_post(pipe, settings, "a", [Trace(query="q", trace_id=tag)], {"default": SamplingPolicy()},
                             "2026-11-30T00:00:00.000Z")
            try:
                await committer._transaction([posts.room_for(settings, "a"), *pipe.group])
                outcomes.append(type(None))
            except Backlogged as exc:
                outcomes.append(type(exc))
        await client.aclose()
        return outcomes

    assert run(main()) == [type(None), OverBacklogShare]
