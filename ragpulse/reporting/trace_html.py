"""The report page's failing traces: which are chosen, how many of how many are shown, and one card per trace with
the user's question, its batch position, its verdicts and the evidence quoted. All trace text is escaped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from ragpulse.config import defaults
from ragpulse.model.results import TraceResult
from ragpulse.model.verdicts import Claim
from ragpulse.reporting.report import Report

FAILING_SHOWN = 200
"""At most this many failing traces are shown with their claims (hallucinated ones first, so all of them up to this
bound); the page says when it stops and where the rest are."""


def failing_traces(report: Report, results: Sequence[TraceResult], limit: int | None = None) -> list[TraceResult]:
    """The traces worth a look, worst first: hallucinated answers (most unsupported claims first), answers that
    followed an injected instruction, then retrieval that missed labelled documents (report order), then traces that
    failed to evaluate. All of them unless `limit`; the page shows the first FAILING_SHOWN."""
    hallucinated = sorted((r for r in results if r.generation is not None and r.generation.hallucinated),
                          key=lambda r: (r.generation.faithfulness or 0.0, r.index))  # type: ignore[union-attr]
    injected = [r for r in results if followed_injection(r)]
    missed_ids = [str(row["trace_id"]) for row in report.worst if float(row["value"]) < 1.0]  # type: ignore[arg-type]
    by_id = {r.trace_id: r for r in results}
    missed = [by_id[i] for i in missed_ids if i in by_id]
    failed = [r for r in results if r.status != "ok"]
    chosen: dict[int, TraceResult] = {}
    for result in (*hallucinated, *injected, *missed, *failed):
        chosen.setdefault(result.index, result)
    return list(chosen.values())[:limit]


def followed_injection(result: TraceResult) -> bool:
    """True when the answer followed an instruction injected into a retrieved document (a heuristic check)."""
    return bool(result.security is not None and result.security.injection_followed)


def failing_section(report: Report, failing: Sequence[TraceResult], queries: Mapping[int, str]) -> str:
    """The count line, then one card per shown trace."""
    if not failing:
        return ("<p class=note>No failing trace: every labelled retrieval found its documents and no judged answer "
                "made an unsupported or contradicted claim.</p>")
    shown = failing[:FAILING_SHOWN]
    worst = {str(row["trace_id"]): row for row in report.worst}
    return _count_line(report, len(shown), len(failing)) + "".join(
        trace_card(r, worst.get(r.trace_id), queries.get(r.index), report.counts.total) for r in shown)


def _count_line(report: Report, shown: int, total: int) -> str:
    stop = f" The page stops at {FAILING_SHOWN} (hallucinated answers first)." if shown < total else ""
    link = f"results?limit={defaults.RESULTS_PAGE_MAX}"
    return (f"<p class=note data-failing-shown='{shown}' data-failing-total='{total}'><b>{shown} of {total} failing "
            f"traces shown</b>, worst first: hallucinated answers, answers that followed an injected instruction, "
            f"retrieval that missed labelled documents, traces that failed to evaluate.{stop} Every trace's result: "
            f"<a href='{link}'>the JSON results</a> (GET /v1/jobs/{escape(report.job_id)}/results, paginated).</p>")


def trace_card(result: TraceResult, worst: Mapping[str, object] | None, query: str | None, total: int) -> str:
    """One trace: id, batch position, badges, question, then each claim beside its evidence."""
    badge = "<span class=badge data-badge=injection-followed>followed an injected instruction</span>" \
        if followed_injection(result) else ""
    lines = [f"<div class=trace data-trace-id='{escape(result.trace_id)}'><b>{escape(result.trace_id)}</b> {badge}"
             f"<span class=meta>trace {result.index + 1} of {total} in the batch · "
             f"{escape(result.question_type or 'unspecified')}"]
    if result.generation is not None:
        faith = result.generation.faithfulness
        lines.append(f" · faithfulness {faith:.2f}" if faith is not None else " · no claims")
    if worst is not None:
        missed = ", ".join(str(d) for d in worst.get("missed_doc_ids", []))  # type: ignore[union-attr]
        lines.append(f" · {escape(str(worst['metric']))} {float(worst['value']):.2f}"  # type: ignore[arg-type]
                     + (f", missed {escape(missed)}" if missed else ""))
    if result.error:
        lines.append(f" · {escape(result.error)}")
    lines.append("</span>")
    if query is not None:
        lines.append(f"<p class=question data-question><span class=verdict>question</span> {escape(query)}</p>")
    lines += [_claim(claim) for claim in result.claims]
    return "".join(lines) + "</div>"


def _claim(claim: Claim) -> str:
    quotes = "".join(f"<blockquote><span class=verdict>{escape(e.doc_id)}</span> {escape(e.quote)}</blockquote>"
                     for e in claim.evidence) or "<span class=note>no evidence quoted</span>"
    flags = f" <span class=note>({escape(', '.join(claim.flags))})</span>" if claim.flags else ""
    return (f"<div class='claim v-{escape(claim.verdict)}' data-verdict='{escape(claim.verdict)}'>"
            f"<div><span class=verdict>{escape(claim.verdict)}</span>{flags}<br>{escape(claim.text)}</div>"
            f"<div>{quotes}</div></div>")
