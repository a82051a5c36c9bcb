"""What a comparison costs: GET /v1/jobs/{candidate}/compare's computation against building the two jobs' reports.

Run: .venv/bin/python bench/compare.py [--traces 10000] [--judged 2000]

Builds two jobs' per-trace results as a worker would (ragpulse.evaluation.evaluate_trace): N labelled traces of
which the first J are judged by the local judge, the candidate dropping the relevant document from a third of the
queries and swapping every fifth answer for an unsupported one. Then it times, in the same run, `compare()` on the
pair and `build_report()` on each job (the peer: the service builds both reports anyway). Each time is the best of
3. Target: a comparison costs at most the two reports together (ratio <= 1). Exits 0 on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragpulse.evaluation.trace import evaluate_trace  # noqa: E402
from ragpulse.judges.local import LocalJudge  # noqa: E402
from ragpulse.model.compare import RunInfo  # noqa: E402
from ragpulse.model.trace import BatchOptions, Trace  # noqa: E402
from ragpulse.reporting.build import build_report  # noqa: E402
from ragpulse.reporting.compare import compare  # noqa: E402

QUESTION_TYPES = ("single_fact", "multi_hop", "aggregation", "procedural")


def trace(i: int, candidate: bool) -> Trace:
    gold = {"id": f"d{i}", "text": f"Model {i} has a warranty of {i % 4 + 2} years from the date of purchase."}
    others = [{"id": f"x{i}{s}", "text": f"Model {i} is sold in {s} regions with {i % 7 + 1} colours."}
              for s in "abc"]
    docs = others if candidate and i % 3 == 0 else [gold, *others[:2]]
    answer = (f"Model {i} comes with a lifetime warranty and free servicing." if candidate and i % 5 == 0
              else docs[0]["text"])
    return msgspec.convert({"trace_id": f"q{i}", "query": f"What is the warranty of model {i}?",
                            "retrieved_docs": docs, "answer": answer, "gold_doc_ids": [f"d{i}"],
                            "question_type": QUESTION_TYPES[i % 4], "source": "synthetic"}, Trace)


async def results(n: int, judged: int, candidate: bool) -> list:
    judge, options = LocalJudge(), BatchOptions(judge="local")
    return [await evaluate_trace(trace(i, candidate), i, options, judge if i < judged else None) for i in range(n)]


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--judged", type=int, default=2_000)
    args = parser.parse_args()
    baseline = asyncio.run(results(args.traces, args.judged, candidate=False))
    candidate = asyncio.run(results(args.traces, args.judged, candidate=True))
    runs = RunInfo(job_id="b", run=None, variant="rag"), RunInfo(job_id="c", run=None, variant="rag")
    options = BatchOptions()
    reports = best_of(3, lambda: (build_report("b", options, baseline), build_report("c", options, candidate)))
    comparing = best_of(3, lambda: compare(*runs, baseline, candidate))
    found = compare(*runs, baseline, candidate)
    ratio = comparing / reports
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}; {args.traces} traces, "
          f"{args.judged} judged")
    print(f"two reports: {reports:.2f} s; compare: {comparing:.2f} s "
          f"({found.regressions_total} regressions, {len(found.significant_regressions)} metrics regressed)")
    print(f"compare / two reports = {ratio:.2f}  target <= 1: {'PASS' if ratio <= 1 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
