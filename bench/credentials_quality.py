"""How well the credential check (ragpulse.security.credentials) finds credentials in answers: value-level precision
and recall per kind on a labelled set, and the answers with no credential that it flagged.

Run: .venv/bin/python bench/credentials_quality.py [bench/data/credentials_heldout.jsonl ...] [--misses]

Each line of a set is {"id", "text", "kinds": {kind: distinct values}}, written by a helper that never saw the
check's code (bench/README.md says which set was held out and which was tuned on). A value is counted found when the
check reports as many values of its kind as the label says (the check returns counts, never values).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragpulse.security.credentials import KINDS, credential_kinds  # noqa: E402


def score(path: Path, show_misses: bool) -> None:
    hits, extra, missed = Counter(), Counter(), Counter()
    negatives = flagged = 0
    for line in path.read_text().splitlines():
        case = json.loads(line)
        found, wanted = credential_kinds(case["text"], []), case["kinds"]
        negatives += not wanted
        flagged += bool(found) and not wanted
        for kind in set(found) | set(wanted):
            hits[kind] += min(found.get(kind, 0), wanted.get(kind, 0))
            extra[kind] += max(0, found.get(kind, 0) - wanted.get(kind, 0))
            missed[kind] += max(0, wanted.get(kind, 0) - found.get(kind, 0))
        if show_misses and found != wanted:
            print(f"  {case['id']}: labelled {wanted}, found {found}")
    tp, fp, fn = sum(hits.values()), sum(extra.values()), sum(missed.values())
    print(f"{path}: values {tp + fn} labelled, precision {tp / max(1, tp + fp):.3f}, recall {tp / max(1, tp + fn):.3f} "
          f"(found {tp}, extra {fp}, missed {fn}); answers without a credential flagged: {flagged} of {negatives}")
    for kind in KINDS:
        if hits[kind] or extra[kind] or missed[kind]:
            print(f"  {kind:<15} found {hits[kind]:>3}  extra {extra[kind]:>2}  missed {missed[kind]:>2}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="*", type=Path, default=[Path("bench/data/credentials_heldout.jsonl")])
    parser.add_argument("--misses", action="store_true", help="print each answer the check got wrong")
    args = parser.parse_args()
    for path in args.sets:
        score(path, args.misses)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
