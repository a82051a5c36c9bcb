"""How close the batch judge path gets to its concurrency bound: workers x RAGPULSE_JUDGE_CONCURRENCY / latency.

    .venv/bin/python bench/judge_concurrency.py                  # 1x32, 2x32, 1x128, 2x64; both chunkings; ~10 min
    .venv/bin/python bench/judge_concurrency.py --runs 1x32 --chunking whole --seconds 10

A private redis-server, the real API (`python -m service`) and W real RQ workers (`python -m worker`) judge one
batch with the Anthropic judge against tests.fake_anthropic.FakeAnthropic, which answers every call after 300 ms
(TCP_NODELAY set, so no Nagle delay) and enforces no rate limit; ragpulse is configured with none either. With C =
RAGPULSE_JUDGE_CONCURRENCY calls in flight per worker, the bound is W x C / 0.3 s calls a second. The batch holds
`--seconds` of demand at that bound (at most 10,000 traces, the API's batch limit, per POST).

Each run is made with two chunkings: `whole`, one chunk per worker (RAGPULSE_CHUNK_SIZE at least the batch, which the
API then cuts into one chunk per live worker): the judge path itself; and `default`, RAGPULSE_CHUNK_SIZE at its
default (500), which adds a chunk hand-over (the last calls of a chunk, a new work-horse) every 500 traces.

The figure is the achieved call rate over the middle 80% of the calls, as the fake logged their arrivals (the first
and last 10% are the ramp-up and the drain of the last chunk), divided by the bound; target >= 0.9. The reference,
measured just before each run against the same fake: a lean client (aiohttp and msgspec, no judge, no Redis; the
`lean` of bench/judge_transport.py) in a child process with the same W x C calls in flight, for the same seconds of
demand: what this machine and the fake allow at that moment, so a shared machine's load shows in both. The load
average is printed at the start and the end of each run. Printed with it:
the CPU used by redis-server, the API, the workers (with their work-horses), this process (which hosts the fake) and
other processes, the workers' CPU per call and the cores the bound would take at that cost, and the pauses of more
than 100 ms between two calls (hand-overs show there). This is a benchmark, not a test: it exits 0 on a missed
target and non-zero only when a run breaks.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/judge_concurrency.py` puts bench/ first on sys.path, not the repo root
    sys.path.insert(0, str(ROOT))

from bench.judge_throughput import (  # noqa: E402 - the same private stack, traces and CPU accounting
    Stack, cpu_line, git_state, machine, make_traces, wait_quiet,
)
from ragpulse.store.results import collection_paused  # noqa: E402
from tests.fake_anthropic import FakeAnthropic  # noqa: E402

LATENCY = 0.3
"""Seconds the fake takes to answer every call."""
TARGET_RATIO = 0.9
RUNS = ("1x32", "2x32", "1x128", "2x64")
"""WORKERSxCONCURRENCY of each run, by default."""
CHUNKINGS = ("whole", "default")
"""`whole`: one chunk per worker; `default`: RAGPULSE_CHUNK_SIZE left at its default."""
MAX_BATCH = 10_000
"""Traces per POST (the API's default RAGPULSE_MAX_TRACES)."""
MIDDLE = 0.8
"""Share of the calls, in arrival order, over which the rate is measured (the ramp and the drain left out)."""
GAP_SECONDS = 0.1
"""A pause between two consecutive calls longer than this is reported (at the bound, calls are ms apart)."""


@dataclass
class Run:
    """One measured run."""

    workers: int
    concurrency: int
    chunking: str
    traces: int
    status: str
    calls: int
    rate: float
    wall: float
    cpu: dict[str, float]
    quiet: float
    gaps: list[tuple[float, float]]
    """Pauses of more than GAP_SECONDS between two consecutive calls (chunk hand-overs, stalls): where, as the share
    of the calls made before it, and seconds."""
    reference: float
    """Calls a second the lean client reached with the same calls in flight, just before (middle 80%)."""
    load: tuple[float, float]
    """The 1-minute load average at the start and the end of the run."""

    @property
    def bound(self) -> float:
        return self.workers * self.concurrency / LATENCY

    @property
    def ratio(self) -> float:
        return self.rate / self.bound

    @property
    def reference_ratio(self) -> float:
        return self.reference / self.bound

    @property
    def worker_ms(self) -> float:
        """CPU milliseconds the workers (and their work-horses) spent per call."""
        return self.cpu["workers"] * self.wall / self.calls * 1000


def gaps_between(arrivals: list[float]) -> list[tuple[float, float]]:
    """Pauses longer than GAP_SECONDS between consecutive calls: (where, as the share of the calls made before it,
    seconds)."""
    times = sorted(arrivals)
    return [((i + 1) / len(times), b - a) for i, (a, b) in enumerate(zip(times, times[1:])) if b - a > GAP_SECONDS]


def middle_rate(arrivals: list[float]) -> float:
    """Calls a second between the arrivals that open and close the middle MIDDLE share of the calls."""
    times = sorted(arrivals)
    first = int(len(times) * (1 - MIDDLE) / 2)
    last = len(times) - 1 - first
    return (last - first) / (times[last] - times[first])


def judged_run(workers: int, concurrency: int, chunking: str, seconds: float, tmp: Path) -> Run:
    """One batch (or a few, above MAX_BATCH traces) through the API and `workers` workers against the fake."""
    n = int(workers * concurrency / LATENCY * seconds)
    traces = make_traces(n, workers * 1000 + concurrency, f"c{workers}x{concurrency}")
    env = {"ANTHROPIC_API_KEY": "bench", "RAGPULSE_JUDGE_CONCURRENCY": str(concurrency),
           "RAGPULSE_TENANT_TRACES_PER_SECOND": "0"}
    if chunking == "whole":
        env["RAGPULSE_CHUNK_SIZE"] = str(MAX_BATCH)
    # The collector paused in this process while runs are measured: the fake here logs every request body (~200 objects
    # each), and a full collection over thousands of them held the GIL, and so every one of the fake's threads, for
    # 0.1-0.4 s (pauses in the calls that were the fake's, not the worker's).
    with FakeAnthropic(latency=LATENCY, cache_min_tokens=10**9) as fake, collection_paused():
        quiet = wait_quiet(30.0)
        load_start = os.getloadavg()[0]
        reference = reference_rate(fake, workers * concurrency, seconds)
        mark = len(fake.requests)
        stack = Stack(tmp, workers, {**env, "RAGPULSE_JUDGE_BASE_URL": fake.url})
        try:
            meter = stack.meter()
            meter.begin()
            started = time.monotonic()
            jobs = [stack.post(traces[i:i + MAX_BATCH], {"judge": "anthropic"}) for i in range(0, n, MAX_BATCH)]
            statuses = [stack.wait(job, timeout=seconds * 10 + 120)["status"] for job in jobs]
            wall = time.monotonic() - started
            time.sleep(0.3)  # let the last work-horse be reaped so its CPU counts
            cpu = meter.end()
        finally:
            stack.stop()
        with fake.lock:
            arrivals = [entry["at"] for entry in fake.requests[mark:]]
    status = statuses[0] if len(set(statuses)) == 1 else ",".join(statuses)
    return Run(workers, concurrency, chunking, n, status, len(arrivals), middle_rate(arrivals), wall, cpu, quiet,
               gaps_between(arrivals), reference, (load_start, os.getloadavg()[0]))


def reference_rate(fake: FakeAnthropic, in_flight: int, seconds: float) -> float:
    """The lean client's call rate (middle 80%) with `in_flight` calls against `fake`, from a child process."""
    calls = int(in_flight / LATENCY * seconds)
    mark = len(fake.requests)
    subprocess.run([sys.executable, "-c", REFERENCE, str(ROOT), fake.url, str(in_flight), str(calls)], check=True,
                   timeout=seconds * 10 + 60)
    with fake.lock:
        return middle_rate([entry["at"] for entry in fake.requests[mark:]])


REFERENCE = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from bench.judge_transport import reference_calls
asyncio.run(reference_calls(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


def parse_run(text: str) -> tuple[int, int]:
    workers, concurrency = text.lower().split("x")
    return int(workers), int(concurrency)


def print_run(run: Run) -> None:
    print(f"{run.workers} x {run.concurrency}, {run.chunking} chunks: {run.traces:,} traces, {run.status}, "
          f"{run.calls:,} calls in {run.wall:.1f} s; middle {MIDDLE:.0%}: {run.rate:.1f} calls/s of "
          f"{run.bound:.1f} = {run.ratio:.3f}; reference (lean client, same fake, just before) {run.reference:.1f} "
          f"calls/s = {run.reference_ratio:.3f}; load average {run.load[0]:.2f} -> {run.load[1]:.2f}")
    print(f"  CPU: {cpu_line(run.cpu)} (others used {run.quiet:.2f} cores just before); workers "
          f"{run.worker_ms:.2f} ms per call, so the bound needs {run.bound * run.worker_ms / 1000:.2f} cores")
    middle = [gap for at, gap in run.gaps if (1 - MIDDLE) / 2 <= at <= (1 + MIDDLE) / 2]
    print(f"  pauses of over {GAP_SECONDS * 1000:.0f} ms between calls: {len(run.gaps)}, "
          f"{sum(gap for _, gap in run.gaps):.2f} s in all ({len(middle)}, {sum(middle):.2f} s in the middle "
          f"{MIDDLE:.0%}): " + ", ".join(f"{gap:.2f} s at {at:.0%}" for at, gap in run.gaps[:12])
          + (", ..." if len(run.gaps) > 12 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", default=list(RUNS), help="WORKERSxCONCURRENCY, e.g. 1x32 2x32 1x128")
    parser.add_argument("--chunking", nargs="+", default=list(CHUNKINGS), choices=CHUNKINGS)
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of demand at the bound per run")
    args = parser.parse_args()
    info = machine()
    print(f"judge concurrency benchmark: {info['cores']} cores, {info['cpu']}, Python {info['python']}, "
          f"Linux {info['kernel']}; {git_state()}; load average {os.getloadavg()[0]:.2f} at start")
    print(f"fake latency {LATENCY * 1000:.0f} ms, no rate limit, {args.seconds:.0f} s of demand at the bound per run")
    runs: list[Run] = []
    broken = False
    with tempfile.TemporaryDirectory(prefix="ragpulse-bench-concurrency-") as tmp_dir:
        for spec in args.runs:
            workers, concurrency = parse_run(spec)
            for chunking in args.chunking:
                try:
                    run = judged_run(workers, concurrency, chunking, args.seconds, Path(tmp_dir))
                except RuntimeError as exc:
                    broken = True
                    print(f"{spec}, {chunking} chunks: BROKEN RUN: {exc}")
                    continue
                runs.append(run)
                print_run(run)
    print("\n| workers x concurrency | chunks | bound (calls/s) | achieved (calls/s) | ratio | target | reference "
          "ratio (lean client) | worker CPU per call | cores the bound needs | CPU: workers / fake / redis / other | "
          "load average start -> end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        ok = run.ratio >= TARGET_RATIO and run.status == "finished"
        print(f"| {run.workers} x {run.concurrency} | {run.chunking} | {run.bound:.1f} | {run.rate:.1f} | "
              f"**{run.ratio:.3f}** | >= {TARGET_RATIO}: {'PASS' if ok else 'MISS'} | {run.reference_ratio:.3f} | "
              f"{run.worker_ms:.2f} ms | {run.bound * run.worker_ms / 1000:.2f} | {run.cpu['workers']:.2f} / "
              f"{run.cpu['bench']:.2f} / {run.cpu['redis']:.2f} / {run.cpu['other']:.2f} | "
              f"{run.load[0]:.2f} -> {run.load[1]:.2f} |")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
