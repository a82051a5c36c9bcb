"""What the security checks cost a worker: check_trace per trace, on documents never seen before and on documents
seen again (the findings cache), against evaluating the same trace without a judge (the peer, measured in this run).

Run: .venv/bin/python bench/security.py [--traces 2000]

Traces are bench/ingest.py's: 5 retrieved passages of ~500 characters, an answer of ~220. "Fresh" gives every trace
new document texts (a cold cache: the worst case); "repeated" posts the same traces again (production apps retrieve
the same documents over and over). The figure is the ratio of check time to the unjudged evaluation time; target
for repeated documents: at most 1 (the checks cost no more than the rest of an unjudged trace's evaluation).
Exits 0 on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import platform
import random
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ingest import make_trace  # noqa: E402
from ragpulse.evaluation.trace import evaluate_trace  # noqa: E402
from ragpulse.model.trace import BatchOptions, Trace  # noqa: E402
from ragpulse.security.trace import check_trace  # noqa: E402


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(11)
    traces = [msgspec.convert(make_trace(rng, i), Trace) for i in range(args.traces)]
    now = datetime.datetime.now(datetime.UTC)
    options = BatchOptions()

    async def evaluate_all() -> None:
        for i, trace in enumerate(traces):
            await evaluate_trace(trace, i, options)

    peer = timed(lambda: asyncio.run(evaluate_all()))
    fresh = timed(lambda: [check_trace(t, now, 365) for t in traces])
    repeated = timed(lambda: [check_trace(t, now, 365) for t in traces])
    per = 1e3 / args.traces
    print(f"{platform.machine()}, Python {platform.python_version()}; {args.traces} traces of 5 documents")
    print(f"unjudged evaluation: {peer * per:.3f} ms/trace")
    print(f"security checks, fresh documents:    {fresh * per:.3f} ms/trace = {fresh / peer:.2f} x the evaluation")
    print(f"security checks, repeated documents: {repeated * per:.3f} ms/trace = {repeated / peer:.2f} x the "
          f"evaluation  target <= 1: {'PASS' if repeated <= peer else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
