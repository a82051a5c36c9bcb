"""Online path benchmark: POST /v1/traces into the stream, and workers draining it.

    .venv/bin/python bench/online.py             # 20,000 posts, then the 200,000-trace worker RSS run
    .venv/bin/python bench/online.py --quick     # 4,000 posts, 40,000 traces for RSS
    .venv/bin/python bench/online.py --skip-rss  # only phases 1-3
    .venv/bin/python bench/online.py --quick --skip-rss --skip-memory   # ingest and drain only, ~1 min

All on this machine, against a private redis-server on a free loopback port, with the offline `local` judge and
RAGPULSE_SAMPLE_RATE=0.05 (every trace gets its cheap checks and counts; ~5% are judged):

1. ingest: one API process (`python -m service`), no worker running: single-trace posts (~3 KB, the trace of
   bench/ingest.py without its trace_id, so the API draws one and the 5% sample varies) from 64 keep-alive
   connections: wrk (one thread) for N / 2,000 seconds when it is on PATH (`apt-get install wrk`), else exactly N
   from a raw asyncio HTTP/1.1 client in a separate process, which costs the 2 cores about 0.3 ms of CPU a post, half
   what the API spends. Target: >= 2,000 posts/s.
2. drain: 2 workers (`python -m worker`) start; once both read the stream, the time until it is empty gives the
   end-to-end processing rate (checks, counts, 5% judged, records, acknowledgements). Target: >= 1,000 traces/s.
   Worker CPU counts each worker with its children (the forked online consumer and ended work-horses): from their
   start (start-up included), and from the moment both read the stream (the drain alone, the figure to compare).
3. memory: a fresh API and worker at sample rate 0, warmed up; Redis INFO used_memory less the stream's own bytes,
   the median of several readings after a settle, with both idle before and after N more posts are processed,
   per trace. Target: <= 1 KB per unsampled trace. (The records sampled traces
   keep for RAGPULSE_ONLINE_RESULT_TTL_SECONDS are reported from phase 2, by MEMORY USAGE.)
4. worker RSS: one worker drains M traces posted as 100-trace posts (at most 200 posts waiting); the RSS of its
   online consumer process, and of the worker with its children, is read every M/20 traces. Target: flat, the last
   reading within ±10% of the one after the first tenth.

A benchmark, not a test: it exits 0 on a missed target and non-zero only when the run breaks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import msgspec  # noqa: E402
import redis  # noqa: E402

from bench.ingest import cpu_seconds, git_state, machine, make_trace, run_wrk, tree_cpu_seconds  # noqa: E402
from ragpulse.config import keys  # noqa: E402
from ragpulse.ops.redis_server import PrivateRedis  # noqa: E402
from tests.support import Proc, spawn, start_api  # noqa: E402

TARGET_POSTS_PER_SECOND = 2000.0
TARGET_TRACES_PER_SECOND = 1000.0
TARGET_BYTES_PER_UNSAMPLED = 1024.0
TARGET_RSS_DRIFT = 0.10
CONNECTIONS = 64
QUEUE = "bench-online"
ENV = {"RAGPULSE_QUEUE": QUEUE, "RAGPULSE_JUDGE": "local", "RAGPULSE_SAMPLE_RATE": "0.05",
       "RAGPULSE_TENANT_TRACES_PER_SECOND": "0", "RAGPULSE_LOG_LEVEL": "WARNING"}


def body(n_traces: int, seed: int) -> bytes:
    rng = random.Random(seed)
    traces = []
    for i in range(n_traces):
        trace = make_trace(rng, i)
        del trace["trace_id"]          # the API draws one: the deterministic 5% sample then varies per post
        traces.append(trace)
    return msgspec.json.encode({"traces": traces})


# ---------------------------------------------------------------------------------------------------------------------
# load generator (run as a separate process: `online.py --loadgen URL BODY TOTAL CONNECTIONS`)


def loadgen_main(url: str, body_path: str, total: int, connections: int) -> None:
    """POST the body `total` times over `connections` keep-alive connections; print a JSON summary."""
    payload = Path(body_path).read_bytes()
    target = httpx.URL(url)
    request = (f"POST /v1/traces HTTP/1.1\r\nHost: {target.host}:{target.port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    remaining = [total]

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(target.host, target.port)
        try:
            while remaining[0] > 0:
                remaining[0] -= 1
                t0 = time.perf_counter()
                writer.write(request)
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
                lines = head.decode("latin-1").split("\r\n")
                status = lines[0].split(" ", 2)[1]
                length = next(int(ln.split(":", 1)[1]) for ln in lines[1:] if ln.lower().startswith("content-length:"))
                await reader.readexactly(length)
                statuses[status] = statuses.get(status, 0) + 1
                latencies.append(time.perf_counter() - t0)
        finally:
            writer.close()

    async def main() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(connection() for _ in range(connections)))
        return time.perf_counter() - start

    duration = asyncio.run(main())
    latencies.sort()
    print(json.dumps({"duration": duration, "statuses": statuses,
                      "p50_ms": latencies[len(latencies) // 2] * 1e3, "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3}))


@dataclass
class Posted:
    posts: int
    seconds: float
    statuses: dict[str, int]
    p50_ms: float
    p99_ms: float
    api_cpu: float

    @property
    def rate(self) -> float:
        return self.posts / self.seconds


def post_many(url: str, payload: bytes, total: int, api_pid: int, tmp: Path, generator: str = "python") -> Posted:
    """POST `payload` about `total` times: exactly `total` with the Python client; with wrk (which runs for a time,
    not a count, and costs the API's cores a tenth of the Python client's CPU), for total / 2,000 seconds."""
    path = tmp / f"body-{len(payload)}.json"
    path.write_bytes(payload)
    cpu0 = cpu_seconds(api_pid)
    if generator == "wrk":
        r = run_wrk(url, path, CONNECTIONS, max(2.0, total / TARGET_POSTS_PER_SECOND), tmp, path="/v1/traces")
        failed = r.requests - r.ok
        return Posted(r.requests, r.duration, {"202": r.ok, **({"failed": failed} if failed else {})},
                      r.p50_ms or 0.0, r.p99_ms or 0.0, cpu_seconds(api_pid) - cpu0)
    out = subprocess.run([sys.executable, __file__, "--loadgen", url, str(path), str(total), str(CONNECTIONS)],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return Posted(total, data["duration"], data["statuses"], data["p50_ms"], data["p99_ms"],
                  cpu_seconds(api_pid) - cpu0)


# ---------------------------------------------------------------------------------------------------------------------
# helpers over the private Redis


def stream_length(admin: redis.Redis) -> int:
    return admin.xlen(keys.online_stream(f"{QUEUE}-online"))


def consumers(admin: redis.Redis) -> int:
    try:
        return len(admin.xinfo_consumers(keys.online_stream(f"{QUEUE}-online"), keys.ONLINE_GROUP))
    except redis.ResponseError:
        return 0


def record_bytes(admin: redis.Redis) -> tuple[int, int]:
    """(records, bytes) of the online trace records: the sampled traces' results, kept on purpose."""
    n = total = 0
    for key in admin.scan_iter(match="ragpulse:trace:*", count=1000):
        n += 1
        total += admin.memory_usage(key, samples=0) or 0
    return n, total


def start_workers(redis_url: str, tmp: Path, n: int) -> list[Proc]:
    from tests.support import child_env  # noqa: PLC0415

    return [spawn([sys.executable, "-m", "worker", "--rq-log-level", "WARNING"], child_env(redis_url, ENV),
                  tmp / f"worker-{i}.log") for i in range(n)]


def wait_for(predicate, timeout: float, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout} s")
        time.sleep(0.02)


def consumer_pids(admin: redis.Redis) -> list[int]:
    """Pids of the online consumer processes, read from their names in the group (`host:pid:random`)."""
    names = [c["name"].decode() for c in admin.xinfo_consumers(keys.online_stream(f"{QUEUE}-online"),
                                                               keys.ONLINE_GROUP)]
    return [int(name.split(":")[1]) for name in names]


def tree_rss(pid: int) -> int:
    """RSS of a worker and its children (the online consumer, RQ's scheduler), in bytes."""
    from tests.support import children_of  # noqa: PLC0415

    return rss_bytes(pid) + sum(rss_bytes(child) for child in children_of(pid))


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


# ---------------------------------------------------------------------------------------------------------------------
# phases


def ingest_and_drain(redis_url: str, admin: redis.Redis, tmp: Path, posts: int, generator: str) -> dict:
    url, api = start_api(redis_url, tmp, ENV)
    try:
        single = body(1, seed=1)
        warm = post_many(url, single, 500, api.process.pid, tmp)            # imports, pools, caches
        wait_for(lambda: True, 1, "")
        admin.delete(keys.online_stream(f"{QUEUE}-online"))
        posted = post_many(url, single, posts, api.process.pid, tmp, generator)
        accepted = posted.statuses.get("202", 0)
        queued = stream_length(admin)
        workers = start_workers(redis_url, tmp, 2)
        try:
            wait_for(lambda: consumers(admin) >= 2, 60, "2 workers reading the stream")
            t0, left0 = time.monotonic(), stream_length(admin)
            started_cpu = sum(tree_cpu_seconds(w.process.pid) for w in workers)
            wait_for(lambda: stream_length(admin) == 0, 600, "the stream drained")
            drain_seconds = time.monotonic() - t0
            worker_cpu = sum(tree_cpu_seconds(w.process.pid) for w in workers)   # the forked consumers too
        finally:
            for worker in workers:
                worker.stop()
        records, held = record_bytes(admin)
    finally:
        api.stop()
    return {"warm_statuses": warm.statuses, "posted": posted, "accepted": accepted, "queued": queued,
            "drained": left0, "drain_seconds": drain_seconds, "worker_cpu": worker_cpu,
            "drain_cpu": worker_cpu - started_cpu, "records": records,
            "record_bytes": held}


def settled_memory(admin: redis.Redis, samples: int = 7) -> int:
    """Redis used_memory less the online stream's own bytes, the median of `samples` readings 0.3 s apart after a
    1 s settle. The stream is left out: its acknowledged entries stay until trimmed, so it held the warm-up's posts
    before and a trimmed remainder after, which made the growth come out negative; client buffers are what the
    median and the settle smooth out."""
    time.sleep(1.0)
    readings = []
    for _ in range(samples):
        stream = admin.memory_usage(keys.online_stream(f"{QUEUE}-online"), samples=0) or 0
        readings.append(admin.info("memory")["used_memory"] - stream)
        time.sleep(0.3)
    return sorted(readings)[samples // 2]


def memory_per_unsampled_trace(redis_url: str, admin: redis.Redis, tmp: Path, posts: int) -> tuple[int, float]:
    """Redis used_memory growth per processed unsampled trace: an API and a worker at sample rate 0, warmed up,
    then `posts` single-trace posts; memory read with both idle before and after (the same clients connected), as
    `settled_memory` reads it."""
    env = {**ENV, "RAGPULSE_SAMPLE_RATE": "0"}
    url, api = start_api(redis_url, tmp, env)
    from tests.support import child_env  # noqa: PLC0415

    worker = spawn([sys.executable, "-m", "worker", "--rq-log-level", "WARNING"], child_env(redis_url, env),
                   tmp / "worker-memory.log")
    try:
        single = body(1, seed=3)
        wait_for(lambda: consumers(admin) >= 1, 60, "the worker reading the stream")
        post_many(url, single, 500, api.process.pid, tmp)
        wait_for(lambda: stream_length(admin) == 0, 300, "the warm-up drained")
        before = settled_memory(admin)
        post_many(url, single, posts, api.process.pid, tmp)
        wait_for(lambda: stream_length(admin) == 0, 600, "the stream drained")
        after = settled_memory(admin)
    finally:
        worker.stop()
        api.stop()
    return after - before, (after - before) / posts


def worker_rss(redis_url: str, admin: redis.Redis, tmp: Path, traces: int) -> list[tuple[int, int, int]]:
    """(traces processed, online consumer RSS, worker tree RSS) readings while one worker drains `traces` traces
    posted 100 per post."""
    url, api = start_api(redis_url, tmp, ENV)
    payload = body(100, seed=2)
    (worker,) = start_workers(redis_url, tmp, 1)
    readings: list[tuple[int, int, int]] = []
    try:
        from tests.support import children_of  # noqa: PLC0415

        def own() -> set[int]:   # earlier phases' consumers stay listed in the group for a while
            return set(consumer_pids(admin)) & children_of(worker.process.pid)
        wait_for(own, 60, "the worker's consumer reading the stream")
        (consumer,) = own()

        def reading(done: int) -> tuple[int, int, int]:
            return done, rss_bytes(consumer), tree_rss(worker.process.pid)
        posts_total, posted, step = traces // 100, 0, max(1, traces // 100 // 20)
        with httpx.Client(base_url=url, timeout=60, headers={"content-type": "application/json"}) as http:
            while posted < posts_total or stream_length(admin):
                if posted < posts_total and stream_length(admin) < 200:
                    response = http.post("/v1/traces", content=payload)
                    if response.status_code != 202:
                        raise RuntimeError(f"POST answered {response.status_code}: {response.text[:300]}")
                    posted += 1
                    if posted % step == 0:
                        done = (posted - stream_length(admin)) * 100
                        readings.append(reading(done))
                else:
                    time.sleep(0.01)
        readings.append(reading(posts_total * 100))
    finally:
        worker.stop()
        api.stop()
    return readings


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--skip-memory", action="store_true", help="no phase 3 (with --skip-rss: ingest and drain only)")
    parser.add_argument("--generator", choices=("wrk", "python"),
                        help="phase 1's load generator (default: wrk when on PATH, else the raw asyncio client)")
    parser.add_argument("--loadgen", nargs=4, metavar=("URL", "BODY", "TOTAL", "CONNECTIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loadgen:
        url, path, total, connections = args.loadgen
        loadgen_main(url, path, int(total), int(connections))
        return
    posts = 4000 if args.quick else 20_000
    generator = args.generator or ("wrk" if shutil.which("wrk") else "python")
    rss_traces = 40_000 if args.quick else 200_000
    print(f"bench/online.py — {time.strftime('%Y-%m-%d %H:%M')}; {machine()}; {git_state()}")
    print(f"settings: {ENV}, {CONNECTIONS} connections; load average {os.getloadavg()[0]:.2f}")
    print(f"phase 1 load generator: {generator}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = PrivateRedis().start()
        admin = redis.Redis.from_url(server.url)
        try:
            r = ingest_and_drain(server.url, admin, tmp, posts, generator)
            p = r["posted"]
            rate = r["drained"] / r["drain_seconds"]
            growth, per_trace = (0, 0.0) if args.skip_memory else memory_per_unsampled_trace(server.url, admin, tmp,
                                                                                             posts)
            print(f"\n1. ingest: {p.posts} single-trace posts in {p.seconds:.2f} s = {p.rate:,.0f} posts/s "
                  f"(statuses {p.statuses}; p50 {p.p50_ms:.1f} ms, p99 {p.p99_ms:.1f} ms; API CPU "
                  f"{p.api_cpu / p.posts * 1e3:.3f} ms per post); {r['queued']} posts queued on the stream")
            print(f"   target >= {TARGET_POSTS_PER_SECOND:,.0f}/s: ratio {p.rate / TARGET_POSTS_PER_SECOND:.2f} "
                  f"{verdict(p.rate >= TARGET_POSTS_PER_SECOND)}")
            print(f"2. drain: 2 workers processed {r['drained']} traces in {r['drain_seconds']:.2f} s = {rate:,.0f} "
                  f"traces/s (worker CPU {r['worker_cpu'] / max(1, r['drained']) * 1e3:.3f} ms per trace, start-up "
                  f"included; {r['drain_cpu'] / max(1, r['drained']) * 1e3:.3f} ms while draining); {r['records']} "
                  f"sampled traces kept a record")
            print(f"   target >= {TARGET_TRACES_PER_SECOND:,.0f}/s: ratio {rate / TARGET_TRACES_PER_SECOND:.2f} "
                  f"{verdict(rate >= TARGET_TRACES_PER_SECOND)}")
            if args.skip_memory:
                print("3. memory: skipped (--skip-memory)")
            else:
                print(f"3. memory: at sample rate 0, used_memory grew {growth:,} B over {posts} processed posts = "
                      f"{per_trace:,.1f} B per unsampled trace (the sampled traces' records of phase 2 hold "
                      f"{r['record_bytes'] / max(1, r['records']):,.0f} B each, kept for a day on purpose)")
                print(f"   target <= {TARGET_BYTES_PER_UNSAMPLED:,.0f} B: ratio "
                      f"{per_trace / TARGET_BYTES_PER_UNSAMPLED:.2f} {verdict(per_trace <= TARGET_BYTES_PER_UNSAMPLED)}")
            if not args.skip_rss:
                readings = worker_rss(server.url, admin, tmp, rss_traces)
                print(f"4. RSS over {rss_traces:,} traces, MiB at each reading (traces processed: online consumer "
                      "process / worker with its children):")
                print("   " + ", ".join(f"{done // 1000}k: {one / 2**20:.0f}/{tree / 2**20:.0f}"
                                        for done, one, tree in readings))
                for label, column in (("online consumer", 1), ("worker tree", 2)):
                    base = next(r[column] for r in readings if r[0] >= rss_traces // 10)
                    drift = readings[-1][column] / base - 1
                    print(f"   {label}: last vs after the first tenth {drift:+.1%}; target within "
                          f"±{TARGET_RSS_DRIFT:.0%} {verdict(abs(drift) <= TARGET_RSS_DRIFT)}")
        finally:
            admin.close()
            server.stop()


if __name__ == "__main__":
    main()
