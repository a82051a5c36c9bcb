"""The session index: per tenant and conversation, the sampled online turns (trace id, turn index, and the turn's
documents, capped), which GET /v1/sessions/{session_id} reads back with the turns' records and which gives a later
turn's judge the documents retrieved earlier in the session (`session_evidence`).

A turn is indexed when the API accepts it sampled (online.post.stage_post), in the same atomic group as its pending
record, so a follow-up posted in the same request or later finds it. The index is bounded: at most
defaults.SESSION_MAX_TURNS turns (the latest kept), each with at most SESSION_DOCS_PER_TURN documents cut to
SESSION_DOC_CHARS; it expires settings.online_result_ttl_seconds after its latest turn, as the turns' records do.
Only sampled turns are indexed: with whole-session sampling (monitoring.sampling, `sample_by: session`) a sampled
session keeps every turn.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import msgspec
import redis
import redis.asyncio

from ragpulse.config import defaults, keys
from ragpulse.exceptions import SessionNotFound
from ragpulse.model.trace import RetrievedDoc, Trace
from ragpulse.store import online_records
from ragpulse.store.atomic import WriteQueue
from ragpulse.store.online_records import OnlineTrace

UNNUMBERED = 1_000_000.0
"""Score base of a turn posted without `turn`: such turns sort after every numbered one, in arrival order (the base
plus the arrival's epoch seconds)."""


class EvidenceDoc(msgspec.Struct, array_like=True):
    """A document a turn retrieved, as its session's index keeps it."""

    id: str
    text: str | None


class SessionTurn(msgspec.Struct, array_like=True):
    """One sampled turn of a session, as its index keeps it (a member of the sorted set, msgpack)."""

    trace_id: str
    turn: int | None
    app: str
    docs: list[EvidenceDoc]


class SessionTurnView(msgspec.Struct, kw_only=True):
    """One sampled turn of GET /v1/sessions/{session_id}."""

    turn: int | None
    """The turn's index as the app gave it (null when it gave none: such turns come last, in arrival order)."""
    trace_id: str
    app: str
    trace: OnlineTrace | None
    """The turn's record, as GET /v1/traces/{trace_id} answers it (status, sampling, result with its claims); null
    once it expired (RAGPULSE_ONLINE_RESULT_TTL_SECONDS) while later turns kept the session."""


class SessionView(msgspec.Struct, kw_only=True):
    """GET /v1/sessions/{session_id}: the conversation's sampled turns with their results, ordered by turn."""

    session_id: str
    turns: list[SessionTurnView]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(SessionTurn)


def indexed_turn(trace: Trace, ident: str | None = None) -> SessionTurn:
    """What the index keeps of a sampled turn: its id (`ident` for a batch trace posted without one), turn index,
    app and top documents, capped."""
    docs = [EvidenceDoc(doc.id, doc.text[: defaults.SESSION_DOC_CHARS] if doc.text is not None else None)
            for doc in trace.retrieved_docs[: defaults.SESSION_DOCS_PER_TURN]]
    return SessionTurn(ident or trace.trace_id or "", trace.turn, trace.app, docs)


def score(trace: Trace, now: float | None = None) -> float:
    """The turn's place in its session: its index, or after every numbered turn in arrival order."""
    return float(trace.turn) if trace.turn is not None else UNNUMBERED + (time.time() if now is None else now)


def queue_turn(pipe: WriteQueue, tenant: str, trace: Trace, ttl_seconds: int,
               max_turns: int = defaults.SESSION_MAX_TURNS) -> None:
    """Queue onto `pipe` the writes indexing one sampled turn of a trace with a `session_id`: added, the oldest
    beyond `max_turns` dropped, the index's lifetime renewed. A retried post indexes the same member again (a no-op)."""
    key = keys.session(tenant, trace.session_id or "")
    pipe.zadd(key, {_encoder.encode(indexed_turn(trace)): score(trace)})  # type: ignore[dict-item]
    pipe.zremrangebyrank(key, 0, -(max_turns + 1))
    pipe.expire(key, ttl_seconds)


def decoded(members: Iterable[bytes]) -> list[SessionTurn]:
    """The index's members, in its order (by turn)."""
    return [_decoder.decode(raw) for raw in members]


def turns(client: redis.Redis, tenant: str, session_id: str) -> list[SessionTurn]:
    """The tenant's indexed turns of the session, ordered by turn; [] for an unknown or expired session."""
    return decoded(client.zrange(keys.session(tenant, session_id), 0, -1))


async def aturns(client: redis.asyncio.Redis, tenant: str, session_id: str) -> list[SessionTurn]:
    """`turns`, on an asyncio client."""
    return decoded(await client.zrange(keys.session(tenant, session_id), 0, -1))


def read(client: redis.Redis, tenant: str, session_id: str) -> SessionView:
    """GET /v1/sessions/{session_id}: the tenant's sampled turns of the session with their records (one round trip
    for the records); SessionNotFound when none is kept (never sampled, expired, or another tenant's)."""
    found = turns(client, tenant, session_id)
    if not found:
        raise SessionNotFound(f"no sampled turn of session {session_id!r} for this tenant: only sampled turns are "
                              "kept, for RAGPULSE_ONLINE_RESULT_TTL_SECONDS after the session's latest turn")
    raw = client.mget([keys.online_trace(tenant, t.trace_id) for t in found])
    views = [SessionTurnView(turn=t.turn, trace_id=t.trace_id, app=t.app,
                             trace=online_records.decode(record) if record is not None else None)
             for t, record in zip(found, raw, strict=True)]
    return SessionView(session_id=session_id, turns=views)


def gather_evidence(found: Sequence[SessionTurn], before_turn: int | None, limit: int,
                    max_chars: int = defaults.SESSION_EVIDENCE_CHARS, exclude_trace: str | None = None,
                    exclude_docs: Iterable[str] = ()) -> list[RetrievedDoc]:
    """Documents (id and text) retrieved for the session's earlier turns: those before `before_turn` (when it is None,
    those indexed before `exclude_trace`, this turn), the latest turn first and each turn's in rank order, a document once, at most
    `limit` of them and `max_chars` of text in all (the last one cut to fit). `exclude_docs` (this turn's own
    documents) are left out."""
    if before_turn is not None:
        earlier = [t for t in found if t.turn is not None and t.turn < before_turn]
    else:   # no index: the turns before this one's place in the index (arrival order), else every other one
        place = next((i for i, t in enumerate(found) if t.trace_id == exclude_trace), None)
        earlier = list(found[:place]) if place is not None else [t for t in found if t.trace_id != exclude_trace]
    seen, docs, room = set(exclude_docs), [], max_chars
    for turn in reversed(earlier):
        for doc in turn.docs:
            if len(docs) >= limit or room <= 0:
                return docs
            if doc.id in seen:
                continue
            seen.add(doc.id)
            text = doc.text[:room] if doc.text is not None else None
            room -= len(text or "")
            docs.append(RetrievedDoc(id=doc.id, text=text))
    return docs


def session_evidence(store: redis.Redis, tenant: str, session_id: str, before_turn: int | None,
                     limit: int = defaults.SESSION_EVIDENCE_DOCS, *,
                     max_chars: int = defaults.SESSION_EVIDENCE_CHARS) -> list[RetrievedDoc]:
    """Documents retrieved for the tenant's stored earlier turns of the session (`gather_evidence`)."""
    return gather_evidence(turns(store, tenant, session_id), before_turn, limit, max_chars)


async def with_session_evidence(client: redis.asyncio.Redis, tenant: str, trace: Trace,
                                limit: int = defaults.SESSION_EVIDENCE_DOCS,
                                max_chars: int = defaults.SESSION_EVIDENCE_CHARS) -> Trace:
    """The trace to judge: a turn of a session sent without `session_evidence` gets the documents of its stored
    earlier turns (a copy; the trace itself is left as posted). Any other trace is returned as it is."""
    if trace.session_id is None or trace.session_evidence is not None:
        return trace
    found = await aturns(client, tenant, trace.session_id)
    evidence = gather_evidence(found, trace.turn, limit, max_chars, exclude_trace=trace.trace_id,
                               exclude_docs=(doc.id for doc in trace.retrieved_docs))
    return msgspec.structs.replace(trace, session_evidence=evidence) if evidence else trace


# -- a batch's sessions: the same index per job, so a follow-up in a batch gets its earlier turns' documents too ----

def job_ident(index: int) -> str:
    """How a batch trace is named in its job's session index: its place in the job (trace ids may be absent)."""
    return f"#{index}"


def queue_job_turns(pipe: WriteQueue, job_id: str, traces: Sequence[Trace], ttl_seconds: int,
                    max_turns: int = defaults.SESSION_MAX_TURNS) -> None:
    """Queue onto `pipe` the index of a batch's sessions (every trace with a `session_id`), one sorted set per session
    of the job (keys.job_session), with the job's lifetime: turns without `turn` are ordered by their place in the
    batch."""
    touched: set[str] = set()
    for index, trace in enumerate(traces):
        if trace.session_id is None:
            continue
        key = keys.job_session(job_id, trace.session_id)
        order = float(trace.turn) if trace.turn is not None else UNNUMBERED + index
        pipe.zadd(key, {_encoder.encode(indexed_turn(trace, job_ident(index))): order})  # type: ignore[dict-item]
        touched.add(key)
    for key in sorted(touched):
        pipe.zremrangebyrank(key, 0, -(max_turns + 1))
        pipe.expire(key, ttl_seconds)


def with_job_evidence(client: redis.Redis, job_id: str, pending: list[tuple[int, Trace]],
                      limit: int = defaults.SESSION_EVIDENCE_DOCS,
                      max_chars: int = defaults.SESSION_EVIDENCE_CHARS) -> list[tuple[int, Trace]]:
    """A chunk's traces to judge: each turn of a session without `session_evidence` gets the documents of the
    session's earlier turns in the same job (copies; one round trip for the chunk's sessions)."""
    wanted = sorted({t.session_id for _, t in pending if t.session_id is not None and t.session_evidence is None})
    if not wanted:
        return pending
    with client.pipeline(transaction=False) as pipe:
        for session_id in wanted:
            pipe.zrange(keys.job_session(job_id, session_id), 0, -1)
        found = dict(zip(wanted, (decoded(raw) for raw in pipe.execute()), strict=True))
    filled = []
    for index, trace in pending:
        if trace.session_id in found and trace.session_evidence is None:
            evidence = gather_evidence(found[trace.session_id], trace.turn, limit, max_chars, job_ident(index),
                                       (doc.id for doc in trace.retrieved_docs))
            trace = msgspec.structs.replace(trace, session_evidence=evidence) if evidence else trace
        filled.append((index, trace))
    return filled
