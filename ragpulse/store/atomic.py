"""Apply groups of queued Redis writes atomically, one Lua script call for many groups.

The writes that create a job (the job record, its chunks, RQ's job hash and queue push, the metrics) are built by
the code that owns them (Store.stage_job, RQ's Queue.enqueue_many, MetricsBatch) on an ordinary redis-py pipeline
and never executed there: `queued_commands(pipe)` takes them off it as a *group*. A group is applied all-or-stop,
as MULTI/EXEC would: Redis runs a script atomically, and the script stops a group at its first failing command
(earlier writes of that group stay, as they do when one command of a transaction fails).

Why not MULTI/EXEC: on the single-trace ingest path, packing 18 commands and parsing 18 replies in redis-py, and
then a blocking round trip, were most of the API's CPU per request. As script arguments the same writes cost one
command; and `GroupCommitter` sends the groups of all requests that arrive while a round trip is in flight in the
next single call (group commit), awaited on the event loop instead of blocking it.

Like MULTI/EXEC across RQ's keys and ours, this needs a standalone Redis, not a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import hiredis
import redis
import redis.asyncio
import redis.client

from ragpulse.exceptions import (
    AlreadyAnswered, Backlogged, IdempotencyKeyReused, OverBacklogShare, RateLimited, StoreRefused,
)
from ragpulse.store.group_commit import GroupCommit
from ragpulse.store.scripts import (
    BACKLOG_ROOM, IDEMPOTENCY, INDEX_KEY, ONCE_CHECK, PACKED_COMMANDS, ROOM_FOR_POST, TAKE_TOKENS, TOKEN_BUCKET,
)

Command = Sequence[object]
Group = list[Command]

TAKE = "ragpulse.take"
"""Name of the pseudo-command that may open a group: `(TAKE, bucket key, n, rate, burst)` takes n tokens from a
token bucket (scripts.TOKEN_BUCKET) before the group's writes, and refuses the whole group when they are not there:
the tokens and the writes they pay for are taken together or not at all."""
RATE_LIMITED = "RATELIMITED "
"""Prefix of a group's result when its TAKE found too few tokens, followed by the milliseconds to wait."""
ROOM = "ragpulse.room"
"""Name of the pseudo-command `(ROOM, stream key, cap, shares key, tenant, tenants)`: refuse the whole group when the
stream already holds `cap` entries, so a queue whose consumers stalled pushes back on its producers instead of filling
Redis, or when the tenant holds its share of them (scripts.BACKLOG_ROOM), so one tenant's backlog cannot refuse
another's posts. A group opens with it (before a TAKE, so a refused post takes no tokens)."""
BACKLOG = "BACKLOG "
"""Prefix of a group's result when its ROOM found the stream full, followed by the stream's length."""
SHARE = "SHARE "
"""Prefix of a group's result when its ROOM found the tenant holding its share, followed by what it holds and the
share."""

ONCE = "ragpulse.once"
"""Name of the pseudo-command `(ONCE, record key, fingerprint)` that opens the group of a post sent with an
Idempotency-Key (scripts.IDEMPOTENCY): refuse the whole group when the key was answered before, so a retry is not
committed twice."""
REMEMBER = "ragpulse.remember"
"""Name of the pseudo-command `(REMEMBER, record key, fingerprint, status, body, ttl, index key, most)` that closes
such a group: keep the post's answer under its key, in the same atomic step as the post's writes."""
ANSWERED = "ANSWERED "
"""Prefix of a group's result when its ONCE found its key answered, followed by the status and the body answered."""
REUSED = "REUSED"
"""A group's result when its ONCE found its key used with another body."""

_APPLY_GROUPS = TOKEN_BUCKET + BACKLOG_ROOM + IDEMPOTENCY + PACKED_COMMANDS + r"""
local results = {}
for g = 1, #ARGV do
  local failed = false
  for _, args in ipairs(packed(ARGV[g])) do
    if args[1] == "ragpulse.take" then
      local wait = take(args[2], tonumber(args[3]), tonumber(args[4]), tonumber(args[5]))
      if wait > 0 then failed = "RATELIMITED " .. wait end
    elseif args[1] == "ragpulse.room" then
      local why = room(args[2], tonumber(args[3]), args[4], args[5], tonumber(args[6]))
      if why ~= "" then failed = why end
    elseif args[1] == "ragpulse.once" then
      local why = once(args[2], args[3])
      if why ~= "" then failed = why end
    elseif args[1] == "ragpulse.remember" then
      remember(args[2], args[3], args[4], args[5], args[6], args[7], args[8])
    else
      local reply = redis.pcall(unpack(args))
      if type(reply) == "table" and reply.err then failed = reply.err end
    end
    if failed then break end
  end
  results[g] = failed or ""
end
return results
"""
"""ARGV: one string per group, its commands in RESP as hiredis packs them (`*<argc>`, then `$<size>` and the bytes
of each argument). Returns one string per group: "" when every command succeeded, else the error of the first
that failed (the rest of that group skipped), or RATE_LIMITED and the milliseconds to wait when the group's TAKE
found too few tokens (nothing of that group written), or BACKLOG and the stream's length when its ROOM found the
stream full, or SHARE when it found the tenant holding its share (nothing of that group written: a ROOM goes
first), or ANSWERED or REUSED when its ONCE found its Idempotency-Key used (nothing written: a ONCE goes first)."""

MAX_COMMAND_ARGS = 7000
"""Lua's unpack() takes at most ~8,000 values: a group with a longer command goes through MULTI/EXEC instead."""

MAX_GROUPS_PER_CALL = 64
"""Groups sent in one script call at most, so one call stays short for Redis and for the callers waiting on it."""


def once(record: str, fingerprint: str) -> Command:
    """The ONCE that opens the group of a post sent with an Idempotency-Key kept at `record`."""
    return (ONCE, record, fingerprint)


def remember(record: str, fingerprint: str, status: int, body: bytes, ttl: int, index: str, most: int) -> Command:
    """The REMEMBER that closes it: the answer kept `ttl` seconds, the key filed in the tenant's `index` of `most`."""
    return (REMEMBER, record, fingerprint, status, body, ttl, index, most)


def take_tokens(key: str, n: int, rate: float, burst: int) -> Command:
    """The TAKE that guards a group: n tokens from the bucket `key` (refilled at `rate` a second, at most `burst`)."""
    return (TAKE, key, n, rate, burst)


def room_in(stream: str, cap: int, shares: str, tenant: str, tenants: int) -> Command:
    """The ROOM that guards a group: refuse it while `stream` holds `cap` entries or more, or while `tenant` holds its
    share of them (counted in the hash `shares`, divided among `tenants` at most)."""
    return (ROOM, stream, cap, shares, tenant, tenants)


class Writes:
    """Writes recorded as a group, for code that only queues writes and never reads: the pipeline methods the online
    path, the counters and the review index use (hincrbyfloat, hincrby, hsetnx, expire, set, xadd, zadd,
    zremrangebyrank),
    each appending one command tuple. About a
    tenth of the cost of queueing onto a redis-py pipeline, which builds its command through layers of callbacks;
    on the online ingest and acknowledgement paths that overhead was a tenth of the API's CPU per post."""

    def __init__(self) -> None:
        self.group: Group = []

    def hincrbyfloat(self, key: str, name: str, amount: float) -> None:
        self.group.append(("HINCRBYFLOAT", key, name, amount))

    def hincrby(self, key: str, name: str, amount: int) -> None:
        self.group.append(("HINCRBY", key, name, amount))

    def hsetnx(self, key: str, name: str, value: str) -> None:
        self.group.append(("HSETNX", key, name, value))

    def expire(self, key: str, seconds: int) -> None:
        self.group.append(("EXPIRE", key, seconds))

    def set(self, key: str, value: bytes | str, ex: int | None = None) -> None:
        self.group.append(("SET", key, value) if ex is None else ("SET", key, value, "EX", ex))

    def xadd(self, key: str, fields: dict[bytes | str, bytes | str]) -> None:
        self.group.append(("XADD", key, "*", *(word for pair in fields.items() for word in pair)))

    def zadd(self, key: str, mapping: dict[str, float]) -> None:
        self.group.append(("ZADD", key, *(word for member, score in mapping.items() for word in (score, member))))

    def zremrangebyrank(self, key: str, start: int, end: int) -> None:
        self.group.append(("ZREMRANGEBYRANK", key, start, end))


class MergedWrites(Writes):
    """Writes of several writers (the counting of a group of results) recorded as one group that leaves Redis as
    applying each writer's in turn does: the increments of one hash field summed into one (HINCRBY, HINCRBYFLOAT),
    every other command in its order, then each key's EXPIRE once (the last asked), after every other write (an
    EXPIRE before the first write to a key would find nothing to expire). Forty results' counting becomes some forty
    commands, not forty per result (issue 28)."""

    def __init__(self) -> None:
        super().__init__()
        self._sums: dict[tuple[str, str, str], Any] = {}
        self._expires: dict[str, int] = {}

    def hincrbyfloat(self, key: str, name: str, amount: float) -> None:
        field = ("HINCRBYFLOAT", key, name)
        self._sums[field] = self._sums.get(field, 0) + amount

    def hincrby(self, key: str, name: str, amount: int) -> None:
        field = ("HINCRBY", key, name)
        self._sums[field] = self._sums.get(field, 0) + amount

    def expire(self, key: str, seconds: int) -> None:
        self._expires.pop(key, None)   # re-inserted: the order of the last EXPIRE asked
        self._expires[key] = seconds

    def merged(self) -> Group:
        """The one group: the summed increments, the other commands in order, the EXPIREs."""
        return [(*field, amount) for field, amount in self._sums.items()] + self.group + [
            ("EXPIRE", key, seconds) for key, seconds in self._expires.items()]


WriteQueue = redis.client.Pipeline | Writes
"""Where code that only writes queues its commands: a redis-py pipeline (executed, or taken by queued_commands) or
a Writes."""


def queued_commands(pipe: redis.client.Pipeline) -> Group:
    """Take the commands queued on `pipe` (never executed there) as one group, and clear the pipeline."""
    group = []
    for args, _options in pipe.command_stack:
        if isinstance(args[0], str) and " " in args[0]:  # "CLIENT SETNAME" and such, split as redis-py packs them
            args = (*args[0].split(), *args[1:])
        group.append(args)
    pipe.reset()
    return group


def pack_group(group: Group) -> bytes:
    """A group as one script argument: its commands packed by hiredis exactly as redis-py would send them, so
    redis-py's own per-argument packing (pure Python in its asyncio client) runs once per group, not once per word.
    Scripts unpack it with scripts.PACKED_COMMANDS."""
    return b"".join([hiredis.pack_command(tuple(args)) for args in group])


def _script_args(groups: Sequence[Group]) -> list[bytes]:
    return [pack_group(group) for group in groups]


def _fits_script(group: Group) -> bool:
    return all(len(args) <= MAX_COMMAND_ARGS for args in group)


class GroupCommitter:
    """Applies the groups of concurrent callers together: one script call per round trip, not per caller.

    `await apply(group)` returns once the group is in Redis. While a call is in flight, new groups wait; when it
    returns, all that are waiting (up to MAX_GROUPS_PER_CALL) go in the next call. With one caller the cost is
    one call; with many, the round trip and the call's overhead are shared. A Redis error fails every group of
    that call; a failing command fails only its own group. Bound to the event loop it is first used on.
    """

    def __init__(self, client: redis.asyncio.Redis) -> None:
        self._client = client
        self._apply = client.register_script(_APPLY_GROUPS)
        self._take = client.register_script(TAKE_TOKENS)
        self._room = client.register_script(ROOM_FOR_POST)
        self._once = client.register_script(ONCE_CHECK)
        self._index_key = client.register_script(INDEX_KEY)
        self._groups: GroupCommit[Group, None] = GroupCommit(self._send, most=MAX_GROUPS_PER_CALL)

    async def apply(self, group: Group, *, alone: bool = False) -> None:
        """Apply `group` atomically; StoreRefused when Redis refuses it, RateLimited when the group opens with a TAKE
        whose bucket lacks the tokens (nothing written), Backlogged when its ROOM finds the stream full or the tenant
        over its share (OverBacklogShare; nothing written), AlreadyAnswered (with that answer) or IdempotencyKeyReused
        when its ONCE finds its key used (nothing written), redis errors as they come.

        `alone=True` sends it in a call of its own, for large groups (megabytes of traces) that should not delay
        or bloat the shared call.
        """
        if not group:
            return
        fits_script = _fits_script(group)
        if alone or not fits_script:
            try:
                if fits_script:
                    await self._script(group)
                else:
                    await self._transaction(group)
            except redis.ResponseError as exc:
                raise refused(str(exc)) from exc
            return
        await self._groups.submit(group)

    async def _transaction(self, group: Group) -> None:
        while group and group[0][0] in (TAKE, ROOM, ONCE):  # none runs in MULTI/EXEC: check first, then write
            head, group = group[0], group[1:]
            script = {TAKE: self._take, ROOM: self._room, ONCE: self._once}[head[0]]
            why = await script(args=list(head[1:]))
            if why:
                raise _refusal(why if head[0] != TAKE else f"{RATE_LIMITED}{int(why)}".encode())
        kept = group[-1] if group and group[-1][0] == REMEMBER else None
        if kept is not None:   # the answer goes in with the writes; its place in the tenant's index right after
            record, fingerprint, status, body, ttl = kept[1:6]
            group = [*group[:-1], ("HSET", record, "fp", fingerprint, "status", status, "body", body),
                     ("EXPIRE", record, ttl)]
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.command_stack.extend((args, {}) for args in group)
            await pipe.execute()
        if kept is not None:
            await self._index_key(args=[kept[1], kept[5], kept[6], kept[7]])

    async def _script(self, group: Group) -> None:
        (result,) = await self._apply(args=_script_args([group]))
        if result:
            raise _refusal(result)

    async def _send(self, groups: list[Group]) -> list[Exception | None]:
        """Apply these groups in one script call: each group's refusal, or None when it was applied."""
        try:
            results = await self._apply(args=_script_args(groups))
        except redis.ResponseError as exc:  # the whole call refused (e.g. out of memory): every group of it
            return [refused(str(exc))] * len(groups)
        return [_refusal(result) if result else None for result in results]


def _refusal(result: bytes) -> Exception:
    """The exception of a group the script did not apply: rate limited (with the wait), backlogged, its Idempotency-Key
    answered or reused, else refused by Redis."""
    text = result.decode(errors="replace")
    if text.startswith(RATE_LIMITED):
        return RateLimited(int(text.removeprefix(RATE_LIMITED)) / 1000)
    if text.startswith(BACKLOG):
        return Backlogged(int(text.removeprefix(BACKLOG)))
    if text.startswith(SHARE):
        held, share = text.removeprefix(SHARE).split()
        return OverBacklogShare(int(held), int(share))
    if result.startswith(ANSWERED.encode()):
        status, _, body = result.removeprefix(ANSWERED.encode()).partition(b" ")
        return AlreadyAnswered(int(status), body)
    if text == REUSED:
        return IdempotencyKeyReused()
    return refused(text)


def refused(text: str) -> StoreRefused:
    """Redis's refusal, named by its error code. A write refused inside a script loses the `OOM` code (Redis reports
    "command not allowed when used memory > 'maxmemory'" plus the script's position), so it is put back: the
    operator searching for OOM must find every out-of-memory refusal."""
    if "maxmemory" in text and not text.startswith("OOM"):
        text = f"OOM {text}"
    return StoreRefused(text)
