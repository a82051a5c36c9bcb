"""The group commit (ragpulse.store.group_commit): what callers that submit together get, and how many sends it
takes."""

from __future__ import annotations

import asyncio

import pytest
import redis

from ragpulse.store.group_commit import GroupCommit


class Sends:
    """A send that records each group, answers item * 10, an item < 0 as its own error, and raises on `fail`."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []
        self.fail: Exception | None = None

    async def __call__(self, items: list[int]) -> list[int | BaseException]:
        self.groups.append(items)
        await asyncio.sleep(0.01)   # a round trip: later callers wait for the next send
        if self.fail is not None:
            raise self.fail
        return [ValueError(f"item {i}") if i < 0 else i * 10 for i in items]


def test_callers_that_arrive_while_a_send_is_in_flight_go_together_in_the_next() -> None:
    sends = Sends()

    async def run() -> list[int]:
        commit: GroupCommit[int, int] = GroupCommit(sends)
        first = asyncio.ensure_future(commit.submit(0))
        await asyncio.sleep(0)   # the first send is in flight
        return [await first, *await asyncio.gather(*(commit.submit(i) for i in range(1, 6)))]

    assert asyncio.run(run()) == [0, 10, 20, 30, 40, 50]
    assert sends.groups == [[0], [1, 2, 3, 4, 5]]


def test_same_turn_gathers_the_first_group_and_most_caps_a_send() -> None:
    sends = Sends()

    async def run() -> list[int]:
        commit: GroupCommit[int, int] = GroupCommit(sends, most=4, same_turn=True)
        return await asyncio.gather(*(commit.submit(i) for i in range(10)))

    assert asyncio.run(run()) == [i * 10 for i in range(10)]
    assert sends.groups == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_an_answer_that_is_an_error_reaches_its_caller_only_and_a_failed_send_every_caller_of_it() -> None:
    sends = Sends()

    async def run() -> tuple[list[object], list[object]]:
        commit: GroupCommit[int, int] = GroupCommit(sends, same_turn=True)
        mixed = await asyncio.gather(commit.submit(1), commit.submit(-1), commit.submit(2), return_exceptions=True)
        sends.fail = redis.ConnectionError("Redis went away")
        failed = await asyncio.gather(commit.submit(3), commit.submit(4), return_exceptions=True)
        sends.fail = None
        return mixed, [*failed, await commit.submit(5)]

    mixed, after = asyncio.run(run())
    assert mixed[0] == 10 and isinstance(mixed[1], ValueError) and mixed[2] == 20
    assert all(isinstance(a, redis.ConnectionError) for a in after[:2]) and after[2] == 50


def test_a_cancelled_send_fails_every_waiting_caller_instead_of_leaving_it_waiting() -> None:
    async def never(items: list[int]) -> list[int]:
        await asyncio.Event().wait()
        return items

    async def run() -> list[object]:
        commit: GroupCommit[int, int] = GroupCommit(never)
        waiting = [asyncio.ensure_future(commit.submit(i)) for i in range(3)]
        await asyncio.sleep(0.01)
        commit._sender.cancel()  # noqa: SLF001 - what the loop's shutdown does to it
        return await asyncio.gather(*waiting, return_exceptions=True)

    answers = asyncio.run(run())
    assert all(isinstance(a, redis.ConnectionError) for a in answers), answers


@pytest.mark.parametrize("most", [0, 2])
def test_every_item_gets_its_own_answer_in_order(most: int) -> None:
    sends = Sends()

    async def run() -> list[int]:
        commit: GroupCommit[int, int] = GroupCommit(sends, most=most)
        return await asyncio.gather(*(commit.submit(i) for i in range(7)))

    assert asyncio.run(run()) == [i * 10 for i in range(7)]
    assert sorted(i for group in sends.groups for i in group) == list(range(7))
