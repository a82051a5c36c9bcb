"""CPU time of LocalJudge.evaluate over the labelled traces and the examples (451 traces); docs/local_judge.md quotes it.

Run: .venv/bin/python bench/local_judge_speed.py [--warm] [ROOT]

ROOT is the checkout whose data files are read (default: this one); the judge is whichever `ragpulse` Python
imports, so an older version can be timed on the same traces with `PYTHONPATH=<its checkout>`. The security check
runs over every trace first, as the worker runs it before the judge (its per-document injection scan is cached and
the judge reads that cache). It prints the first judging pass (the judge's own caches cold), then the best and
median of 9 passes. Between
passes the text reading cache is cleared (a cold judge that has only the scan cache), unless --warm: then the
passages are read once, as when an app retrieves the same documents again and again. CPU time of this process,
so that other work on the machine disturbs it less than wall time; still, compare runs made side by side.
"""

from __future__ import annotations

import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import msgspec

from ragpulse.judges.local import LocalJudge
from ragpulse.judges import text
from ragpulse.model.trace import Trace
from ragpulse.security.trace import check_trace

FILES = ("tests/data/judge_labels.jsonl", "tests/data/judge_labels_heldout.jsonl", "tests/data/judge_labels_heldout2.jsonl")
"""The labelled files that existed before the failure-class files, so that old and new versions time the same set."""
EXAMPLES = "examples/acme_support_traces.jsonl"
PASSES = 9


def traces(root: Path) -> list[Trace]:
    rows = [json.loads(line)["trace"] for name in FILES for line in (root / name).read_text().splitlines() if line]
    rows += [json.loads(line) for line in (root / EXAMPLES).read_text().splitlines() if line]
    return [msgspec.convert(row, Trace) for row in rows]


def timed(judge: LocalJudge, batch: list[Trace]) -> float:
    started = time.process_time()
    for trace in batch:
        judge.evaluate(trace)
    return time.process_time() - started


def main(argv: list[str]) -> None:
    warm = "--warm" in argv
    args = [a for a in argv[1:] if a != "--warm"]
    batch = traces(Path(args[0]) if args else Path(__file__).resolve().parents[1])
    for trace in batch:
        check_trace(trace, datetime.datetime.now(datetime.UTC), None)
    judge = LocalJudge()
    first = timed(judge, batch)
    passes = []
    for _ in range(PASSES):
        if not warm:
            clear = getattr(text, "clear_read_cache", None)  # v2 has no reading cache
            if clear is not None:
                clear()
        passes.append(timed(judge, batch))
    print(f"{len(batch)} traces, {'warm' if warm else 'cold reading'}: first pass {first * 1000:.0f} ms, "
          f"best {min(passes) * 1000:.0f} ms, median {statistics.median(passes) * 1000:.0f} ms "
          f"({min(passes) / len(batch) * 1e6:.0f} us per trace)")


if __name__ == "__main__":
    main(sys.argv)
