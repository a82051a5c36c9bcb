"""Render a report as one self-contained HTML page: inline CSS and SVG, no script, no external URL.

Every piece of trace text (claims, quotes, ids) is escaped: it is untrusted data, never markup. The page loops over
the metric registry, so a declared metric appears here without further edits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from ragpulse.metrics.registry import GENERATION, RETRIEVAL, RetrievalMetric, default_target
from ragpulse.model.estimate import Estimate
from ragpulse.model.results import TERMINAL, TraceResult
from ragpulse.reporting.bars_html import Row, legend, metric_tables
from ragpulse.reporting.trace_html import FAILING_SHOWN, failing_section, failing_traces
from ragpulse.reporting.agreement_html import corrected_section
from ragpulse.reporting.report import DiagnosticMatrix, Group, Report
from ragpulse.reporting.build import diagnostic_k
from ragpulse.reporting.render import judge_line

__all__ = ["FAILING_SHOWN", "failing_traces", "pending_page", "render_html"]

REFRESH_SECONDS = 5
"""A page for a job still queued or running reloads itself this often (a meta refresh: no script under the CSP)."""

CSS = """
:root { --ok: #1b7f3b; --warn: #b26a00; --bad: #b3261e; --muted: #5f6368; --line: #dadce0; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #202124; margin: 0;
       padding: 24px 32px; max-width: 1240px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line);
       padding-bottom: 4px; } h3 { font-size: 14px; margin: 16px 0 6px; }
.meta, .note { color: var(--muted); } .note { font-size: 12px; }
.banner { background: #fff4e5; border: 1px solid #f0c36d; padding: 8px 12px; border-radius: 6px; margin: 12px 0; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: 4px 8px; vertical-align: top; }
th { font-weight: 600; color: var(--muted); border-bottom: 1px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr + tr td { border-top: 1px solid #f1f3f4; }
.ui-nav { display: flex; flex-wrap: wrap; gap: 6px 10px; align-items: center; margin: 0 0 12px; }
.ui-nav form { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 0; }
.ui-nav input { font: inherit; padding: 2px 6px; width: 18em; max-width: 100%; } .id { font-family: monospace; }
.scroll { overflow-x: auto; max-width: 100%; } caption { text-align: left; font-weight: 600; padding: 6px 0 2px; }
.metrics td:first-child { overflow-wrap: anywhere; }
.bar, .axis-head { width: 34%; min-width: 120px; } .bar svg { display: block; width: 100%; min-width: 120px; height: 18px; }
.axis-head { display: flex; justify-content: space-between; } .missed { color: var(--bad); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 4px 0 6px; }
.badge { background: #fce8e6; color: var(--bad); border-radius: 4px; padding: 1px 6px; font-size: 12px; font-weight: 600; }
.question { margin: 4px 0; }
.matrix { display: grid; grid-template-columns: 140px 1fr 1fr; gap: 6px; max-width: 620px; }
.cell { border-radius: 6px; padding: 10px; text-align: center; background: #f1f3f4; }
.cell b { display: block; font-size: 20px; } .cell.hot { background: #fce8e6; } .cell.good { background: #e6f4ea; }
.axis { color: var(--muted); font-weight: 600; display: flex; align-items: center; justify-content: center; }
.issue { margin-top: 10px; }
.trace { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; break-inside: avoid; }
.claim { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; padding: 4px 0; }
.v-supported { border-left: 4px solid var(--ok); padding-left: 8px; }
.v-unsupported { border-left: 4px solid var(--warn); padding-left: 8px; background: #fff8e1; }
.v-contradicted { border-left: 4px solid var(--bad); padding-left: 8px; background: #fce8e6; }
.verdict { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
blockquote { margin: 0; padding-left: 8px; border-left: 2px solid var(--line); color: #3c4043; }
@media (max-width: 1100px) { .cols { display: block; } body { padding: 16px; } }
@media print { body { padding: 0; max-width: none; } h2 { break-after: avoid; } .cols { display: block; } }
"""


def render_html(report: Report, failing: Sequence[TraceResult] = (), queries: Mapping[int, str] | None = None,
                nav: str = "") -> str:
    """The whole page; `failing` are the stored results of the failing traces (`failing_traces`; the first
    FAILING_SHOWN are shown with their claims and evidence), `queries` their questions by batch index; `nav` is markup
    put first (the web UI's bar: ragpulse.reporting.pages.job_nav), none for the API's page and saved files."""
    gen = report.generation
    judges = judge_line(gen)
    k = diagnostic_k(report.method.k)
    parts = [
        nav,
        f"<h1>ragpulse report</h1><p class=meta>job {escape(report.job_id)} · environment "
        f"<span data-environment>{escape(report.environment)}</span> · {report.counts.total} traces "
        f"({report.counts.ok} ok, {report.counts.failed} failed; {report.counts.labelled} with retrieval labels"
        + (f"; {report.counts.judge_input_truncated} judged on cut input" if report.counts.judge_input_truncated
           else "") + ") · "
        f"judge: {escape(judges)} · intervals: 95% ({escape(report.method.ci95.means)}; "
        f"{escape(report.method.ci95.proportions)} for proportions; a mean whose values are all equal: "
        "the Wilson interval on its scale, as nothing varies to bootstrap)</p>",
        _judge_banner(report),
        legend(),
        "<div class=cols><section><h2>Retrieval</h2>",
        metric_tables([Row(key, report.retrieval.get(key), _target(report, key), m.better, m.scale)
                       for m in RETRIEVAL for key in _keys(m, report.method.k)]),
        "<p class=note>Macro-average over labelled traces with at least one relevant document. "
        "Targets: the batch's own, else the documented starting ones.</p></section>",
        "<section><h2>Generation</h2>", _generation_table(report), "</section></div>",
        "<h2>Judge-corrected rates</h2>", corrected_section(report),
        "<h2>Retrieval × generation</h2>", _matrix(report.diagnostic_matrix),
        "<h2>Failure attribution</h2>", _attribution(report),
        "<h2>Security</h2>", _security(report),
        *_dataset_sections(report, k),
        "<h2>By question type</h2>", _breakdown(report.by_question_type, k),
        "<h2>By source</h2>", _breakdown(report.by_source, k),
        "<h2>Failing traces</h2>", failing_section(report, failing, queries or {}),
    ]
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'><title>ragpulse report "
            f"{escape(report.job_id)}</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>")


def _dataset_sections(report: Report, k: int) -> list[str]:
    """The dataset version measured, its human-written subset and test split apart, and the split breakdown."""
    bound = report.dataset
    parts = []
    if bound is not None:
        splits = ", ".join(f"{escape(name)} {n}" for name, n in sorted(bound.splits.items())) or "none"
        parts += [f"<h2>Dataset</h2><p class=meta>{escape(bound.name)} version {bound.version} ({escape(bound.status)}"
                  f", sha256 <code>{escape(bound.content_hash)}</code>): {bound.items} of {bound.version_items} items"
                  f"; splits {splits}" + (f"; {bound.unbound} traces named no item" if bound.unbound else "")
                  + (f"; {bound.retrieval_unanswerable} set aside as retrieval-unanswerable (retrieval metrics only, "
                     "not judged)" if bound.retrieval_unanswerable else "") + "</p>"]
    if report.subsets:
        parts += ["<h2>Human-written subset and test split</h2>", _breakdown(report.subsets, k)]
    if report.by_split:
        parts += ["<h2>By split</h2>", _breakdown(report.by_split, k)]
    if report.by_turn:
        parts += ["<h2>By turn (conversations: first turn and follow-ups)</h2>", _breakdown(report.by_turn, k)]
    return parts


def _generation_table(report: Report) -> str:
    """The judged generation metrics, or, for a job whose judge judges nothing, that they were not judged."""
    gen = report.generation
    if gen.not_judged is not None:
        return "<p class=note data-not-judged>Not judged (no LLM judge configured): see the note above.</p>"
    return (_qualification(report)
            + metric_tables([Row(m.name, getattr(gen, m.name), _target(report, m.name), m.better, m.scale)
                             for m in GENERATION])
            + f"<p class=note>{gen.n_judged} judged, {gen.n_abstained} abstained; unanswerable: "
              f"{gen.unanswerable.n} ({gen.unanswerable.labelled} labelled), {gen.unanswerable.hallucinated} "
              "hallucinated.</p>")


def _qualification(report: Report) -> str:
    """The judge's qualification on the shipped suite, above the rates it qualifies."""
    note = report.qualification
    if note is None:
        return ""
    return f"<p class=note data-qualification={escape(note.verdict)}>Judge {escape(note.summary)}.</p>"


def _judge_banner(report: Report) -> str:
    if report.generation.not_judged is not None:
        return f"<p class=banner data-not-judged><b>Not judged.</b> {escape(report.generation.not_judged)}.</p>"
    if report.generation.heuristic:
        return ("<p class=banner data-heuristic><b>Offline heuristic judge.</b> Generation figures come from "
                "<code>heuristic</code>, an offline word-overlap heuristic, not an LLM judge: its accuracy on your "
                "data is unmeasured (see docs/local_judge.md for its figures on data it was not written against), "
                "and its figures never page.</p>")
    if not report.generation.n_judged:
        return "<p class=banner>No trace was judged: generation metrics and the diagnostic matrix are empty.</p>"
    return ""


def _keys(metric: RetrievalMetric, ks: Sequence[int]) -> list[str]:
    """The report keys of a retrieval metric: one per k for an `at_k` metric, else its name."""
    return [metric.key(k) for k in ks] if metric.at_k else [metric.name]


def _target(report: Report, key: str) -> float | None:
    """The target the report holds `key` to; a report stored before targets were recorded uses the default."""
    return report.targets[key].target if key in report.targets else default_target(key)


def _matrix(matrix: DiagnosticMatrix) -> str:
    def cell(name: str, tone: str) -> str:
        c = matrix.cells[name]
        share = f"{c.share:.0%}" if c.share is not None else "–"
        return f"<div class='cell {tone}' data-cell='{name}'><b>{c.count}</b>{share}</div>"

    return (f"<div class=matrix><div></div><div class=axis>faithful</div><div class=axis>hallucinating</div>"
            f"<div class=axis>retrieval good</div>{cell('retrieval_good_faithful', 'good')}"
            f"{cell('retrieval_good_hallucinating', 'hot')}"
            f"<div class=axis>retrieval poor</div>{cell('retrieval_poor_faithful', '')}"
            f"{cell('retrieval_poor_hallucinating', 'hot')}</div>"
            f"<p class=issue data-primary-issue='{escape(matrix.primary_issue)}'><b>Primary issue: "
            f"{escape(matrix.primary_issue)}.</b> {escape(matrix.next_step)}</p>"
            f"<p class=note>{matrix.n} judged traces with claims; retrieval good = "
            f"{escape(matrix.retrieval_good_means)}.</p>")


def _attribution(report: Report) -> str:
    section = report.attribution
    if section is None or section.n == 0:
        return "<p class=note>No trace to attribute.</p>"
    rows = "".join(
        f"<tr><td>{escape(stage)}</td><td class=num>{row.count}</td><td class=num>{_mean(row.share)}</td>"
        f"<td>{escape(row.next_step)}</td></tr>" for stage, row in section.stages.items() if row.count)
    return ("<p class=note>The first pipeline stage that broke, per trace.</p><div class=scroll><table><tr><th>stage</th>"
            f"<th class=num>traces</th><th class=num>share</th><th>next step</th></tr>{rows}</table></div>")


def _security(report: Report) -> str:
    section = report.security
    if section is None:
        return "<p class=note>No security checks in this report.</p>"
    rows = []
    for name, est in section.rates.items():
        interval = f"[{est.ci95[0]:.3f}, {est.ci95[1]:.3f}]" if est else "-"
        flagged = ", ".join(section.flagged.get(name, [])[:5])
        rows.append(f"<tr><td>{escape(name)}</td><td class=num>{_mean(est)}</td><td class=num>{interval}</td>"
                    f"<td class=num>{est.n if est else 0}</td><td>{escape(flagged)}</td></tr>")
    kinds = ", ".join(f"{escape(kind)} {n}" for kind, n in section.pii_kinds.items())
    credentials = ", ".join(f"{escape(kind)} {n}" for kind, n in section.credential_kinds.items())
    return ("<p class=note>Checks in code; injection, phone and stated-password detection are heuristics. Shares of "
            "the traces each "
            "check could run on, Wilson 95% intervals.</p><div class=scroll><table><tr><th>check</th><th class=num>share</th>"
            f"<th class=num>95% CI</th><th class=num>n</th><th>flagged traces</th></tr>{''.join(rows)}</table></div>"
            + (f"<p class=note>Personal data kinds in answers: {kinds}.</p>" if kinds else "")
            + (f"<p class=note>Credential kinds in answers: {credentials}.</p>" if credentials else ""))


def _breakdown(groups: Mapping[str, Group], k: int) -> str:
    retrieval = [m.key(k) for m in RETRIEVAL if m.breakdown]
    generation = [m for m in GENERATION if m.breakdown]
    if not groups:
        return "<p class=note>No groups.</p>"
    head = "".join(f"<th class=num>{escape(c)}</th>" for c in (*retrieval, *(m.name for m in generation)))
    rows = []
    for name, group in groups.items():
        values = [group.retrieval.get(c) for c in retrieval] + [getattr(group.generation, m.name) for m in generation]
        cells = "".join(f"<td class=num>{_mean(v)}</td>" for v in values)
        rows.append(f"<tr><td>{escape(name)}</td><td class=num>{group.n}</td>{cells}</tr>")
    return f"<div class=scroll><table><tr><th>group</th><th class=num>n</th>{head}</tr>{''.join(rows)}</table></div>"


def pending_page(job_id: str, status: str, detail: str) -> str:
    """The page of a job without a report yet: its status word exactly as the JSON gives it; while the job is queued
    or running it reloads itself every REFRESH_SECONDS."""
    refresh = (f"<meta http-equiv=refresh content={REFRESH_SECONDS}>" if status not in TERMINAL else "")
    again = f" This page reloads every {REFRESH_SECONDS} s." if refresh else ""
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>{refresh}<title>ragpulse report "
            f"{escape(job_id)}: {escape(status)}</title><style>{CSS}</style></head><body><h1>ragpulse report</h1>"
            f"<p>job {escape(job_id)} is <b data-status='{escape(status)}'>{escape(status)}</b>; {escape(detail)}."
            f"{again}</p></body></html>")


def _mean(est: Estimate | None) -> str:
    return f"{est.mean:.3f}" if est else "–"
