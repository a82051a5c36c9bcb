"""The group committer against a real Redis: what lands, what a failing command does, and that it groups."""

from __future__ import annotations

import asyncio
import enum
import uuid

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from ragpulse.store.atomic import MAX_COMMAND_ARGS, GroupCommitter, queued_commands
from ragpulse.exceptions import StoreRefused
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
