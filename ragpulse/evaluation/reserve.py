"""Reserve judge calls in Redis before they are sent, so a worker killed mid-call never leaves a call uncounted.

Every call about to be sent takes a reservation that is already in Redis: one call at an estimated input-token count
and cost. Its observer settles the difference to the actual usage with the run's next write of counted calls, or
gives the reservation back when the attempt failed. Reservations travel in one small script call (EVALSHA, numbers
as arguments) for all the calls that start together (group commit), numbered per run so that one sent again (a reply
lost to a Redis restart) applies once, without a marker key of its own.

A run may also reserve `ahead` calls in advance and top them up in the background once a quarter are taken: a call
that finds one takes it without waiting for Redis. Waiting for a round trip before every call cost little CPU, but a busy
(or niced) worker waits long to be scheduled again after each one, and the calls in flight thinned out. A chunk run
gives back what it did not use when it ends.

A SIGKILL can over-count only: the reservations made ahead and those of calls not sent yet, and the estimates of
calls whose settlement was not written yet (their actual tokens) -- never fewer calls than were sent.
"""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio

from ragpulse.config import keys
from ragpulse.model.results import Spend
from ragpulse.store import scripts
from ragpulse.store.spend import SpendLedger, SpendTarget, add_spend, no_spend

Waiter = tuple[Spend, "asyncio.Future[Spend]"]


class SpendReservations:
    """One run's reservations of judge calls (a chunk run's, an online consumer's), sent in groups."""

    def __init__(self, client: redis.asyncio.Redis, run_key_seconds: int, ahead: int = 0) -> None:
        self._script = client.register_script(scripts.RESERVE_SPEND)
        self._run_key = keys.spend_reservations(uuid.uuid4().hex)
        self._run_key_seconds = run_key_seconds
        self._ahead = ahead
        self._low = ahead - max(1, ahead // 4)
        """Top up once this few are left: a quarter taken (a top-up waits for the event loop and Redis, and a call that
        finds none left waits too)."""
        self._number = 0
        self._ready: dict[SpendTarget, list[Spend]] = {}
        """Calls reserved ahead and not taken yet, per target."""
        self._estimate: dict[SpendTarget, Spend] = {}
        """The latest call's reservation per target: what a call reserved ahead is counted at."""
        self._waiting: dict[SpendTarget, list[Waiter]] = {}
        self._sender: asyncio.Task[None] | None = None
        self._closed = False

    async def reserve(self, target: SpendTarget, spend: Spend) -> Spend:
        """A reservation of one call against `target`, in Redis by the time this returns: one reserved ahead (what it
        was counted at, returned), else `spend` itself. Raises the Redis error when it could not be counted (the
        client's own retries ride out an outage first), and then the call must not be sent."""
        self._estimate[target] = spend
        ready = self._ready.get(target)
        if ready:
            taken = ready.pop()
            if len(ready) <= self._low:
                self._start_sending()
            return taken
        done: asyncio.Future[Spend] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(target, []).append((spend, done))
        self._start_sending()
        return await done

    async def close(self) -> dict[SpendTarget, Spend]:
        """Stop reserving ahead; the calls reserved ahead and never taken, per target, for the caller to give back
        (once a reservation on its way has landed)."""
        self._closed = True
        if self._sender is not None:
            await asyncio.shield(self._sender)
        unused = {}
        for target, ready in self._ready.items():
            for spend in ready:
                add_spend(unused.setdefault(target, no_spend()), spend)
        self._ready.clear()
        return unused

    def unused_cost(self, target: SpendTarget) -> float:
        """USD of the calls reserved ahead for `target` and not taken yet."""
        return sum(spend.cost_usd for spend in self._ready.get(target, ()))

    def _start_sending(self) -> None:
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_all())

    def _refills(self) -> dict[SpendTarget, list[Spend]]:
        """Calls to reserve ahead per target: up to `ahead` once a quarter are taken (or a call waits)."""
        refills: dict[SpendTarget, list[Spend]] = {}
        if self._closed:
            return refills
        for target, estimate in self._estimate.items():
            have = len(self._ready.get(target, ()))
            if self._ahead and (have <= self._low or self._waiting.get(target)):
                refills[target] = [estimate] * (self._ahead - have)
        return refills

    async def _send_all(self) -> None:
        try:
            while self._waiting or self._refills():
                waiting, self._waiting = self._waiting, {}
                if not await self._send(waiting, self._refills()) and not self._waiting:
                    break   # Redis refused or is away: reserving ahead waits for the next call
        finally:
            self._sender = None
            for waiters in self._waiting.values():
                _settle(waiters, redis.ConnectionError("the reservation was cancelled before Redis answered"))
            self._waiting = {}

    async def _send(self, waiting: dict[SpendTarget, list[Waiter]], refills: dict[SpendTarget, list[Spend]]) -> bool:
        reserved: dict[SpendTarget, Spend] = {}
        for target, calls in [*((t, [s for s, _ in w]) for t, w in waiting.items()), *refills.items()]:
            for spend in calls:
                add_spend(reserved.setdefault(target, no_spend()), spend)
        self._number += 1
        keys_, args = SpendLedger.reservation(self._run_key, self._number, self._run_key_seconds, reserved)
        try:
            await self._script(keys=keys_, args=args)
        except BaseException as exc:
            for waiters in waiting.values():
                _settle(waiters, exc)
            if not isinstance(exc, Exception):
                raise
            return False
        for target, calls in refills.items():
            self._ready.setdefault(target, []).extend(calls)
        for waiters in waiting.values():
            _settle(waiters, None)
        return True


def _settle(waiters: list[Waiter], exc: BaseException | None) -> None:
    for spend, done in waiters:
        if done.done():  # its caller went away (cancelled)
            continue
        if exc is None:
            done.set_result(spend)
        else:
            done.set_exception(exc)
