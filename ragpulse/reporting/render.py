"""Render a report as a readable plain-text table for terminals."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

from ragpulse.metrics.registry import GENERATION, RETRIEVAL
from ragpulse.model.estimate import Estimate
from ragpulse.reporting.build import WORST_BY, diagnostic_k
from ragpulse.reporting.report import DiagnosticMatrix, GenerationSection, Group, JudgeFailure, Report, Target

NOTE_HEURISTIC = ("  NOTE: HEURISTIC: `heuristic` is an offline heuristic (word overlap), not an LLM judge; its "
                  "accuracy on your data is unmeasured and its figures never page")


def render_report(report: Report) -> str:
    """The report as text: retrieval and generation apart, then crossed, then breakdowns and worst traces."""
    method = report.method
    counts = report.counts
    out = [
        f"job {report.job_id}" + (f"  run {report.run}" if report.run else "")
        + (f"  variant {report.variant}" if report.variant != "rag" else "") + f"  environment {report.environment}",
        *_dataset(report),
        f"traces: total {counts.total}, ok {counts.ok}, failed {counts.failed}, labelled {counts.labelled}, "
        f"no_relevant {counts.no_relevant}, unlabelled {counts.unlabelled}"
        + (f"; judged on cut input (RAGPULSE_JUDGE_MAX_*_CHARS) {counts.judge_input_truncated}"
           if counts.judge_input_truncated else ""),
        f"k = {method.k}, nDCG gain: {method.gain}; intervals: 95% ({method.ci95.means}; "
        f"{method.ci95.proportions} for proportions); targets: the documented starting ones, * the batch's "
        "own (options.targets)",
        "",
        "RETRIEVAL (macro-average over labelled traces with at least one relevant document)",
        *_metric_table(report.retrieval, report.targets),
        "",
        *_generation(report),
        "",
        *_matrix(report.diagnostic_matrix),
    ]
    out += _attribution(report) + _security(report) + _operations(report)
    if report.subsets:
        out += ["", "HUMAN-WRITTEN SUBSET AND TEST SPLIT (reported apart: the test split is the frozen portion)",
                *_breakdown_table(report.subsets, diagnostic_k(method.k))]
    for title, groups in (("BY QUESTION TYPE", report.by_question_type), ("BY SOURCE", report.by_source),
                          *((("BY SPLIT", report.by_split),) if report.by_split else ()),
                          *((("BY TURN (conversations: first turn and follow-ups)", report.by_turn),)
                            if report.by_turn else ())):
        out += ["", title, *_breakdown_table(groups, diagnostic_k(method.k))]
    out += _sessions(report)
    out += _worst(report)
    if report.failures:
        out += ["", "FAILED TRACES", *(f"  {f.trace_id}: {f.error}" for f in report.failures)]
    return "\n".join(out)


def _sessions(report: Report) -> list[str]:
    """The conversation figures: per session, then per turn index."""
    section = report.sessions
    if section is None:
        return []
    rates = {"session_hallucination_rate": section.session_hallucination_rate,
             "turns_to_first_hallucination": section.turns_to_first_hallucination,
             **{f"hallucination_rate (turn {k})": e for k, e in section.hallucination_by_turn.items()},
             **{f"abstention_rate (turn {k})": e for k, e in section.abstention_by_turn.items()}}
    return ["", f"SESSIONS ({section.n_sessions} sessions, {section.n_turns} turns)", *_metric_table(rates)]


def _metric_table(metrics: Mapping[str, Estimate | None], targets: Mapping[str, Target] | None = None) -> list[str]:
    targets = targets or {}
    rows = [f"  {'metric':<32}{'mean':>8}   {'95% CI':<17}{'n':>6}   target"]
    for name, est in metrics.items():
        target = _target(targets.get(name))
        if est is None:
            rows.append(f"  {name:<32}{'-':>8}{'':<26}{target}".rstrip())
            continue
        low, high = est.ci95
        rows.append(f"  {name:<32}{est.mean:>8.3f}   [{low:.3f}, {high:.3f}]  {est.n:>6}{target}".rstrip())
    return rows if len(rows) > 1 else ["  (no traces)"]


def _target(target: Target | None) -> str:
    """`   >= 0.75 met` / `   <= 0.10 MISSED`; a target from the batch's options is marked `*`."""
    if target is None:
        return ""
    sign = ">=" if target.better == "higher" else "<="
    verdict = {True: "met", False: "MISSED", None: ""}[target.met]
    mark = "*" if target.source == "options" else ""
    return f"   {sign} {target.target:g}{mark} {verdict}"


def judge_line(gen: GenerationSection) -> str:  # type: ignore[valid-type]
    """Who judged, for the text and the HTML report: each judge with the traces it judged, and each judge that
    failed named with its model, counts and errors; `none` only when no trace went to a judge (judging off)."""
    failures = {f.judge: f for f in gen.judge_failures}
    return ", ".join([f"{name} ({n})" for name, n in gen.judges.items() if name not in failures]
                     + [_failed(f) for f in failures.values()]) or "none"


def _failed(failure: JudgeFailure) -> str:
    model = f" ({failure.model})" if failure.model else ""
    repaired = f" ({failure.repair_calls} after a repair turn)" if failure.repair_calls else ""
    reasons = " | ".join(f"{reason} ({n})" for reason, n in failure.reasons.items())
    return f"{failure.judge}{model} - {failure.failed} of {failure.traces} traces failed{repaired}: {reasons}"


def _generation(report: Report) -> list[str]:
    gen = report.generation
    if gen.not_judged is not None:
        return ["GENERATION: not judged", *textwrap.wrap(gen.not_judged, 116, initial_indent="  ",
                                                          subsequent_indent="  ")]
    rows = [f"GENERATION (judge: {judge_line(gen)}; {gen.n_judged} judged, {gen.n_abstained} abstained)",
            *([NOTE_HEURISTIC] if gen.heuristic else []),
            *([f"  judge qualification: {report.qualification.summary}"] if report.qualification else [])]
    rows += _metric_table({m.name: getattr(gen, m.name) for m in GENERATION}, report.targets)
    rows += _metric_table({"abstention_precision": gen.abstention.precision,
                           "abstention_recall": gen.abstention.recall})[1:]
    una, cites, cost = gen.unanswerable, gen.citations, gen.cost
    rows.append(f"  unanswerable: {una.n} ({una.labelled} labelled, {una.judged} judged by the judge): "
                f"{una.abstained} abstained, {una.hallucinated} hallucinated, "
                f"{una.answered_supported} answered with support")
    rows.append(f"  citations: {cites.cited} cited, {cites.cited_not_retrieved} never retrieved, "
                f"{cites.cited_without_support} without support")
    per_trace = f"{cost.calls_per_trace:.2f}" if cost.calls_per_trace is not None else "-"
    rows.append(f"  judge cost: {cost.calls} calls ({per_trace} per trace, {cost.repair_calls} repairs, "
                f"{cost.judge_errors} errors), tokens in/out {cost.input_tokens}/{cost.output_tokens}"
                + (f", cache read/write {cost.cache_read_input_tokens}/{cost.cache_creation_input_tokens}"
                   if cost.cache_read_input_tokens or cost.cache_creation_input_tokens else ""))
    if cost.cost_usd is not None and cost.batch_calls:
        rows.append(f"  judge spend: ${cost.cost_usd:.4f} billed ({cost.batch_calls} calls at the batch price), "
                    f"${cost.interactive_cost_usd:.4f} interactive, saved ${cost.saving_usd:.4f}")
    if gen.repeat_agreement.n:
        rows += _metric_table({"repeat_agreement": gen.repeat_agreement.agreement_rate})[1:]
    return rows + _corrected(report)


def _corrected(report: Report) -> list[str]:
    """Each hallucination rate corrected for the judge's measured error, or why there is no number."""
    rows = []
    for name, rate in report.corrected.items():
        if rate.corrected is None or rate.ci95 is None:
            rows.append(f"  {name} judge-corrected: - ({rate.detail})")
        else:
            rows.append(f"  {name} judge-corrected: {rate.corrected:.3f} [{rate.ci95[0]:.3f}, {rate.ci95[1]:.3f}] "
                        f"(judge {rate.raw:.3f}; {rate.estimation_labels} labels in the estimation sample)")
    return rows


def _attribution(report: Report) -> list[str]:
    section = report.attribution
    if section is None or section.n == 0:
        return []
    rows = ["", f"FAILURE ATTRIBUTION (first broken stage; {section.n} traces)",
            f"  {'stage':<24}{'traces':>7}{'share':>8}   {'95% CI':<17}next step"]
    for stage, row in section.stages.items():
        if row.count == 0:
            continue
        low, high = row.share.ci95 if row.share else (0.0, 0.0)
        share = row.share.mean if row.share else 0.0
        rows.append(f"  {stage:<24}{row.count:>7}{share:>8.3f}   [{low:.3f}, {high:.3f}]  {row.next_step}")
    return rows


def _security(report: Report) -> list[str]:
    section = report.security
    if section is None:
        return []
    rows = ["", "SECURITY (checks in code; injection, phone and stated-password detection are heuristics)"]
    for name, est in section.rates.items():
        if est is None:
            rows.append(f"  {name:<20}{'-':>8}   (nothing to check)")
            continue
        low, high = est.ci95
        found = round(est.mean * est.n)
        rows.append(f"  {name:<20}{est.mean:>8.3f}   [{low:.3f}, {high:.3f}]  {found} of {est.n}"
                    + (f": {', '.join(section.flagged[name][:5])}" if section.flagged.get(name) else ""))
    if section.pii_kinds:
        rows.append("  pii kinds: " + ", ".join(f"{kind} {n}" for kind, n in section.pii_kinds.items()))
    if section.credential_kinds:
        rows.append("  credential kinds: " + ", ".join(f"{kind} {n}" for kind, n in section.credential_kinds.items()))
    return rows


def _operations(report: Report) -> list[str]:
    ops = report.operations
    if ops is None or not (ops.latency_ms or ops.cost_usd or ops.context_tokens):
        return []
    rows = ["", "OPERATIONS (the app's own latency_ms and usage)"]
    for stage, pct in ops.latency_ms.items():
        rows.append(f"  latency {stage:<11} p50 {pct.p50:>9.1f} ms  p90 {pct.p90:>9.1f}  p99 {pct.p99:>9.1f}  "
                    f"n {pct.n}")
    if ops.cost_usd is not None:
        low, high = ops.cost_usd.ci95
        rows.append(f"  cost per query      ${ops.cost_usd.mean:.5f}  [{low:.5f}, {high:.5f}]  n {ops.cost_usd.n}")
    if ops.context_tokens is not None:
        ctx = ops.context_tokens
        rows.append(f"  context tokens (estimated, chars/4)  p50 {ctx.p50:.0f}  p90 {ctx.p90:.0f}  max {ctx.max:.0f}")
    return rows


def _matrix(matrix: DiagnosticMatrix) -> list[str]:
    def cell(name: str) -> str:
        c = matrix.cells[name]
        return f"{c.count:>5} ({c.share:.0%})" if c.share is not None else f"{c.count:>5}"

    if matrix.n == 0:
        excluded = ", ".join(f"{n} {why}" for why, n in matrix.excluded.items())
        return [f"DIAGNOSTIC MATRIX (no trace to cross{'; excluded: ' + excluded if excluded else ''})",
                f"  primary issue: {matrix.primary_issue}. {matrix.next_step}"]
    return [
        f"DIAGNOSTIC MATRIX ({matrix.n} traces; retrieval good = {matrix.retrieval_good_means})",
        f"  {'':<18}{'faithful':>14}{'hallucinating':>16}",
        f"  {'retrieval good':<18}{cell('retrieval_good_faithful'):>14}{cell('retrieval_good_hallucinating'):>16}",
        f"  {'retrieval poor':<18}{cell('retrieval_poor_faithful'):>14}{cell('retrieval_poor_hallucinating'):>16}",
        f"  primary issue: {matrix.primary_issue}. {matrix.next_step}",
    ]


def _dataset(report: Report) -> list[str]:
    """`dataset faq version 3 (sha256 1a2b3c4d5e6f) published: 40 of 50 items; splits dev 30, test 10`."""
    bound = report.dataset
    if bound is None:
        return []
    splits = ", ".join(f"{name} {n}" for name, n in sorted(bound.splits.items())) or "none"
    unbound = f"; {bound.unbound} traces named no item" if bound.unbound else ""
    if bound.retrieval_unanswerable:
        unbound += (f"; {bound.retrieval_unanswerable} set aside as retrieval-unanswerable (retrieval metrics only, "
                    "not judged)")
    return [f"dataset {bound.name} version {bound.version} (sha256 {bound.content_hash[:12]}) {bound.status}: "
            f"{bound.items} of {bound.version_items} items; splits {splits}{unbound}"]


def _breakdown_table(groups: Mapping[str, Group], k: int) -> list[str]:
    retrieval = [m.key(k) for m in RETRIEVAL if m.breakdown]
    generation = [m for m in GENERATION if m.breakdown]
    header = "".join(f"{c:>14}" for c in (*retrieval, *(m.column or m.name for m in generation)))
    rows = [f"  {'group':<16}{'n':>5}{header}"]
    for name, group in groups.items():
        values = [group.retrieval.get(c) for c in retrieval] + [getattr(group.generation, m.name) for m in generation]
        rows.append(f"  {name:<16}{group.n:>5}" + "".join(f"{_mean(v):>14}" for v in values))
    return rows if groups else ["  (none)"]


def _worst(report: Report) -> list[str]:
    metric = WORST_BY.key(max(report.method.k))
    if not report.worst:
        return ["", f"WORST TRACES by {metric}: none below {WORST_BY.best:.3f}"] if report.retrieval else []
    rows = ["", f"WORST TRACES by {metric} (below {WORST_BY.best:.3f}, worst first)"]
    for row in report.worst[:10]:
        missed = ", ".join(row["missed_doc_ids"]) or "-"  # type: ignore[arg-type]
        rows.append(f"  {row['trace_id']:<28} {row['value']:6.3f}  missed: {missed}")
    return rows


def _mean(est: Estimate | None) -> str:
    return f"{est.mean:.3f}" if est else "-"
