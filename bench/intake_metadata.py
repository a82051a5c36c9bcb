"""What checking free-form `metadata` costs intake: decode_batch on a body whose traces carry many nested metadata
values, against decoding the same body into its structs with msgspec alone (the peer, measured in this run: the work
intake cannot avoid).

Run: .venv/bin/python bench/intake_metadata.py [--traces 2000] [--values 500]

Each trace carries `--values` metadata values nested three levels (dicts of lists of dicts, integers and strings).
Two figures, each ÷ the plain decode time: the metadata check alone (target at most 0.5: it must cost well under the
decode it follows), and the whole of decode_batch (reported: it also proves no key repeats, see intake.duplicates,
and re-decodes). Exits 0 on a missed target.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragpulse.intake.decode import _check_traces, decode_batch  # noqa: E402
from ragpulse.model.trace import BatchRequest  # noqa: E402

TARGET = 0.5


def make_body(traces: int, values: int) -> bytes:
    groups = max(1, values // 5)
    metadata = {f"group{g}": [g, {"id": g * 7, "tag": "x", "scores": [1, 2]}] for g in range(groups)}
    return json.dumps({"traces": [{"query": f"question {i}", "metadata": metadata} for i in range(traces)]}).encode()


def best_of(runs: int, action) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--values", type=int, default=500)
    args = parser.parse_args()
    body = make_body(args.traces, args.values)
    plain = msgspec.json.Decoder(BatchRequest)
    peer = best_of(3, lambda: plain.decode(body))
    traces = plain.decode(body).traces
    check = best_of(3, lambda: _check_traces(traces))
    intake = best_of(3, lambda: decode_batch(body, max_traces=args.traces))
    ratio = check / peer
    print(f"{datetime.date.today()} {platform.machine()} {platform.python_version()}: body {len(body) / 2**20:.1f} MiB, "
          f"{args.traces} traces x {args.values} metadata values")
    print(f"  plain msgspec decode {peer:.3f} s; metadata check {check:.3f} s: ratio {ratio:.2f} "
          f"(target <= {TARGET}) {'PASS' if ratio <= TARGET else 'FAIL'}")
    print(f"  whole decode_batch {intake:.3f} s: ratio {intake / peer:.2f} (reported)")


if __name__ == "__main__":
    main()
