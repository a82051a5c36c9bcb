"""Render a report as a readable plain-text table for terminals."""

from __future__ import annotations

from typing import Any

GENERATION_ROWS = ("faithfulness", "hallucination_rate", "unanswerable_hallucination_rate", "answer_relevance",
                   "context_relevance", "correctness")


def render_report(report: dict[str, Any]) -> str:
    """The report as text: retrieval and generation apart, then crossed, then breakdowns and worst traces."""
    method = report["method"]
    out = [
        f"job {report['job_id']}",
        "traces: " + ", ".join(f"{k} {v}" for k, v in report["counts"].items()),
        f"k = {method['k']}, nDCG gain: {method['gain']}; intervals: 95% ({method['ci95']['means']}; "
        f"{method['ci95']['proportions']} for proportions)",
        "",
        "RETRIEVAL (macro-average over labelled traces with at least one relevant document)",
        *_metric_table(report["retrieval"]),
        "",
        *_generation(report["generation"]),
        "",
        *_matrix(report["diagnostic_matrix"]),
    ]
    for title, key in (("BY QUESTION TYPE", "by_question_type"), ("BY SOURCE", "by_source")):
        out += ["", title, *_breakdown_table(report[key], method["k"])]
    out += _worst(report, max(method["k"]))
    if report["failures"]:
        out += ["", "FAILED TRACES", *(f"  {f['trace_id']}: {f['error']}" for f in report["failures"])]
    return "\n".join(out)


def _metric_table(metrics: dict[str, Any]) -> list[str]:
    rows = [f"  {'metric':<32}{'mean':>8}   {'95% CI':<17}{'n':>6}"]
    for name, est in metrics.items():
        if est is None:
            rows.append(f"  {name:<32}{'-':>8}")
            continue
        low, high = est["ci95"]
        rows.append(f"  {name:<32}{est['mean']:>8.3f}   [{low:.3f}, {high:.3f}]  {est['n']:>6}")
    return rows if len(rows) > 1 else ["  (no traces)"]


def _generation(gen: dict[str, Any]) -> list[str]:
    judges = ", ".join(f"{name} ({n})" for name, n in gen["judges"].items()) or "none"
    note = "  NOTE: `local` is an offline heuristic, not an LLM judge" if gen["heuristic"] else ""
    cost = gen["cost"]
    abst = gen["abstention"]
    cites = gen["citations"]
    rows = [f"GENERATION (judge: {judges}; {gen['n_judged']} judged, {gen['n_abstained']} abstained)", *([note] if note else [])]
    rows += _metric_table({name: gen[name] for name in GENERATION_ROWS})
    rows += _metric_table({"abstention_precision": abst["precision"], "abstention_recall": abst["recall"]})[1:]
    una = gen["unanswerable"]
    rows.append(f"  unanswerable: {una['n']} ({una['labelled']} labelled, {una['judged']} judged by the judge): "
                f"{una['abstained']} abstained, {una['hallucinated']} hallucinated, "
                f"{una['answered_supported']} answered with support")
    rows.append(f"  citations: {cites['cited']} cited, {cites['cited_not_retrieved']} never retrieved, "
                f"{cites['cited_without_support']} without support")
    per_trace = f"{cost['calls_per_trace']:.2f}" if cost["calls_per_trace"] is not None else "-"
    rows.append(f"  judge cost: {cost['calls']} calls ({per_trace} per trace, {cost['repair_calls']} repairs, "
                f"{cost['judge_errors']} errors), tokens in/out {cost['input_tokens']}/{cost['output_tokens']}")
    if gen["repeat_agreement"]["n"]:
        rows += _metric_table({"repeat_agreement": gen["repeat_agreement"]["agreement_rate"]})[1:]
    return rows


def _matrix(matrix: dict[str, Any]) -> list[str]:
    cells = matrix["cells"]

    def cell(name: str) -> str:
        c = cells[name]
        return f"{c['count']:>5} ({c['share']:.0%})" if c["share"] is not None else f"{c['count']:>5}"

    return [
        f"DIAGNOSTIC MATRIX ({matrix['n']} traces; retrieval good = {matrix['retrieval_good_means']})",
        f"  {'':<18}{'faithful':>14}{'hallucinating':>16}",
        f"  {'retrieval good':<18}{cell('retrieval_good_faithful'):>14}{cell('retrieval_good_hallucinating'):>16}",
        f"  {'retrieval poor':<18}{cell('retrieval_poor_faithful'):>14}{cell('retrieval_poor_hallucinating'):>16}",
        f"  primary issue: {matrix['primary_issue']}. {matrix['next_step']}",
    ]


def _breakdown_table(groups: dict[str, Any], ks: list[int]) -> list[str]:
    k = 5 if 5 in ks else max(ks)
    cols = [("retrieval", f"recall@{k}"), ("retrieval", "mrr"), ("generation", "faithfulness"),
            ("generation", "hallucination_rate")]
    rows = [f"  {'group':<16}{'n':>5}" + "".join(f"{c:>20}" for _, c in cols)]
    for name, group in groups.items():
        values = "".join(f"{_mean(group[part].get(c)):>20}" for part, c in cols)
        rows.append(f"  {name:<16}{group['n']:>5}{values}")
    return rows if groups else ["  (none)"]


def _worst(report: dict[str, Any], k: int) -> list[str]:
    rows = ["", f"WORST TRACES by recall@{k}"]
    for row in report["worst"][:10]:
        rows.append(f"  {row['trace_id']:<28} {row[f'recall@{k}']:6.3f}  missed: {', '.join(row['missed_doc_ids']) or '-'}")
    return rows


def _mean(est: dict[str, Any] | None) -> str:
    return f"{est['mean']:.3f}" if est else "-"
