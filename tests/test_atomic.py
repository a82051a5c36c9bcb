"""The group committer against a real Redis: what lands, what a failing command does, and that it groups."""

from __future__ import annotations

import asyncio
import enum
import uuid

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from ragpulse.store.atomic import MAX_COMMAND_ARGS, GroupCommitter, once, queued_commands, remember, take_tokens
from ragpulse.exceptions import AlreadyAnswered, IdempotencyKeyReused, RateLimited, StoreRefused
from ragpulse.ops.redis_server import PrivateRedis


class Status(str, enum.Enum):  # RQ passes its JobStatus, a str enum, as a hash value
    QUEUED = "queued"


def run(coroutine_fn, redis_url: str):  # noqa: ANN001, ANN201
    async def main():  # noqa: ANN202
        client = AsyncRedis.from_url(redis_url)
        try:
            return await coroutine_fn(GroupCommitter(client), client)
        finally:
            await client.aclose()
    return asyncio.run(main())


@pytest.fixture
def prefix(redis_client: redis.Redis):  # noqa: ANN201
    prefix = f"test-atomic:{uuid.uuid4().hex[:8]}"
    yield prefix
    for key in redis_client.scan_iter(f"{prefix}*"):
        redis_client.delete(key)


def test_values_land_as_redis_py_writes_them(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    values = {"int": 604800, "float": 1764500000.123456, "str": "héllo", "bytes": b"\x00\xff\r\n$3\r\n",
              "enum": Status.QUEUED, "empty": ""}
    with redis_client.pipeline(transaction=True) as pipe:
        pipe.hset(f"{prefix}:h", mapping=values)
        pipe.zadd(f"{prefix}:z", {"m": values["float"]})
        pipe.expire(f"{prefix}:h", 60)
        group = queued_commands(pipe)
    assert len(group) == 3 and not pipe.command_stack
    run(lambda committer, _: committer.apply(group), redis_url)

    with redis_client.pipeline(transaction=True) as pipe:  # the same writes through redis-py, for comparison
        pipe.hset(f"{prefix}:h2", mapping=values)
        pipe.execute()
    assert redis_client.hgetall(f"{prefix}:h") == redis_client.hgetall(f"{prefix}:h2")
    assert redis_client.hget(f"{prefix}:h", "bytes") == values["bytes"]
    assert redis_client.zscore(f"{prefix}:z", "m") == values["float"]
    assert 0 < redis_client.ttl(f"{prefix}:h") <= 60


def test_a_failing_command_fails_its_own_group_only(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    redis_client.set(f"{prefix}:string", "x")
    groups = [
        [("SET", f"{prefix}:a", "1")],
        [("SET", f"{prefix}:b", "1"), ("HSET", f"{prefix}:string", "f", "v"), ("SET", f"{prefix}:c", "1")],
        [("SET", f"{prefix}:d", "1")],
    ]

    async def apply_all(committer: GroupCommitter, _):  # noqa: ANN001, ANN202
        return await asyncio.gather(*(committer.apply(g) for g in groups), return_exceptions=True)

    first, second, third = run(apply_all, redis_url)
    assert first is None and third is None
    assert isinstance(second, StoreRefused) and "WRONGTYPE" in str(second)
    # the failing group stopped at its failing command: what came before it stays, what came after never ran
    assert redis_client.exists(f"{prefix}:a", f"{prefix}:b", f"{prefix}:d") == 3
    assert not redis_client.exists(f"{prefix}:c")


def test_concurrent_groups_share_script_calls(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    n = 200

    async def apply_concurrently(committer: GroupCommitter, client: AsyncRedis) -> int:
        await committer.apply([("SET", f"{prefix}:warm", "1")])  # loads the script
        before = (await client.info("commandstats")).get("cmdstat_evalsha", {}).get("calls", 0)
        await asyncio.gather(*(committer.apply([("INCR", f"{prefix}:n")]) for _ in range(n)))
        return (await client.info("commandstats"))["cmdstat_evalsha"]["calls"] - before

    calls = run(apply_concurrently, redis_url)
    assert redis_client.get(f"{prefix}:n") == str(n).encode()
    # 200 groups in at most ceil(200 / 64) + 1 calls; other clients of a shared Redis may add a few
    assert calls < n / 10, calls


def test_the_longest_command_the_script_takes_lands(redis_url: str, redis_client: redis.Redis,
                                                    prefix: str) -> None:
    fields = (MAX_COMMAND_ARGS - 2) // 2
    command = ("HSET", f"{prefix}:wide", *[x for i in range(fields) for x in (f"f{i}", i)])
    assert len(command) == MAX_COMMAND_ARGS
    run(lambda committer, _: committer.apply([command]), redis_url)
    assert redis_client.hlen(f"{prefix}:wide") == fields


def test_a_command_too_long_for_lua_still_lands(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    fields = MAX_COMMAND_ARGS  # HSET key + 2 words per field: well over the script's limit
    command = ("HSET", f"{prefix}:wide", *[x for i in range(fields) for x in (f"f{i}", i)])
    run(lambda committer, _: committer.apply([command, ("SET", f"{prefix}:after", "1")]), redis_url)
    assert redis_client.hlen(f"{prefix}:wide") == fields and redis_client.exists(f"{prefix}:after")

    redis_client.set(f"{prefix}:string", "x")  # and a failing command there is refused like one in the script
    refused = ("HSET", f"{prefix}:string", *command[2:])
    with pytest.raises(StoreRefused, match="WRONGTYPE"):
        run(lambda committer, _: committer.apply([refused]), redis_url)


def test_an_unreachable_redis_fails_every_waiting_group(redis_url: str) -> None:
    async def apply_unreachable(_committer, _client):  # noqa: ANN001, ANN202
        client = AsyncRedis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
        committer = GroupCommitter(client)
        try:
            return await asyncio.gather(*(committer.apply([("SET", "k", "v")]) for _ in range(3)),
                                        return_exceptions=True)
        finally:
            await client.aclose()

    results = run(apply_unreachable, redis_url)
    assert all(isinstance(r, redis.ConnectionError) for r in results), results


def test_a_group_sent_alone_lands_or_fails_the_same_way(redis_url: str, redis_client: redis.Redis,
                                                        prefix: str) -> None:
    redis_client.set(f"{prefix}:string", "x")
    run(lambda committer, _: committer.apply([("SET", f"{prefix}:big", b"x" * 1_000_000)], alone=True), redis_url)
    assert redis_client.strlen(f"{prefix}:big") == 1_000_000
    with pytest.raises(StoreRefused, match="WRONGTYPE"):
        run(lambda committer, _: committer.apply([("LPUSH", f"{prefix}:string", "v")], alone=True), redis_url)


def test_the_script_is_reloaded_after_redis_forgets_it() -> None:
    server = PrivateRedis().start()  # SCRIPT FLUSH reaches every client of a server: not on a shared REDIS_URL
    try:
        async def apply_across_a_flush(committer: GroupCommitter, client: AsyncRedis) -> bytes:
            await committer.apply([("SET", "n", 0)])
            await client.script_flush()  # as after a Redis restart: the server has forgotten every script
            await asyncio.gather(*(committer.apply([("INCR", "n")]) for _ in range(5)))
            return await client.get("n")

        assert run(apply_across_a_flush, server.url) == b"5"
    finally:
        server.stop()


def test_a_take_guards_its_group_with_a_token_bucket(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    """Tokens and the writes they pay for go together: a group whose TAKE finds too few tokens writes nothing and
    says how long to wait; other groups of the same call are applied. Shared, the alone and the MULTI/EXEC paths
    (a command too long for the script) refuse alike."""
    bucket = f"{prefix}:bucket"

    def guarded(n: int, name: str, big: bool = False) -> list:
        write = ("RPUSH", f"{prefix}:{name}", *range(MAX_COMMAND_ARGS + 1 if big else 1))
        return [take_tokens(bucket, n, 10, 100), write]

    async def scenario(committer: GroupCommitter, _):  # noqa: ANN001, ANN202
        shared = await asyncio.gather(committer.apply(guarded(60, "a")), committer.apply(guarded(60, "b")),
                                      return_exceptions=True)
        alone = await asyncio.gather(committer.apply(guarded(50, "c"), alone=True), return_exceptions=True)
        multi = await asyncio.gather(committer.apply(guarded(50, "d", big=True)), return_exceptions=True)
        return shared + alone + multi

    a, b, c, d = run(scenario, redis_url)
    assert a is None and redis_client.exists(f"{prefix}:a")
    for refused, name in ((b, "b"), (c, "c"), (d, "d")):
        assert isinstance(refused, RateLimited) and not redis_client.exists(f"{prefix}:{name}"), name
    # 40 tokens left (and a few refilled); 60 more at 10 a second: about 2 seconds, never less than the gap.
    assert 1.5 <= b.retry_after <= 2.0 and 0.5 <= c.retry_after <= 1.0
    assert float(redis_client.hget(bucket, "tokens")) == pytest.approx(40, abs=1)
    assert 0 < redis_client.pttl(bucket) <= 7000            # gone once refilled: (100 - 40) / 10 s + 1 s


def test_a_bucket_refills_at_its_rate(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    bucket = f"{prefix}:bucket"

    async def scenario(committer: GroupCommitter, _):  # noqa: ANN001, ANN202
        await committer.apply([take_tokens(bucket, 5, 20, 5), ("SET", f"{prefix}:x", "1")])
        with pytest.raises(RateLimited) as refused:
            await committer.apply([take_tokens(bucket, 2, 20, 5), ("SET", f"{prefix}:y", "1")])
        await asyncio.sleep(refused.value.retry_after + 0.02)
        await committer.apply([take_tokens(bucket, 2, 20, 5), ("SET", f"{prefix}:y", "1")])
        return refused.value.retry_after

    wait = run(scenario, redis_url)
    assert 0.05 < wait <= 0.1 and redis_client.exists(f"{prefix}:y")


def test_writes_record_the_commands_a_pipeline_would_send() -> None:
    """Writes stands in for a redis-py pipeline on the write-only paths: the same calls must give the same commands."""
    import redis as sync_redis  # noqa: PLC0415

    from ragpulse.store.atomic import Writes  # noqa: PLC0415

    def calls(target) -> None:  # noqa: ANN001
        target.hincrbyfloat("h", "f", 0.25)
        target.hincrby("h", "n", 3)
        target.expire("h", 60)
        target.set("s", b"v")
        target.set("s", b"v", ex=30)
        target.xadd("x", {b"p": b"payload"})

    writes = Writes()
    calls(writes)
    pipe = sync_redis.Redis().pipeline(transaction=False)   # never executed, never connected
    calls(pipe)
    assert writes.group == [args for args, _options in pipe.command_stack]


def _kept(prefix: str, fingerprint: str = "fp", most: int = 10) -> tuple:
    record = f"{prefix}:idem:k"
    return once(record, fingerprint), remember(record, fingerprint, 202, b'{"ok":1}', 60, f"{prefix}:idem-index", most)


@pytest.mark.parametrize("path", ["script", "transaction"])
def test_a_keyed_group_is_applied_once_and_its_answer_replayed(redis_url: str, redis_client: redis.Redis,
                                                                prefix: str, path: str) -> None:
    guard, keep = _kept(prefix)
    group = [guard, ("INCR", f"{prefix}:count"), keep]

    async def main(committer: GroupCommitter, _) -> list[BaseException | None]:
        apply = committer.apply if path == "script" else committer._transaction
        outcomes = []
        for fingerprint in ("fp", "fp", "other"):
            try:
                await apply([once(f"{prefix}:idem:k", fingerprint), *group[1:]])
                outcomes.append(None)
            except (AlreadyAnswered, IdempotencyKeyReused) as exc:
                outcomes.append(exc)
        return outcomes

    first, retried, reused = run(main, redis_url)
    assert first is None and isinstance(retried, AlreadyAnswered) and isinstance(reused, IdempotencyKeyReused)
    assert (retried.status, retried.body) == (202, b'{"ok":1}')
    assert redis_client.get(f"{prefix}:count") == b"1"
    assert 0 < redis_client.ttl(f"{prefix}:idem:k") <= 60
    assert redis_client.zrange(f"{prefix}:idem-index", 0, -1) == [f"{prefix}:idem:k".encode()]


def test_a_group_refused_after_its_once_keeps_no_key(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    """A post refused (here by its token bucket) is not remembered: its retry is committed."""
    guard, keep = _kept(prefix)

    async def main(committer: GroupCommitter, _) -> None:
        with pytest.raises(RateLimited):
            await committer.apply([guard, take_tokens(f"{prefix}:bucket", 5, 1, 1), ("INCR", f"{prefix}:n"), keep])
        await committer.apply([guard, ("INCR", f"{prefix}:n"), keep])

    run(main, redis_url)
    assert redis_client.get(f"{prefix}:n") == b"1" and redis_client.exists(f"{prefix}:idem:k")


def test_two_concurrent_posts_with_one_key_are_committed_once(redis_url: str, redis_client: redis.Redis,
                                                              prefix: str) -> None:
    guard, keep = _kept(prefix)

    async def main(committer: GroupCommitter, _) -> list:
        group = [guard, ("INCR", f"{prefix}:n"), keep]
        return await asyncio.gather(committer.apply(group), committer.apply(group), return_exceptions=True)

    outcomes = run(main, redis_url)
    assert sorted(type(o).__name__ for o in outcomes) == ["AlreadyAnswered", "NoneType"]
    assert redis_client.get(f"{prefix}:n") == b"1"


def test_a_tenant_keeps_its_newest_keys_only(redis_url: str, redis_client: redis.Redis, prefix: str) -> None:
    async def main(committer: GroupCommitter, _) -> None:
        for n in range(5):
            record = f"{prefix}:idem:{n}"
            await committer.apply([once(record, "fp"), remember(record, "fp", 202, b"{}", 60, f"{prefix}:index", 3)])

    run(main, redis_url)
    assert redis_client.zrange(f"{prefix}:index", 0, -1) == [f"{prefix}:idem:{n}".encode() for n in (2, 3, 4)]
    assert [redis_client.exists(f"{prefix}:idem:{n}") for n in range(5)] == [0, 0, 1, 1, 1]
