"""Sessions benchmark (issue 29): what a turn of a session costs the online path, as ratios measured in the same run.

    .venv/bin/python bench/sessions.py [--n 3000] [--repeats 5]

1. accept: API CPU of staging single-trace posts (online.post.stage_post: decisions, the stream entry, the pending
   record, the counts, and for a session's turn its entry in the session index), a turn of a session ÷ the same trace
   without `session_id`, both sampled. In process, onto a Writes (no Redis round trip), interleaved, best of repeats.
2. index: Redis memory per indexed turn (MEMORY USAGE of a session's sorted set ÷ its turns; 5 documents of ~500
   characters a turn, the trace of bench/ingest.py), against the pending record of the same trace.
3. evidence: the judge-time fill (store.sessions.with_session_evidence: one ZRANGE, decode, gather) for a follow-up of
   a 20-turn session ÷ the evaluation of the same filled trace by the offline `local` judge (evaluation.trace
   .evaluate_trace), the cheapest judge there is; both in process, the fill on a private Redis.

A benchmark, not a test: it prints figures and exits 0 whatever they are.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import redis  # noqa: E402
import redis.asyncio  # noqa: E402

from bench.ingest import git_state, machine, make_trace  # noqa: E402
from ragpulse.config import keys  # noqa: E402
from ragpulse.config.settings import Settings  # noqa: E402
from ragpulse.evaluation.trace import evaluate_trace  # noqa: E402
from ragpulse.judges import kinds  # noqa: E402
from ragpulse.model.trace import BatchOptions, Trace  # noqa: E402
from ragpulse.monitoring.sampling import SamplingPolicy  # noqa: E402
from ragpulse.online.post import Decision, pending_record, stage_post  # noqa: E402
from ragpulse.ops.redis_server import PrivateRedis  # noqa: E402
from ragpulse.store import online_records, sessions  # noqa: E402
from ragpulse.store.atomic import Writes  # noqa: E402


def traces(n: int, session: bool) -> list[Trace]:
    rng = random.Random(7)
    made = []
    for i in range(n):
        raw = make_trace(rng, i)
        if session:
            raw |= {"session_id": f"s-{i // 5}", "turn": i % 5}
        made.append(msgspec.convert(raw, Trace))
    return made


def accept_seconds(settings: Settings, batch: list[Trace]) -> float:
    policies = {"acme-support": SamplingPolicy(sample_rate=1.0)}
    start = time.process_time()
    for trace in batch:
        stage_post(Writes(), settings, "default", [trace], policies, "2026-12-02T00:00:00Z")
    return time.process_time() - start


def index_bytes(client: redis.Redis, turns: list[Trace]) -> tuple[float, float]:
    with client.pipeline() as pipe:
        for trace in turns:
            sessions.queue_turn(pipe, "bench", trace, 3600)
        pipe.execute()
    per_turn = client.memory_usage(keys.session("bench", turns[0].session_id or "")) / len(turns)
    record = pending_record(turns[0], Decision(True, "sampled", []), "2026-12-02T00:00:00Z")
    client.set("bench:record", online_records.encode(record))
    return per_turn, client.memory_usage("bench:record")


async def evidence_seconds(url: str, follow_up: Trace, n: int) -> float:
    client = redis.asyncio.Redis.from_url(url)
    try:
        start = time.process_time()
        for _ in range(n):
            await sessions.with_session_evidence(client, "bench", follow_up)
        return time.process_time() - start
    finally:
        await client.aclose()


async def judge_seconds(settings: Settings, trace: Trace, n: int) -> float:
    judge = kinds.make_judge("local", settings)
    options = BatchOptions()
    await evaluate_trace(trace, 0, options, judge)
    start = time.process_time()
    for _ in range(n):
        await evaluate_trace(trace, 0, options, judge)
    return (time.process_time() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    settings = Settings.from_env({})
    plain, chat = traces(args.n, False), traces(args.n, True)
    accept_seconds(settings, plain[:200]), accept_seconds(settings, chat[:200])   # warm up
    ratios, best_plain, best_chat = [], float("inf"), float("inf")
    for _ in range(args.repeats):
        p, c = accept_seconds(settings, plain), accept_seconds(settings, chat)
        ratios.append(c / p)
        best_plain, best_chat = min(best_plain, p), min(best_chat, c)
    print(f"commit {git_state()}, {machine()}, load average {os.getloadavg()[0]:.1f}")
    print(f"1. accept: session turn / plain trace, API CPU per post: {best_chat / args.n * 1e6:.0f} / "
          f"{best_plain / args.n * 1e6:.0f} us = {best_chat / best_plain:.3f} (pairs' median "
          f"{sorted(ratios)[len(ratios) // 2]:.3f})")
    server = PrivateRedis()
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        twenty = [msgspec.structs.replace(t, session_id="long", turn=i) for i, t in enumerate(chat[:20])]
        per_turn, record = index_bytes(client, twenty)
        print(f"2. index: {per_turn:.0f} B of Redis per indexed turn (5 documents of ~500 chars) vs {record} B for "
              f"the same trace's pending record ({per_turn / record:.2f}x)")
        follow_up = msgspec.structs.replace(chat[20], session_id="long", turn=20)
        n = max(200, args.n // 5)
        asyncio.run(evidence_seconds(server.url, follow_up, 20))
        fill = asyncio.run(evidence_seconds(server.url, follow_up, n)) / n
        filled = asyncio.run(sessions.with_session_evidence(redis.asyncio.Redis.from_url(server.url), "bench",
                                                            follow_up))
        judged = asyncio.run(judge_seconds(settings, filled, max(20, n // 10)))
        print(f"3. evidence: fill {fill * 1e6:.0f} us of worker CPU per judged follow-up "
              f"({len(filled.session_evidence or [])} documents) vs {judged * 1e6:.0f} us to evaluate it with the "
              f"local judge ({fill / judged:.3f}x)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
