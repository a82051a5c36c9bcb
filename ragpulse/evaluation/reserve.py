"""Reserve judge calls in Redis before they are sent, so a worker killed mid-call never leaves a call uncounted.

Every call that is about to be sent waits until its reservation (one call, its estimated input tokens and cost) is
in Redis; its observer settles the difference to the actual usage with the run's next write of counted calls, or
gives the reservation back when the attempt failed. Reservations of calls that start while one is on its way go
together in the next script call (group commit): with many calls in flight, a busy event loop starts them in bursts,
and a burst costs one small EVALSHA, its numbers as arguments. Each call is numbered per run, so a reservation sent
again (a reply lost to a Redis restart) applies once without a marker key of its own.

A SIGKILL can over-count only: the reservations of calls that were reserved and never sent, and the settlement of
calls whose actual usage was not written yet (their estimate stands).
"""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio

from ragpulse.config import keys
from ragpulse.store.spend import SpendLedger, SpendTarget, add_spend, no_spend
from ragpulse.model.results import Spend
from ragpulse.store import scripts


class SpendReservations:
    """One run's reservations of judge calls (a chunk run's, an online consumer's), sent in groups."""

    def __init__(self, client: redis.asyncio.Redis, run_key_seconds: int) -> None:
        self._script = client.register_script(scripts.RESERVE_SPEND)
        self._run_key = keys.spend_reservations(uuid.uuid4().hex)
        self._run_key_seconds = run_key_seconds
        self._number = 0
        self._pending: dict[SpendTarget, Spend] = {}
        self._waiting: list[asyncio.Future[None]] = []
        self._sender: asyncio.Task[None] | None = None

    async def reserve(self, target: SpendTarget, spend: Spend) -> None:
        """Return once `spend` is counted against `target` in Redis; raise the Redis error when it could not be
        (the client's own retries ride out an outage first), and then the call must not be sent."""
        add_spend(self._pending.setdefault(target, no_spend()), spend)
        done = asyncio.get_running_loop().create_future()
        self._waiting.append(done)
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_all())
        await done

    async def _send_all(self) -> None:
        try:
            while self._waiting:
                reserved, waiting = self._pending, self._waiting
                self._pending, self._waiting = {}, []
                self._number += 1
                keys_, args = SpendLedger.reservation(self._run_key, self._number, self._run_key_seconds, reserved)
                try:
                    await self._script(keys=keys_, args=args)
                except BaseException as exc:
                    _settle(waiting, exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                _settle(waiting, None)
        finally:
            self._sender = None
            _settle(self._waiting, redis.ConnectionError("the reservation was cancelled before Redis answered"))
            self._waiting = []


def _settle(waiting: list[asyncio.Future[None]], exc: BaseException | None) -> None:
    for done in waiting:
        if done.done():  # its caller went away (cancelled)
            continue
        if exc is None:
            done.set_result(None)
        else:
            done.set_exception(exc)
