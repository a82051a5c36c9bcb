"""The group commit, in one home: concurrent callers on one event loop each submit an item and await its answer; the
items that arrive while a send is in flight go together in the next send, so that a round trip and its overhead are
shared instead of paid per caller (the online ingest's atomic groups, a chunk run's results).

With one caller it costs one send; with many, one send per round trip. A send that raises gives its error to every
caller of that send, and an answer that is an exception to its own caller only. Bound to the event loop it is first
used on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import redis

T = TypeVar("T")
R = TypeVar("R")

Send = Callable[[list[T]], Awaitable[Sequence[R | BaseException]]]
"""Sends a group of items in one round trip; answers each item's result or exception, in order."""


class GroupCommit(Generic[T, R]):
    """Items of concurrent callers sent together: `await submit(item)` returns the item's answer from `send`.

    `most` caps the items of one send (0: no cap). With `same_turn`, the first send waits one turn of the event loop
    so that the items submitted in the same turn (results that finished together) join it."""

    def __init__(self, send: Send[T, R], *, most: int = 0, same_turn: bool = False) -> None:
        self._send, self._most, self._same_turn = send, most, same_turn
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._sender: asyncio.Future[None] | None = None

    async def submit(self, item: T) -> R:
        """Send `item` with the others waiting, and return its answer (or raise its error)."""
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, done))
        if self._sender is None:
            self._sender = asyncio.ensure_future(self._send_all())
        return await done

    async def _send_all(self) -> None:
        group: list[tuple[T, asyncio.Future[R]]] = []
        try:
            if self._same_turn:
                await asyncio.sleep(0)
            while self._waiting:
                cut = self._most or len(self._waiting)
                group, self._waiting = self._waiting[:cut], self._waiting[cut:]
                try:
                    answers: Sequence[R | BaseException] = await self._send([item for item, _ in group])
                except Exception as exc:  # noqa: BLE001 - handed to every caller of this send, who raises it
                    answers = [exc] * len(group)
                _settle(group, answers)
                group = []
        except BaseException:  # cancelled (the loop is closing): nobody may wait forever on a write
            lost = redis.ConnectionError("the write was cancelled before Redis answered")
            _settle(group + self._waiting, [lost] * (len(group) + len(self._waiting)))
            self._waiting = []
            raise
        finally:
            self._sender = None


def _settle(group: list[tuple[T, asyncio.Future[R]]], answers: Sequence[R | BaseException]) -> None:
    for (_, done), answer in zip(group, answers, strict=True):
        if done.done():  # its caller went away (cancelled)
            continue
        if isinstance(answer, BaseException):
            done.set_exception(answer)
        else:
            done.set_result(answer)
