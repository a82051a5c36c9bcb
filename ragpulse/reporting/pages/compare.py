"""The compare page: a candidate job measured against a baseline, from the same Comparison as
GET /v1/jobs/{candidate}/compare?baseline= (metric deltas with intervals and verdicts, the regressed traces with both
sides' values)."""

from __future__ import annotations

from html import escape

from ragpulse.model.compare import Comparison, MetricDelta, Regression, RunInfo
from ragpulse.reporting.pages.frame import job_href, ui_page


def compare_page(comparison: Comparison, top: str) -> str:
    """The whole compare page; `data-*` attributes carry the figures exactly as the JSON answer gives them."""
    c = comparison
    body = (f"<h2>Compare</h2>{_form(c)}{_facts(c)}{_warnings(c.warnings)}"
            f"{_verdict(c)}<h3>Metrics</h3>{_metrics(c)}<h3>Regressed traces</h3>{_regressions(c)}")
    return ui_page(f"ragpulse: compare {c.candidate.job_id} with {c.baseline.job_id}", body, top)


def _form(c: Comparison) -> str:
    fields = "".join(
        f"<label class=field for={name}><span>{name.capitalize()}</span><input type=text id={name} name={name} "
        f"maxlength=64 value=\"{escape(side.job_id)}\"></label>" for name, side in
        (("candidate", c.candidate), ("baseline", c.baseline)))
    return f"<form class=filters method=get action=\"/compare\">{fields}<button type=submit>Compare</button></form>"


def _side(side: RunInfo) -> str:
    run = f" (run {escape(side.run)}, {escape(side.variant)})" if side.run else f" ({escape(side.variant)})"
    return f"<a class=id href=\"{job_href(side.job_id)}\">{escape(side.job_id)}</a>{run}"


def _facts(c: Comparison) -> str:
    family = ", ".join(c.family) or "none"
    rows = (("candidate", "Candidate", _side(c.candidate)), ("baseline", "Baseline", _side(c.baseline)),
            ("matched", "Matched traces", f"{c.matched} (only in baseline {c.only_in_baseline}, only in candidate "
                                          f"{c.only_in_candidate})"),
            ("judges", "Judges", f"candidate: {_judging(c.candidate)}<br>baseline: {_judging(c.baseline)}"),
            ("family", "Tested metrics", f"{escape(family)}; correction {escape(c.correction)}, alpha {c.alpha:g}"))
    return "<dl class=facts>" + "".join(f"<dt>{name}</dt><dd data-fact={key}>{value}</dd>"
                                        for key, name, value in rows) + "</dl>"


def _judging(side: RunInfo) -> str:
    """The side's judge, model and prompt version, and how many of the traces it sent to the judge were judged."""
    j = side.judging
    if j is None:
        return "not known"
    return f"{escape(j.describe())}; {j.judged} of {j.sent} sent traces judged"


def _warnings(warnings: list[str]) -> str:
    return "".join(f"<p class=note data-warning>{escape(w)}</p>" for w in warnings)


def _verdict(c: Comparison) -> str:
    if c.significant_regressions:
        return (f"<p class=verdict data-verdict=regressed>Significant regressions: "
                f"{escape(', '.join(c.significant_regressions))} (what <code>ragpulse gate</code> fails on).</p>")
    return "<p class=verdict data-verdict=ok>No tested metric regressed significantly.</p>"


def _metrics(c: Comparison) -> str:
    rows = "".join(_metric_row(key, m) for group in (c.retrieval, c.generation) for key, m in group.items())
    if not rows:
        return "<p class=note>No metric has a value in both jobs.</p>"
    return ("<div class=scroll><table class=metrics><thead><tr><th>Metric</th><th class=num>n</th>"
            "<th class=num>Baseline</th><th class=num>Candidate</th><th class=num>Delta</th>"
            "<th class=num>95% interval</th><th class=num>p (adjusted)</th><th>Change</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _metric_row(key: str, m: MetricDelta) -> str:
    lo, hi = m.ci95
    p = "—" if m.p_adjusted is None else f"{m.p_adjusted:.3g}"
    note = f"<br><span class=note>{escape(m.note)}</span>" if m.note else ""
    return (f"<tr data-metric=\"{escape(key)}\" data-delta=\"{m.delta!r}\" data-lo=\"{lo!r}\" data-hi=\"{hi!r}\" "
            f"data-change=\"{escape(m.change)}\"><td><span class=key>{escape(key)}</span> <span class=note>"
            f"({escape(m.better)} is better)</span></td><td class=num>{m.n}</td><td class=num>{m.baseline:.3f}</td>"
            f"<td class=num>{m.candidate:.3f}</td><td class=num data-shown=delta>{m.delta:+.3f}</td>"
            f"<td class=num data-shown=ci>[{lo:+.3f}, "
            f"{hi:+.3f}]</td><td class=num>{p}</td><td><span class=\"change {escape(m.change)}\">{escape(m.change)}"
            f"</span>{note}</td></tr>")


def _regressions(c: Comparison) -> str:
    if not c.regressions:
        return f"<p class=note>No matched trace dropped by {c.regression_threshold:g} or more.</p>"
    rows = "".join(_regression_row(r) for r in c.regressions)
    shown = (f"<p class=note data-shown-regressions>Showing the worst {len(c.regressions)} of {c.regressions_total}."
             "</p>") if c.regressions_total > len(c.regressions) else ""
    return (f"{shown}<div class=scroll><table class=regressions><thead><tr><th>Trace</th><th>Why</th>"
            "<th class=num>Severity</th><th>Baseline</th><th>Candidate</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _regression_row(r: Regression) -> str:
    return (f"<tr data-trace=\"{escape(r.trace_id)}\"><td class=id>{escape(r.trace_id)}<br><span class=note>"
            f"#{r.baseline_index} → #{r.candidate_index}</span></td><td>{escape('; '.join(r.reasons))}</td>"
            f"<td class=num>{r.severity:.2f}</td><td data-side=baseline>{_values(r.baseline)}</td>"
            f"<td data-side=candidate>{_values(r.candidate)}</td></tr>")


def _values(values: dict[str, float | bool | None]) -> str:
    def shown(v: float | bool | None) -> str:
        if v is None:
            return "—"
        return ("yes" if v else "no") if isinstance(v, bool) else f"{v:.3f}"
    items = "".join(f"<li>{escape(k)}: {shown(v)}</li>" for k, v in values.items())
    return f"<ul class=sides>{items}</ul>"
