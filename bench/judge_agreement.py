"""Agreement of LocalJudge with human labels (tests/data/judge_labels.jsonl); docs/local_judge.md records it.

Run: .venv/bin/python bench/judge_agreement.py [labels.jsonl]

The judge is deterministic, and so is the kappa bootstrap (fixed seed), so every run prints the same figures.
tests/test_local_judge.py checks that the figures in docs/local_judge.md match this script's output.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import msgspec

from ragpulse.judges.local import PROMPT_VERSION, LocalJudge
from ragpulse.model.verdicts import JudgeOutput
from ragpulse.metrics.agreement import accuracy, cohens_kappa, kappa_interval
from ragpulse.metrics.generation import abstained, hallucinated
from ragpulse.model.trace import Trace

DEFAULT_LABELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "judge_labels.jsonl"
"""The hand-labelled set the docs report on."""
VERDICTS = ("supported", "unsupported", "contradicted")


def load(path: Path) -> list[tuple[Trace, dict[str, Any]]]:
    """(trace, human label) pairs; traces go through the strict wire schema, so the file must be valid input."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(msgspec.convert(row["trace"], Trace), row["label"]) for row in rows]


def claim_pairs(output: JudgeOutput, label: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(human, judge) verdicts paired by position when both split the answer into as many claims; else None."""
    if len(output.claims) != len(label["claims"]):
        return None
    return [(human["verdict"], claim.verdict) for human, claim in zip(label["claims"], output.claims)]


def _kappa(human: list[bool], judge: list[bool]) -> dict[str, float]:
    low, high = kappa_interval(human, judge)
    return {"accuracy": accuracy(human, judge), "kappa": cohens_kappa(human, judge), "kappa_low": low,
            "kappa_high": high}


def _claims(outputs: list[JudgeOutput], labels: list[dict[str, Any]]) -> dict[str, Any]:
    """Claim-level agreement over traces whose claim counts match (refusals with no claims on both sides excluded)."""
    paired = [claim_pairs(o, lab) for o, lab in zip(outputs, labels)]
    matched = [pairs for pairs in paired if pairs]
    flat = [pair for pairs in matched for pair in pairs]
    return {
        "traces_with_claims": sum(bool(lab["claims"]) or bool(o.claims) for o, lab in zip(outputs, labels)),
        "matched_traces": len(matched), "claims": len(flat),
        "agreement": accuracy([h for h, _ in flat], [j for _, j in flat]) if flat else float("nan"),
        "confusion": {h: {j: Counter(flat)[(h, j)] for j in VERDICTS} for h in VERDICTS},
    }


def _per_category(labels: list[dict[str, Any]], judged: list[bool]) -> dict[str, dict[str, float]]:
    """Accuracy and Cohen's kappa on `hallucinated` within each labelled category (kappa is 1.0 when human and judge
    give one same label throughout, and 0 or below when the judge's only disagreements fall on a one-label class)."""
    pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for label, call in zip(labels, judged):
        pairs[label["category"]].append((label["hallucinated"], call))
    return {cat: {"n": len(p), "accuracy": sum(h == j for h, j in p) / len(p),
                  "kappa": cohens_kappa([h for h, _ in p], [j for _, j in p])} for cat, p in sorted(pairs.items())}


def measure_agreement(path: Path | str = DEFAULT_LABELS) -> dict[str, Any]:
    """Every agreement figure of LocalJudge against the human labels in `path`."""
    pairs = load(Path(path))
    judge = LocalJudge()
    outputs = [judge.judge(trace).output for trace, _ in pairs]
    labels = [label for _, label in pairs]
    human = [label["hallucinated"] for label in labels]
    judged = [hallucinated(o) for o in outputs]
    return {
        "traces": len(pairs), "model": judge.model, "prompt_version": PROMPT_VERSION,
        "hallucinated": _kappa(human, judged),
        "hallucinated_confusion": {h: {j: sum(1 for a, b in zip(human, judged) if (a, b) == (h, j))
                                       for j in (True, False)} for h in (True, False)},
        "abstained": {"accuracy": accuracy([lab["abstained"] for lab in labels], [abstained(o) for o in outputs])},
        "answerable": {"accuracy": accuracy([lab["answerable"] for lab in labels],
                                            [o.answerable_from_context for o in outputs])},
        "claims": _claims(outputs, labels),
        "per_category": _per_category(labels, judged),
    }


def report(result: dict[str, Any], path: Path | str) -> str:
    """The figures as docs/local_judge.md quotes them."""
    h, c = result["hallucinated"], result["claims"]
    lines = [
        f"LocalJudge {result['model']} (prompt_version {result['prompt_version']}) vs human labels,"
        f" {result['traces']} traces from {Path(path).name}",
        f"hallucinated: accuracy {h['accuracy']:.3f}, kappa {h['kappa']:.3f}"
        f" (95% bootstrap CI {h['kappa_low']:.3f} to {h['kappa_high']:.3f})",
        f"abstained: accuracy {result['abstained']['accuracy']:.3f}",
        f"answerable_from_context: accuracy {result['answerable']['accuracy']:.3f}",
        f"claims: agreement {c['agreement']:.3f} over {c['claims']} claims in {c['matched_traces']} of"
        f" {c['traces_with_claims']} traces with claims (same claim count, paired by position)",
        "per category (accuracy, kappa on hallucinated):",
        *(f"  {cat:<26} n={v['n']:<3} {v['accuracy']:.3f} {v['kappa']:>6.3f}" for cat, v in result["per_category"].items()),
        "hallucinated confusion (rows human, columns judge):",
        f"  {'':<14}{'judge yes':>10}{'judge no':>10}",
        *(f"  {'human ' + ('yes' if hv else 'no'):<14}{row[True]:>10}{row[False]:>10}"
          for hv, row in result["hallucinated_confusion"].items()),
        "claim verdict confusion (rows human, columns judge):",
        f"  {'':<14}" + "".join(f"{v:>14}" for v in VERDICTS),
        *(f"  {hv:<14}" + "".join(f"{row[v]:>14}" for v in VERDICTS) for hv, row in c["confusion"].items()),
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT_LABELS
    print(report(measure_agreement(path), path))


if __name__ == "__main__":
    main(sys.argv)
