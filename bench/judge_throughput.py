"""Judge throughput benchmark: how close scaled-out workers get to a provider's rate limit, and local-judge speed.

    .venv/bin/python bench/judge_throughput.py            # full run, ~18 min (phase 3 alone, 1 worker: ~3.5 min)
    .venv/bin/python bench/judge_throughput.py --quick    # 3 steady windows per run and 2,000 local traces, ~8 min

Everything runs on this machine, on loopback, in one run; every scenario gets its own private redis-server.

1. Request limit. tests.fake_anthropic.FakeAnthropic (a real HTTP server speaking the Messages API) answers after a
   fixed 300 ms and enforces R = 120 requests per moving window of W = 10 s itself, answering 429 above it. The real
   API (`python -m service`) and 1, 2, 4 real RQ workers (`python -m worker`) judge with the Anthropic judge,
   configured with the same R / W (RAGPULSE_JUDGE_RPM, RAGPULSE_JUDGE_RATE_WINDOW_SECONDS) and
   RAGPULSE_JUDGE_CONCURRENCY=16, so latency is no bottleneck (12 req/s x 0.3 s = 3.6 calls in flight are
   needed; one worker allows 16). One batch holds enough traces to keep demand above the limit for the warm-up
   window plus `steady` windows. From the fake's own request log (`requests[i]["at"]`, monotonic) the first window
   after the first admitted call is dropped as warm-up, then the following whole windows up to the last admitted
   call are the steady interval: achieved calls per window / R, and 429s (target >= 0.95 with zero 429s). Gaps
   between calls, the tightest span of R + 1 arrivals and the 429 times show where a shortfall comes from; a full
   run adds 1 worker with chunks of 500 to show what chunk hand-overs cost.
2. Input-token limit. The same, but the fake enforces no request limit and ragpulse gets RAGPULSE_JUDGE_ITPM = I
   tokens per W instead. Input tokens per call are what the fake reports as usage (len(json body) // 4). Achieved
   tokens per steady window / I, and the largest sum over any moving window of W (must stay <= I). The tokens the
   limiter charged (its pre-call estimate, or the usage when that was larger) are reconstructed from each request
   body to show where a shortfall comes from.
3. End to end with the local judge: one POST of 10,000 realistic traces (options.judge = "local"), 1, 2, 4 workers,
   from the POST until GET /v1/jobs/{id} says finished; against the single-process limit measured in the same run:
   the same per-trace work as a chunk run (`decide`: cheap checks, security checks, sampling; `evaluate_trace` with
   the local judge) and the finalizer's `build_report`, in a process of its own, no HTTP, no Redis, on the same
   10,000 traces decoded as a work-horse decodes them. It is measured before and after the runs (the ratios of every
   run use the mean; this machine's speed drifts by up to a quarter within minutes). `--beside` adds a 1-worker run
   with the limit measured at the same time, its clock started with the POST: their CPU per trace share the same
   minutes (their wall times share the second core, so they bound nothing). `--repeat N` runs the workers N times
   with a limit measured between each two runs, compares each run with the limits just before and after it, and prints
   the median: one run against one pair of limits says little on a machine whose speed drifts this much. Target
   (issue 28): 1 worker >= 0.9 of the mean limit, wall time.

This is a benchmark, not a test: it exits 0 on a missed target and non-zero only when a run breaks.
CPU used by redis-server, the API, the workers (with their work-horses), this process (which hosts the fake) and by
other processes on the machine is printed for every scenario, so a run disturbed by foreign load is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import multiprocessing
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/judge_throughput.py` puts bench/ first on sys.path, not the repo root
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import msgspec  # noqa: E402
import redis  # noqa: E402

from ragpulse.ops.redis_server import PrivateRedis  # noqa: E402
from tests.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.support import Proc, children_of, start_api, start_worker  # noqa: E402

WINDOW = 10
"""W: seconds per rate window, for the fake and for ragpulse alike (Anthropic's is 60; 10 keeps runs short)."""
REQUESTS_PER_WINDOW = 120
"""R: 12 req/s. Pacing costs 1/R of the ceiling ((R-1)/R = 0.992) and tolerates one spacing (84 ms) of jitter."""
INPUT_TOKENS_PER_WINDOW = 150_000
"""I: ~10 calls/s at the judge's ~1,520-token estimate for these traces (900k tokens a minute at a 60 s window)."""
LATENCY = 0.3
CONCURRENCY = 16
CHUNK_SIZE = 100
"""Traces per chunk job in phases 1-2: enough chunks (~9) that 4 workers all get work, few enough transitions."""
DIAGNOSTIC_CHUNK_SIZE = 500
"""Phase 1 also runs 1 worker with the default chunk size (full runs only), to show what chunk hand-overs cost."""
TARGET_RATIO = 0.95
STALL_SECONDS = 0.25
"""A gap between two admitted calls longer than ~3 pacing spacings: nobody was waiting for the pacer."""
LOCAL_TRACES = 10_000
LOCAL_TARGET = 0.9
"""One worker's end-to-end local-judge rate against the single-process limit (issue 28)."""
WORKER_COUNTS = (1, 2, 4)
QUIET_WAIT = 30.0
"""Seconds to wait, before each scenario, for other processes on the machine to go below 0.3 cores."""

# ---------------------------------------------------------------------------------------------------------------------
# realistic traces: a support bot's query, 5 retrieved passages of 4-6 sentences, an answer quoting a gold passage

_WORDS = (
    "the a of to and in for is on with that by this be are from or as at your can it not we an our if will you "
    "warranty battery return policy refund replacement device firmware update order shipping invoice account "
    "password reset subscription plan billing cycle charge support ticket technician appointment installation "
    "manual setting network router connection signal error code display screen charger cable adapter model "
    "serial number purchase receipt store region customer service hours contact email phone days months years "
    "covered excluded damage water accidental repair cost fee free standard express delivery tracking label"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 14))]
    if rng.random() < 0.5:
        words.insert(rng.randrange(len(words)), str(rng.choice([2, 3, 5, 7, 12, 14, 24, 30, 60, 90])))
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def make_trace(rng: random.Random, index: int, tag: str) -> dict[str, Any]:
    """~2.5 KB of JSON: 1-2 answer sentences copied from a gold passage, and in 30% of traces one made up."""
    ids = [f"kb-{rng.randrange(1_000_000):06d}" for _ in range(5)]
    docs = {doc: [_sentence(rng) for _ in range(rng.randint(4, 6))] for doc in ids}
    gold = rng.sample(ids, 2)
    answer = rng.sample(docs[gold[0]], rng.randint(1, 2))
    if rng.random() < 0.3:
        answer.append(_sentence(rng))
    return {"trace_id": f"{tag}-{index:06d}", "app": "acme-support", "query": _sentence(rng).rstrip(".") + "?",
            "retrieved_docs": [{"id": d, "score": round(rng.random(), 4), "text": " ".join(docs[d])} for d in ids],
            "answer": " ".join(answer), "gold_doc_ids": gold, "question_type": "single_fact", "source": "human",
            "generator_model": "acme-llm-2026-10", "timestamp": "2026-11-30T09:00:00Z"}


def make_traces(n: int, seed: int, tag: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make_trace(rng, i, tag) for i in range(n)]


# ---------------------------------------------------------------------------------------------------------------------
# the fake provider, with each logged request's status


class BenchFake(FakeAnthropic):
    """FakeAnthropic whose request log also says whether each request was admitted (200) or rejected (429)."""

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
        status, out_headers, payload = super().respond(body, headers)
        with self.lock:
            for entry in reversed(self.requests):
                if entry["body"] is body:
                    entry["status"] = status
                    break
        return status, out_headers, payload


def input_tokens(body: dict[str, Any]) -> int:
    """What the fake reports as usage.input_tokens for this request."""
    return len(json.dumps(body)) // 4


def estimated_tokens(body: dict[str, Any]) -> int:
    """The judge's pre-call estimate for this request (AnthropicJudge._call), which the limiter charges."""
    from ragpulse.judges.prompt import JUDGE_TASK  # noqa: PLC0415 - the judge's own estimate (phases 1-2 only)

    return int(JUDGE_TASK.estimate_input_tokens(len(json.dumps(body["messages"]))))


def mean_estimate(traces: list[dict[str, Any]]) -> float:
    """The judge's mean input-token estimate for these traces (~1,520 for make_trace's)."""
    from ragpulse.judges.prompt import user_message  # noqa: PLC0415
    from ragpulse.model.trace import Trace  # noqa: PLC0415

    messages = ([{"role": "user", "content": user_message(msgspec.convert(t, Trace))}] for t in traces)
    return sum(estimated_tokens({"messages": m}) for m in messages) / len(traces)


# ---------------------------------------------------------------------------------------------------------------------
# CPU accounting (Linux /proc)

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def cpu_tree(pid: int) -> float:
    """CPU seconds of a process, its reaped children (RQ work-horses) and its live children."""
    fields = _stat(pid)
    if fields is None:
        return 0.0
    total = sum(int(v) for v in fields[11:15]) / _TICK
    for child in children_of(pid):
        child_fields = _stat(child)
        if child_fields is not None:
            total += (int(child_fields[11]) + int(child_fields[12])) / _TICK
    return total


def machine_busy() -> float:
    """CPU seconds all processes have used since boot (from /proc/stat)."""
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in Path("/proc/stat").read_text().split()[1:8])
    return (user + nice + system + irq + softirq) / _TICK


@dataclass
class CpuMeter:
    """CPU shares (cores) over an interval: redis-server, API, workers, this process, everyone else."""

    pids: dict[str, list[int]]
    start: dict[str, float] = field(default_factory=dict)
    busy0: float = 0.0
    t0: float = 0.0
    shares: dict[str, float] = field(default_factory=dict)

    def begin(self) -> None:
        self.start = {name: sum(cpu_tree(p) for p in pids) for name, pids in self.pids.items()}
        self.start["bench"] = time.process_time()
        self.busy0, self.t0 = machine_busy(), time.monotonic()

    def end(self) -> dict[str, float]:
        wall = time.monotonic() - self.t0
        used = {name: sum(cpu_tree(p) for p in pids) - self.start[name] for name, pids in self.pids.items()}
        used["bench"] = time.process_time() - self.start["bench"]
        used["other"] = max(0.0, machine_busy() - self.busy0 - sum(used.values()))
        self.shares = {name: seconds / wall for name, seconds in used.items()}
        return self.shares


def wait_quiet(max_wait: float, threshold: float = 0.3) -> float:
    """Wait up to `max_wait` s until other processes use < `threshold` cores over 1 s; returns that share."""
    deadline = time.monotonic() + max_wait
    while True:
        busy0, mine0, t0 = machine_busy(), time.process_time(), time.monotonic()
        time.sleep(1.0)
        share = max(0.0, machine_busy() - busy0 - (time.process_time() - mine0)) / (time.monotonic() - t0)
        if share < threshold or time.monotonic() >= deadline:
            return share


def cpu_line(shares: dict[str, float]) -> str:
    return ", ".join(f"{name} {share:.2f}" for name, share in shares.items()) + " cores"


# ---------------------------------------------------------------------------------------------------------------------
# a private stack: redis-server, the API, N workers


class Stack:
    """A private redis-server, `python -m service` and N `python -m worker` processes sharing one queue prefix."""

    def __init__(self, tmp: Path, workers: int, env: dict[str, str]) -> None:
        self.redis = PrivateRedis().start()
        self.procs: list[Proc] = []
        try:
            self.env = {"RAGPULSE_QUEUE": f"bench-{uuid.uuid4().hex[:8]}", **env}
            t0 = time.monotonic()
            self.url, api = start_api(self.redis.url, tmp, self.env)
            self.procs.append(api)
            self.api_seconds = time.monotonic() - t0
            t0 = time.monotonic()
            self.workers = [start_worker(self.redis.url, tmp, self.env, name=uuid.uuid4().hex[:6])
                            for _ in range(workers)]
            self.procs += self.workers
            self._wait_registered(workers)
            self.workers_seconds = time.monotonic() - t0
            self.http = httpx.Client(base_url=self.url, timeout=120)
        except BaseException:
            self.stop()
            raise

    def _wait_registered(self, n: int, timeout: float = 60.0) -> None:
        """Until every worker has registered with RQ (so worker start-up is not part of any measurement)."""
        admin = redis.Redis.from_url(self.redis.url)
        deadline = time.monotonic() + timeout
        while admin.scard("rq:workers") < n:
            for proc in self.workers:
                if proc.process.poll() is not None:
                    raise RuntimeError(f"worker exited with {proc.process.returncode}:\n{proc.output()}")
            if time.monotonic() > deadline:
                raise RuntimeError("workers did not register:\n" + "\n".join(w.output() for w in self.workers))
            time.sleep(0.05)
        admin.close()

    def meter(self) -> CpuMeter:
        return CpuMeter({"redis": [self.redis.process.pid], "api": [self.procs[0].process.pid],
                         "workers": [w.process.pid for w in self.workers]})

    def post(self, traces: list[dict[str, Any]], options: dict[str, Any]) -> str:
        response = self.http.post("/v1/batches", content=msgspec.json.encode({"traces": traces, "options": options}),
                                  headers={"content-type": "application/json"})
        if response.status_code != 202:
            raise RuntimeError(f"POST /v1/batches answered {response.status_code}: {response.text[:500]}")
        return response.json()["job_id"]

    def wait(self, job_id: str, timeout: float, poll: float = 0.1) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.http.get(f"/v1/jobs/{job_id}").json()
            if job["status"] in {"finished", "finished_with_errors", "failed"}:
                return job
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} did not finish in {timeout:.0f} s: {job}")
            time.sleep(poll)

    def stop(self) -> None:
        if hasattr(self, "http"):
            self.http.close()
        for proc in self.procs:
            proc.stop()
        self.redis.stop()


# ---------------------------------------------------------------------------------------------------------------------
# phases 1 and 2: judged runs against the fake


@dataclass
class Windowed:
    """Achieved amount (calls or tokens) per window over the steady interval, against the limit."""

    limit: float
    windows: list[float]
    steady_start: float
    steady_seconds: float
    moving_max: float
    total: float

    @property
    def per_window(self) -> float:
        return sum(self.windows) / len(self.windows) if self.windows else float("nan")

    @property
    def ratio(self) -> float:
        return self.per_window / self.limit


def windowed(times: list[float], amounts: list[float], window: float, limit: float) -> Windowed:
    """Drop the first window after the first call (warm-up); the whole windows after it, up to the last call."""
    order = sorted(range(len(times)), key=times.__getitem__)
    times, amounts = [times[i] for i in order], [amounts[i] for i in order]
    start = times[0] + window
    n = int((times[-1] - start) // window)
    sums = [0.0] * n
    for t, a in zip(times, amounts):
        j = int((t - start) // window) if t >= start else -1
        if 0 <= j < n:
            sums[j] += a
    # the largest sum over any moving window (t - W, t], the fake's own definition of its window
    best, acc, lo = 0.0, 0.0, 0
    for hi, t in enumerate(times):
        acc += amounts[hi]
        while times[lo] <= t - window:
            acc -= amounts[lo]
            lo += 1
        best = max(best, acc)
    return Windowed(limit, sums, start, n * window, best, sum(amounts))


@dataclass
class JudgedRun:
    kind: str
    workers: int
    traces: int
    wall: float
    job_status: str
    requests: int
    rejected: int
    calls: Windowed
    tokens: Windowed | None = None
    charged: Windowed | None = None
    lost_slots: float = 0.0
    stalls: int = 0
    stall_slots: float = 0.0
    gaps: list[tuple[float, float]] = field(default_factory=list)
    quiet: float = 0.0
    tightest_span: float = 0.0
    rejected_at: list[float] = field(default_factory=list)
    arrivals: list[tuple[float, int]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    startup: tuple[float, float] = (0.0, 0.0)
    chunk_size: int = CHUNK_SIZE


def judged_run(kind: str, workers: int, steady_windows: int, tmp: Path, seed: int,
               chunk_size: int = CHUNK_SIZE) -> JudgedRun:
    """One batch through API + `workers` workers against the fake; `kind` is "requests" or "input_tokens"."""
    rpm = REQUESTS_PER_WINDOW if kind == "requests" else 0
    env = {"ANTHROPIC_API_KEY": "bench", "RAGPULSE_JUDGE_RATE_WINDOW_SECONDS": str(WINDOW),
           "RAGPULSE_JUDGE_CONCURRENCY": str(CONCURRENCY), "RAGPULSE_CHUNK_SIZE": str(chunk_size)}
    if kind == "requests":
        env["RAGPULSE_JUDGE_RPM"] = str(REQUESTS_PER_WINDOW)
        calls_per_s = (REQUESTS_PER_WINDOW - 1) / WINDOW
    else:
        env["RAGPULSE_JUDGE_ITPM"] = str(INPUT_TOKENS_PER_WINDOW)
        calls_per_s = INPUT_TOKENS_PER_WINDOW / WINDOW / mean_estimate(make_traces(200, seed, "probe"))
    # demand above the limit for the warm-up window, `steady_windows` windows and half a window of slack
    n = int(calls_per_s * WINDOW * (steady_windows + 1.5)) + 1
    traces = make_traces(n, seed, f"{kind[:3]}{workers}")
    # Caching off: this bench measures the input-token limit against the whole request, as reported before caching.
    with BenchFake(latency=LATENCY, rpm=rpm, window_seconds=WINDOW, cache_min_tokens=10**9) as fake:
        quiet = wait_quiet(QUIET_WAIT)
        stack = Stack(tmp, workers, {**env, "RAGPULSE_JUDGE_BASE_URL": fake.url})
        try:
            meter = stack.meter()
            meter.begin()
            t0 = time.monotonic()
            job_id = stack.post(traces, {"judge": "anthropic", "k": [1, 3, 5, 10]})
            job = stack.wait(job_id, timeout=n / calls_per_s * 3 + 120)
            wall = time.monotonic() - t0
            time.sleep(0.3)  # let the last work-horse be reaped so its CPU counts
            cpu = meter.end()
        finally:
            stack.stop()
        with fake.lock:
            log = list(fake.requests)
            rejected = fake.rejected
    admitted = [entry for entry in log if entry.get("status") == 200]
    times = [entry["at"] for entry in admitted]
    calls = windowed(times, [1.0] * len(times), WINDOW, REQUESTS_PER_WINDOW)
    run = JudgedRun(kind, workers, n, wall, job["status"], len(log), rejected, calls, cpu=cpu,
                    startup=(stack.api_seconds, stack.workers_seconds), quiet=quiet, chunk_size=chunk_size)
    if kind == "requests":
        # slots lost to gaps: every gap longer than the pacing spacing wastes (gap - spacing) / spacing slots
        spacing = WINDOW / (REQUESTS_PER_WINDOW - 1)
        steady = sorted(t for t in times if calls.steady_start <= t < calls.steady_start + calls.steady_seconds)
        gaps = [(b - a, a - calls.steady_start) for a, b in zip(steady, steady[1:])]
        run.lost_slots = sum(max(0.0, g - spacing) for g, _ in gaps) / spacing
        stalls = [g for g, _ in gaps if g > STALL_SECONDS]
        run.stalls, run.stall_slots = len(stalls), sum(g - spacing for g in stalls) / spacing
        run.gaps = sorted(gaps, reverse=True)[:3]
        # every arrival, admitted or not: R + 1 of them inside one window W is what makes the fake answer 429
        every = sorted((entry["at"], entry.get("status", 0)) for entry in log)
        spans = [b[0] - a[0] for a, b in zip(every, every[REQUESTS_PER_WINDOW:])]
        run.tightest_span = min(spans) if spans else float("nan")
        run.rejected_at = [at - calls.steady_start for at, status in every if status == 429]
        run.arrivals = [(round(at - every[0][0], 4), status) for at, status in every]
    else:
        actual = [float(input_tokens(entry["body"])) for entry in admitted]
        charged = [float(max(estimated_tokens(entry["body"]), input_tokens(entry["body"]))) for entry in admitted]
        run.tokens = windowed(times, actual, WINDOW, INPUT_TOKENS_PER_WINDOW)
        run.charged = windowed(times, charged, WINDOW, INPUT_TOKENS_PER_WINDOW)
    return run


def print_judged(run: JudgedRun) -> None:
    c = run.calls
    print(f"  {run.workers} worker(s), chunks of {run.chunk_size}: {run.traces} traces, job {run.job_status} in "
          f"{run.wall:.1f} s; "
          f"{run.requests} requests, {run.rejected} answered 429; startup: API {run.startup[0]:.1f} s, "
          f"workers registered {run.startup[1]:.1f} s")
    against = (f"= {c.per_window / REQUESTS_PER_WINDOW:.3f} of R={REQUESTS_PER_WINDOW}" if run.kind == "requests"
               else "(no request limit in this phase)")
    print(f"    steady interval {c.steady_seconds:.0f} s ({len(c.windows)} windows): calls per window "
          f"{' '.join(f'{w:.0f}' for w in c.windows)} -> {c.per_window:.1f} {against}; largest moving-window count "
          f"{c.moving_max:.0f}")
    if run.kind == "requests":
        print(f"    pacing ceiling (R-1)/R = {(REQUESTS_PER_WINDOW - 1) / REQUESTS_PER_WINDOW:.3f}; slots lost to gaps "
              f"longer than the spacing {run.lost_slots:.1f} (jitter included), of which {run.stall_slots:.1f} in "
              f"{run.stalls} stall(s) > {STALL_SECONDS * 1000:.0f} ms; longest gaps: "
              + ", ".join(f"{g * 1000:.0f} ms at +{at:.1f} s" for g, at in run.gaps))
        nominal = REQUESTS_PER_WINDOW * WINDOW / (REQUESTS_PER_WINDOW - 1)
        print(f"    tightest span of {REQUESTS_PER_WINDOW + 1} consecutive arrivals {run.tightest_span:.3f} s (paced: "
              f"{nominal:.3f} s; the fake rejects the last one below {WINDOW} s)"
              + ("; 429s at " + ", ".join(f"{t:+.1f} s" for t in run.rejected_at[:12]) if run.rejected_at else ""))
    else:
        t, ch = run.tokens, run.charged
        print(f"    input tokens per window (fake's usage) {' '.join(f'{w:,.0f}' for w in t.windows)} -> "
              f"{t.per_window:,.0f} = {t.ratio:.3f} of I={INPUT_TOKENS_PER_WINDOW:,}; largest moving-window sum "
              f"{t.moving_max:,.0f} ({t.moving_max / INPUT_TOKENS_PER_WINDOW:.3f} of I)")
        print(f"    tokens the limiter charged (its estimate) per window {ch.per_window:,.0f} = {ch.ratio:.3f} of I; "
              f"largest moving-window sum {ch.moving_max:,.0f} ({ch.moving_max / INPUT_TOKENS_PER_WINDOW:.3f}); "
              f"usage / estimate = {t.total / ch.total:.3f}")
    print(f"    CPU: {cpu_line(run.cpu)} (others used {run.quiet:.2f} cores just before)")


# ---------------------------------------------------------------------------------------------------------------------
# phase 3: local judge end to end


@dataclass
class LocalRun:
    workers: int
    traces: int
    post_seconds: float
    first_result: float
    all_done: float
    wall: float
    job_status: str
    done: int
    cpu: dict[str, float]
    quiet: float
    report_split: tuple[float, float] | None = None
    limit_beside: tuple[float, float, float] | None = None
    """The in-process limit measured at the same time as the run (SpawnedLimit): traces/s, CPU ms per trace, report
    share."""
    limit: tuple[float, float, float] | None = None
    """The limit the run is compared with: the mean of those measured just before and just after it (traces/s, CPU
    ms per trace, report share)."""

    @property
    def per_s(self) -> float:
        return self.traces / self.wall

    @property
    def worker_cpu_ms(self) -> float:
        """Worker CPU (work-horses included) per trace."""
        return self.cpu["workers"] * self.wall / self.traces * 1000

    @property
    def wall_ratio(self) -> float:
        """Traces per second against the limit's (the target's figure)."""
        assert self.limit is not None
        return self.per_s / self.limit[0]

    @property
    def cpu_ratio(self) -> float:
        """The limit's CPU per trace against the worker's."""
        assert self.limit is not None
        return self.limit[1] / self.worker_cpu_ms


def _in_process_limit(traces: list[dict[str, Any]],
                      start_signal: Connection | None = None) -> tuple[float, float, float]:
    """What a job of these traces costs in one process with no HTTP and no Redis, as a chunk run and the finalizer do
    it: per trace the cheap and security checks and the sampling decision (`decide`), then `evaluate_trace` with the
    local judge made as a worker makes it (`kinds.make_judge`), on plain asyncio as a worker runs it; then the
    report over the results (`build_report`, which the job's finalizer runs before the job is finished). Every
    document is new to the process, as it is to the work-horse that judges a chunk. Measured on the run's own traces
    (all of them: the caches grow over a run as they do in a work-horse), decoded from msgpack as a work-horse decodes
    its chunk, and moved out of the collector's reach as a work-horse moves its chunk's (`gc.freeze`), so that the
    reference pays no collection the worker does not. Returns (traces per wall second, CPU ms per trace, the report's
    share of the wall time)."""
    from ragpulse.config.settings import Settings  # noqa: PLC0415
    from ragpulse.evaluation.trace import evaluate_trace  # noqa: PLC0415
    from ragpulse.judges import kinds  # noqa: PLC0415
    from ragpulse.model.trace import BatchOptions, Trace  # noqa: PLC0415
    from ragpulse.reporting.build import build_report  # noqa: PLC0415

    try:
        from ragpulse.evaluation.chunk import decide  # noqa: PLC0415
        from ragpulse.monitoring.sampling import SamplingPolicy  # noqa: PLC0415
    except ImportError:  # a commit from before the security checks (run beside today's for a comparison)
        decide = None
    # Decoded from msgpack bytes as a work-horse decodes its chunk (store.chunks): every string a new object, its hash
    # not yet computed; msgspec.convert from these dicts shares the strings and made the reference 2-4% faster.
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(traces), type=list[Trace])
    options = BatchOptions(judge="local", k=[1, 3, 5, 10])
    gc.collect()
    gc.freeze()
    if start_signal is not None:
        start_signal.send("ready")
        start_signal.recv()

    async def run() -> list[Any]:
        judge = kinds.make_judge("local", Settings.from_env({}))
        assert judge is not None
        results = []
        for i, trace in enumerate(decoded):
            if decide is None:
                results.append(await evaluate_trace(trace, i, options, judge))
                continue
            _checks, security, sampled, _reason = decide(trace, SamplingPolicy(), options)
            results.append(await evaluate_trace(trace, i, options, judge if sampled else None, security=security))
        return results

    start, cpu = time.perf_counter(), time.process_time()
    results = asyncio.run(run())
    evaluated = time.perf_counter()
    build_report("in-process", options, results)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    gc.unfreeze()
    return len(decoded) / wall, cpu / len(decoded) * 1000, (time.perf_counter() - evaluated) / wall


def _limit_in_child(traces: list[dict[str, Any]], connection: Connection) -> None:
    connection.send(_in_process_limit(traces, connection))


class SpawnedLimit:
    """The in-process limit in a fresh process of its own (spawned, not forked: a second measurement finds no cache the
    first filled, and the bench's own heap weighs on none), its clock started by `go`.

    Started with a worker's run (`local_run(beside=...)`), the two share this machine's speed of those minutes, which
    drifts by up to a quarter between two measurements minutes apart (a limit measured before and after a run differed
    by 1-27% on 2026-12-02), so their CPU per trace compares the code, not the minutes. Not their wall time: with one
    worker the two take one core each, and the API, Redis and this process take theirs from both (the worker got 0.90
    cores in one such run)."""

    def __init__(self, traces: list[dict[str, Any]]) -> None:
        spawn = multiprocessing.get_context("spawn")
        self._connection, child = spawn.Pipe()
        self._process = spawn.Process(target=_limit_in_child, args=(traces, child))
        self._process.start()
        if not self._connection.poll(300) or self._connection.recv() != "ready":
            raise RuntimeError("the limit's process did not get ready in 300 s")

    def go(self) -> None:
        """Start the limit's clock."""
        self._connection.send("go")

    def result(self) -> tuple[float, float, float]:
        """The limit's (traces per wall second, CPU ms per trace, the report's share), once it has finished."""
        try:
            if not self._connection.poll(900):
                raise RuntimeError("the limit measured beside the run did not finish in 900 s")
            return self._connection.recv()
        finally:
            self._process.join(10)


def in_process_limit(traces: list[dict[str, Any]]) -> tuple[float, float, float]:
    """The limit measured alone, in a spawned process (SpawnedLimit)."""
    limit = SpawnedLimit(traces)
    limit.go()
    return limit.result()


def compared_limit(*limits: tuple[float, float, float]) -> tuple[float, float, float]:
    """The mean of limits measured around a run (each field on its own)."""
    return tuple(sum(field) / len(limits) for field in zip(*limits, strict=True))  # type: ignore[return-value]


def print_local(run: LocalRun) -> None:
    print(f"  {run.workers} worker(s): POST {run.post_seconds:.1f} s, first result {run.first_result:.1f} s, "
          f"all traces evaluated {run.all_done:.1f} s, {run.job_status} ({run.done:,} done) after "
          f"{run.wall:.1f} s = {run.per_s:,.0f} traces/s; worker CPU {run.worker_cpu_ms:.2f} ms per trace")
    print(f"    CPU: {cpu_line(run.cpu)} (others used {run.quiet:.2f} cores just before)")
    if run.report_split:
        load, build = run.report_split
        print(f"    the finalizer's serial tail, redone in this process on the finished job: load "
              f"{run.traces:,} results {load:.2f} s, build_report {build:.2f} s")


def print_ratio(run: LocalRun) -> None:
    print(f"  {run.workers} worker(s): {run.wall_ratio:.3f} x the single-process limit (wall); worker CPU per trace "
          f"{run.cpu_ratio:.3f} x the in-process CPU's rate"
          + (f"; target >= {LOCAL_TARGET} (wall): {verdict(run.wall_ratio >= LOCAL_TARGET)}" if run.workers == 1
             else ""))


def print_repeated(runs: list[LocalRun]) -> None:
    """The 1-worker runs of a --repeat: each ratio, the median, and how many reach the target."""
    ones = [run for run in runs if run.workers == 1]
    if not ones:
        return
    walls = sorted(run.wall_ratio for run in ones)
    cpus = sorted(run.cpu_ratio for run in ones)
    passing = sum(ratio >= LOCAL_TARGET for ratio in walls)
    print(f"  1 worker, {len(ones)} runs, each against the limits measured just before and after it: wall "
          f"{', '.join(f'{r:.3f}' for r in walls)}; median {statistics.median(walls):.3f}, {passing} of {len(ones)} "
          f">= {LOCAL_TARGET}; CPU per trace median {statistics.median(cpus):.3f}")


def beside_run(args: argparse.Namespace, traces: list[dict[str, Any]], tmp: Path) -> bool:
    """`--beside`: one more 1-worker run with the limit measured at the same time; compares CPU per trace only.
    Answers whether the run broke."""
    if not (args.beside and 1 in args.workers):
        return False
    try:
        run = local_run(1, traces, tmp, beside=functools.partial(SpawnedLimit, traces))
    except RuntimeError as exc:
        print(f"  1 worker beside the limit: BROKEN RUN: {exc}")
        return True
    rate, cpu_ms, _share = run.limit_beside
    print(f"  1 worker again, the limit measured beside it (its clock started with the POST): worker "
          f"CPU {run.worker_cpu_ms:.2f} ms per trace, the limit's {cpu_ms:.2f} ms: "
          f"{cpu_ms / run.worker_cpu_ms:.3f} (the same minutes of this machine; the wall times, "
          f"{run.per_s:,.0f} and {rate:,.0f} traces/s, share the second core and bound nothing)")
    return False


def report_split(redis_url: str, job_id: str) -> tuple[float, float]:
    """The finalizer's serial tail, redone here on the finished job: (load every result, build the report) seconds."""
    from ragpulse.reporting.build import build_report  # noqa: PLC0415
    from ragpulse.store import Store  # noqa: PLC0415

    client = redis.Redis.from_url(redis_url)
    store = Store(client, 3600)
    t0 = time.perf_counter()
    results = store.results.all(job_id)
    t1 = time.perf_counter()
    build_report(job_id, store.jobs.get(job_id).options, results)
    t2 = time.perf_counter()
    client.close()
    return t1 - t0, t2 - t1


def local_run(workers: int, traces: list[dict[str, Any]], tmp: Path, split: bool = False,
              beside: Callable[[], SpawnedLimit] | None = None) -> LocalRun:
    """One POST of `traces` with the local judge, to finished. With `beside`, the limit it makes is measured at the
    same time, its clock started with the POST (LocalRun.limit_beside)."""
    quiet = wait_quiet(QUIET_WAIT)
    stack = Stack(tmp, workers, {})
    limit = None
    try:
        meter = stack.meter()
        limit = beside() if beside is not None else None
        meter.begin()
        if limit is not None:
            limit.go()
        t0 = time.monotonic()
        job_id = stack.post(traces, {"judge": "local", "k": [1, 3, 5, 10]})
        posted = time.monotonic() - t0
        first = all_done = None
        deadline = t0 + 600
        while True:  # poll every 50 ms: the first result, every trace evaluated (report not yet built), finished
            job = stack.http.get(f"/v1/jobs/{job_id}").json()
            now = time.monotonic() - t0
            progress = job["progress"]
            evaluated = progress["done"] + progress["failed"] + progress.get("skipped", 0)
            if first is None and evaluated:
                first = now
            if all_done is None and evaluated >= progress["total"]:
                all_done = now
            if job["status"] in {"finished", "finished_with_errors", "failed"}:
                wall = now
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} did not finish in 600 s: {job}")
            time.sleep(0.05)
        time.sleep(0.3)
        cpu = meter.end()
        beside_result = limit.result() if limit is not None else None
        tail = report_split(stack.redis.url, job_id) if split else None
    finally:
        stack.stop()
    return LocalRun(workers, len(traces), posted, first or wall, all_done or wall, wall, job["status"],
                    job["progress"]["done"], cpu, quiet, tail, beside_result)


# ---------------------------------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"cores": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "kernel": platform.release()}


def git_state() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "service", "dispatch", "ragpulse", "worker"],
                               capture_output=True, text=True, cwd=ROOT, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"
    changed = f" + {len(dirty)} uncommitted change(s) in service/, dispatch/, ragpulse/, worker/" if dirty else ""
    return f"commit {head}{changed}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> None:  # noqa: PLR0915 - a linear script
    global QUIET_WAIT  # noqa: PLW0603 - one knob read by every scenario
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 steady windows per run, 2,000 local-judge traces")
    parser.add_argument("--workers", type=int, nargs="+", default=list(WORKER_COUNTS))
    parser.add_argument("--phases", nargs="+", default=["1", "2", "3"], choices=["1", "2", "3"])
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    parser.add_argument("--beside", action="store_true",
                        help="phase 3: one more 1-worker run with the in-process limit measured at the same time")
    parser.add_argument("--chunk-size", type=int, default=CHUNK_SIZE, help="RAGPULSE_CHUNK_SIZE in phases 1-2")
    parser.add_argument("--repeat", type=int, default=1,
                        help="phase 3: the runs this many times, a limit measured between each two, each run compared "
                             "with the limits just before and after it; prints the median")
    parser.add_argument("--wait-quiet", type=float, default=QUIET_WAIT,
                        help="seconds to wait before each scenario for other processes to go below 0.3 cores")
    args = parser.parse_args()
    QUIET_WAIT = args.wait_quiet
    steady = 3 if args.quick else 6
    n_local = 2_000 if args.quick else LOCAL_TRACES

    info = machine()
    print(f"judge throughput benchmark: {info['cores']} cores, {info['cpu']}, Python {info['python']}, "
          f"Linux {info['kernel']}; {git_state()}")
    print(f"window W={WINDOW} s, request limit R={REQUESTS_PER_WINDOW}, "
          f"input-token limit I={INPUT_TOKENS_PER_WINDOW:,}, fake latency {LATENCY * 1000:.0f} ms, "
          f"RAGPULSE_JUDGE_CONCURRENCY={CONCURRENCY}, RAGPULSE_CHUNK_SIZE={args.chunk_size} (phases 1-2), "
          f"{steady} steady windows per run")
    python = os.path.relpath(sys.executable, Path.cwd()) if sys.executable.startswith(str(ROOT)) else sys.executable
    print(f"command: {' '.join([python, *sys.argv])}")
    results: dict[str, Any] = {"machine": info, "args": vars(args) | {"json": str(args.json)}}
    broken = False
    with tempfile.TemporaryDirectory(prefix="ragpulse-bench-judge-") as tmp_dir:
        tmp = Path(tmp_dir)
        judged: dict[str, list[JudgedRun]] = {"requests": [], "input_tokens": []}
        for phase, kind, title in (("1", "requests", "request limit"), ("2", "input_tokens", "input-token limit")):
            if phase not in args.phases:
                continue
            print(f"\n{phase}. {title}")
            for workers in args.workers:
                try:
                    run = judged_run(kind, workers, steady, tmp, seed=workers, chunk_size=args.chunk_size)
                except RuntimeError as exc:
                    broken = True
                    print(f"  {workers} worker(s): BROKEN RUN: {exc}")
                    continue
                judged[kind].append(run)
                print_judged(run)
            if kind == "requests" and not args.quick and args.chunk_size == CHUNK_SIZE and 1 in args.workers:
                print(f"  diagnostic: 1 worker with chunks of {DIAGNOSTIC_CHUNK_SIZE} (one chunk hand-over instead of "
                      f"~{steady + 1})")
                try:
                    run = judged_run(kind, 1, steady, tmp, seed=1, chunk_size=DIAGNOSTIC_CHUNK_SIZE)
                except RuntimeError as exc:
                    broken = True
                    print(f"  BROKEN RUN: {exc}")
                else:
                    judged[kind].append(run)
                    print_judged(run)
        local: list[LocalRun] = []
        limit = limit_cpu_ms = report_share = None
        if "3" in args.phases:
            print(f"\n3. end to end, local judge, {n_local:,} traces in one POST (default RAGPULSE_CHUNK_SIZE, 500: "
                  f"{-(-n_local // 500)} chunk jobs)")
            traces = make_traces(n_local, 7, "loc")
            body_mb = len(msgspec.json.encode({"traces": traces})) / 1e6
            limits = [in_process_limit(traces)]
            print(f"  single-process limit before the runs (decide + evaluate_trace with the local judge, then "
                  f"build_report; no HTTP/Redis): {limits[0][0]:,.0f} traces/s, {limits[0][1]:.2f} ms CPU per trace "
                  f"(the report {limits[0][2]:.0%} of the time); body {body_mb:.1f} MB")
            for repetition in range(args.repeat):
                done_before = len(local)
                for workers in args.workers:
                    try:
                        run = local_run(workers, traces, tmp, split=not local)
                    except RuntimeError as exc:
                        broken = True
                        print(f"  {workers} worker(s): BROKEN RUN: {exc}")
                        continue
                    local.append(run)
                    print_local(run)
                if repetition == args.repeat - 1:
                    broken |= beside_run(args, traces, tmp)
                limits.append(in_process_limit(traces))
                limit = compared_limit(limits[-2], limits[-1])
                print(f"  single-process limit after: {limits[-1][0]:,.0f} traces/s, {limits[-1][1]:.2f} ms CPU per "
                      f"trace; the runs before it are compared with the mean of it and the one before, "
                      f"{limit[0]:,.0f} traces/s and {limit[1]:.2f} ms (this machine's speed drifts by minutes: the "
                      f"two differ by {abs(limits[-1][0] / limits[-2][0] - 1):.0%})")
                for run in local[done_before:]:
                    run.limit = limit
                    print_ratio(run)
            limit, limit_cpu_ms, report_share = compared_limit(*limits)
            if args.repeat > 1:
                print_repeated(local)

    print("\nsummary (ratios against the limit of the same run)\n")
    if judged["requests"] or judged["input_tokens"]:
        print("| limit | workers | steady windows | achieved per window | ratio | max in any moving window | 429s "
              "| target | other processes |")
        print("|---|---|---|---|---|---|---|---|---|")
        for run in judged["requests"]:
            c = run.calls
            ok = c.ratio >= TARGET_RATIO and run.rejected == 0 and run.job_status == "finished"
            print(f"| R={REQUESTS_PER_WINDOW} req/{WINDOW} s | {run.workers} (chunks of {run.chunk_size}) | "
                  f"{len(c.windows)} | {c.per_window:.1f} req "
                  f"| {c.ratio:.3f} | {c.moving_max:.0f} | {run.rejected} | {verdict(ok)} (>= {TARGET_RATIO}, 0 x 429) "
                  f"| {run.cpu['other']:.2f} cores |")
        for run in judged["input_tokens"]:
            t = run.tokens
            ok = t.ratio >= TARGET_RATIO and t.moving_max <= INPUT_TOKENS_PER_WINDOW and run.job_status == "finished"
            print(f"| I={INPUT_TOKENS_PER_WINDOW:,} tok/{WINDOW} s | {run.workers} (chunks of {run.chunk_size}) | "
                  f"{len(t.windows)} | "
                  f"{t.per_window:,.0f} tok ({run.calls.per_window:.1f} req) | {t.ratio:.3f} "
                  f"(charged {run.charged.ratio:.3f}) | {t.moving_max:,.0f} ({t.moving_max / t.limit:.3f}) | "
                  f"{run.rejected} | {verdict(ok)} (>= {TARGET_RATIO}, <= I) | {run.cpu['other']:.2f} cores |")
    if local:
        base = local[0].per_s if local[0].workers == 1 else None
        print("\n| local judge | workers | POST | all evaluated | POST to finished | traces/s | vs single-process "
              "limit | vs 1 worker | worker CPU/trace | other processes |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for run in local:
            vs1 = f"{run.per_s / base:.2f}x" if base else "n/a"
            print(f"| {run.traces:,} traces | {run.workers} | {run.post_seconds:.1f} s | {run.all_done:.1f} s | "
                  f"{run.wall:.1f} s | {run.per_s:,.0f} | {run.wall_ratio:.3f}x ({run.limit[0]:,.0f}/s) | {vs1} | "
                  f"{run.worker_cpu_ms:.2f} ms ({run.limit[1]:.2f} in-process) | {run.cpu['other']:.2f} cores |")

    results["judged"] = [
        {"kind": r.kind, "workers": r.workers, "chunk_size": r.chunk_size, "traces": r.traces, "wall": r.wall,
         "status": r.job_status,
         "requests": r.requests, "rejected": r.rejected, "calls_windows": r.calls.windows,
         "calls_ratio": r.calls.ratio, "calls_moving_max": r.calls.moving_max, "lost_slots": r.lost_slots,
         "tokens_windows": r.tokens.windows if r.tokens else None, "tokens_ratio": r.tokens.ratio if r.tokens else None,
         "tokens_moving_max": r.tokens.moving_max if r.tokens else None,
         "charged_ratio": r.charged.ratio if r.charged else None, "cpu": r.cpu,
         "tightest_span": r.tightest_span, "rejected_at": r.rejected_at, "arrivals": r.arrivals}
        for r in judged["requests"] + judged["input_tokens"]]
    results["local"] = [vars(r) | {"per_s": r.per_s, "wall_ratio": r.wall_ratio, "cpu_ratio": r.cpu_ratio} for r in local]
    results["local_limit"] = {"traces_per_s": limit, "cpu_ms_per_trace": limit_cpu_ms, "report_share": report_share}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
