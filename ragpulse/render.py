"""Render a report as a readable plain-text table for terminals."""

from __future__ import annotations

from typing import Any


def render_report(report: dict[str, Any]) -> str:
    """The report as text: counts, retrieval means with intervals, breakdowns, worst traces."""
    method = report["method"]
    counts = report["counts"]
    out = [
        f"job {report['job_id']}",
        "traces: " + ", ".join(f"{k} {v}" for k, v in counts.items()),
        f"k = {method['k']}, nDCG gain: {method['gain']}; intervals: 95% ({method['ci95']['means']}; "
        f"{method['ci95']['proportions']} for proportions)",
        "",
        "RETRIEVAL (macro-average over labelled traces with at least one relevant document)",
        *_metric_table(report["retrieval"]),
    ]
    for title, key in (("BY QUESTION TYPE", "by_question_type"), ("BY SOURCE", "by_source")):
        out += ["", title, *_breakdown_table(report[key], method["k"])]
    out += ["", f"WORST TRACES by recall@{max(method['k'])}"]
    for row in report["worst"][:10]:
        value = row[f"recall@{max(method['k'])}"]
        out.append(f"  {row['trace_id']:<28} {value:6.3f}  missed: {', '.join(row['missed_doc_ids']) or '-'}")
    if report["failures"]:
        out += ["", "FAILED TRACES", *(f"  {f['trace_id']}: {f['error']}" for f in report["failures"])]
    return "\n".join(out)


def _metric_table(metrics: dict[str, Any]) -> list[str]:
    if not metrics:
        return ["  (no labelled traces)"]
    rows = [f"  {'metric':<16}{'mean':>8}   {'95% CI':<17}{'n':>6}"]
    for name, est in metrics.items():
        low, high = est["ci95"]
        rows.append(f"  {name:<16}{est['mean']:>8.3f}   [{low:.3f}, {high:.3f}]  {est['n']:>6}")
    return rows


def _breakdown_table(groups: dict[str, Any], ks: list[int]) -> list[str]:
    k = 5 if 5 in ks else max(ks)
    cols = [f"recall@{k}", f"ndcg@{k}", "mrr"]
    rows = [f"  {'group':<16}{'n':>5}" + "".join(f"{c:>12}" for c in cols)]
    for name, group in groups.items():
        values = "".join(f"{group['retrieval'][c]['mean']:>12.3f}" for c in cols)
        rows.append(f"  {name:<16}{group['n']:>5}{values}")
    return rows if groups else ["  (none)"]
