"""The app page: the monitor's rolling windows of one app (GET /v1/monitor/{app}'s view, one row per window)."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from ragpulse.model.agreement import POPULATIONS
from ragpulse.reporting.pages.frame import ui_page

RATES = (("hallucination_rate", "Hallucination rate"), ("unanswerable_hallucination_rate", "Unanswerable hall. rate"),
         ("abstention_rate", "Abstention rate"), ("judge_error_rate", "Judge error rate"))
"""The monitor's rates with a Wilson 95% interval, in column order."""


def app_page(app: str, views: list[dict[str, Any]], top: str) -> str:
    """The whole app page; `views` are the monitor's answers, one per window, shortest first. `data-*` attributes
    carry the figures as the JSON gives them."""
    quoted = quote(app, safe="")
    links = (f"<p><a href=\"/jobs?app={quoted}\">Jobs of this app</a> · <a href=\"/review/{quoted}\">Review "
             "queue</a></p>")
    heads = "".join(f"<th class=num>{name}</th>" for _, name in RATES)
    rows = "".join(_row(view) for view in views)
    table = ("<div class=scroll><table class=windows><thead><tr><th>Window</th><th class=num>Received</th>"
             "<th class=num>Processed</th><th class=num>Judged</th><th class=num>Sample rate</th>"
             f"<th class=num>Mean faithfulness</th>{heads}</tr></thead><tbody>{rows}</tbody></table></div>")
    note = ("<p class=note>Rates are over the window's judged traces, with Wilson 95% intervals; — where no trace "
            "counts toward a rate (never 0).</p>")
    corrected = f"<h3>Judge-corrected hallucination rates</h3>{_corrected(views)}{_agreement(views)}"
    return ui_page(f"ragpulse: {app}", f"<h2>App {escape(app)}</h2>{links}{_judge_note(views)}"
                   f"{_qualification(views)}{table}{note}{corrected}", top)


def _qualification(views: list[dict[str, Any]]) -> str:
    """The judge's latest qualification on the shipped suite, above the rates it judged."""
    note = (views[0] if views else {}).get("qualification")
    if not note:
        return ""
    return f"<p class=note data-qualification={escape(note['verdict'])}>Judge {escape(note['summary'])}.</p>"


def _judge_note(views: list[dict[str, Any]]) -> str:
    """Says so first when the online traces are not judged, or judged only by the unmeasured heuristic."""
    view = views[0] if views else {}
    if view.get("not_judged"):
        return f"<p class=caution data-not-judged><b>Not judged.</b> {escape(view['not_judged'])}.</p>"
    if (view.get("judge") or {}).get("heuristic"):
        return ("<p class=caution data-heuristic><b>Heuristic judge.</b> The rates below come from "
                "<code>heuristic</code>, an offline word-overlap heuristic whose accuracy on your data is unmeasured;"
                " they never page.</p>")
    return ""


def _row(view: dict[str, Any]) -> str:
    faith = view["mean_faithfulness"]
    cells = "".join(_rate(key, view[key]) for key, _ in RATES)
    return (f"<tr data-window=\"{escape(view['window'])}\"><td>{escape(view['window'])}</td>"
            f"<td class=num data-received={view['traces_received']}>{view['traces_received']}</td>"
            f"<td class=num data-processed={view['traces_processed']}>{view['traces_processed']}</td>"
            f"<td class=num data-judged={view['judged']}>{view['judged']}</td>"
            f"<td class=num>{view['sample_rate']:g}</td>"
            f"<td class=num>{'—' if faith is None else f'{faith:.3f}'}</td>{cells}</tr>")


def _rate(key: str, rate: dict[str, Any] | None) -> str:
    if rate is None:
        return f"<td class=num data-rate={key} data-n=0>—</td>"
    lo, hi = rate["ci95"]
    return (f"<td class=num data-rate={key} data-value=\"{rate['rate']!r}\" data-n={rate['n']}>{rate['rate']:.3f}"
            f"<br><span class=note>[{lo:.3f}, {hi:.3f}] n={rate['n']}</span></td>")


def _corrected(views: list[dict[str, Any]]) -> str:
    """Per window, each hallucination rate as the judge measured it beside the rate corrected for its error (or
    "not measured" with the reason: too few labels, an uninformative judge, no judged trace)."""
    rows = "".join(_corrected_row(view["window"], rate, c) for view in views
                   for rate, c in (view.get("corrected") or {}).items())
    if not rows:
        return ("<p class=note data-corrected-none>Not measured: no judged trace in any window to correct. Label "
                "traces on the review page to measure the judge's error.</p>")
    return ("<div class=scroll><table class=corrected><thead><tr><th>Window</th><th>Rate</th>"
            "<th class=num>Judge's rate</th><th class=num>Corrected</th><th class=num>Labels</th><th>Status</th>"
            f"</tr></thead><tbody>{rows}</tbody></table></div>"
            "<p class=note>Corrected for the judge's sensitivity and specificity as human labels of this app measure "
            "them (Rogan–Gladen); the corrected interval carries the sampling error and the uncertainty of the "
            "judge's error.</p>")


def _corrected_row(window: str, rate: str, c: dict[str, Any]) -> str:
    return (f"<tr data-window=\"{escape(window)}\" data-rate=\"{escape(rate)}\" data-status=\"{escape(c['status'])}\">"
            f"<td>{escape(window)}</td><td>{escape(rate)}<br><span class=note>over "
            f"{escape(POPULATIONS.get(rate, 'its traces'))}</span></td>"
            f"{_estimate('raw', c['raw'], c['raw_ci95'])}{_estimate('corrected', c['corrected'], c['ci95'])}"
            f"<td class=num data-labels={c['estimation_labels']}>{c['estimation_labels']}</td>"
            f"<td class=note>{escape(c['detail'])}</td></tr>")


def _estimate(kind: str, value: float | None, ci95: list[float] | None) -> str:
    if value is None or ci95 is None:
        return f"<td class=num data-{kind}=none>not measured</td>"
    lo, hi = ci95
    return (f"<td class=num data-{kind}=\"{value!r}\" data-lo=\"{lo!r}\" data-hi=\"{hi!r}\">{value:.3f}"
            f"<br><span class=note>[{lo:.3f}, {hi:.3f}]</span></td>")


def _agreement(views: list[dict[str, Any]]) -> str:
    """The judge against the app's reviewers (from labels, the same in every window), one row per population: every
    labelled trace, and each corrected rate's own, whose sensitivity and specificity its correction uses. Named, so
    two specificities are never read as one (abstentions, faithful to judge and human alike, raise the first)."""
    judge = (views[0].get("judge") if views else None) or {}
    name = escape(str(judge.get("judge", "the judge")))
    agreement = views[0].get("judge_agreement") if views else None
    if agreement is None:
        return (f"<p class=note data-agreement-none>Judge agreement ({name}): not measured, no human label of this "
                "app's traces for this judge yet.</p>")
    populations = (views[0].get("judge_agreement_by_population") or {}) if views else {}
    rows = [("all", "all labelled traces", agreement)]
    rows += [(rate, f"{POPULATIONS[rate]}: the {rate} correction's", populations.get(rate))
             for rate in POPULATIONS]
    body = "".join(_agreement_row(key, label, figures) for key, label, figures in rows)
    warning = f"<p class=note data-agreement-warning>{escape(agreement['warning'])}</p>" if agreement["warning"] else ""
    return (f"<h3>Judge agreement ({name})</h3><div class=scroll><table class=agreement><thead><tr><th>Population</th>"
            "<th class=num>Labelled traces</th><th class=num>Sensitivity</th><th class=num>Specificity</th>"
            f"<th class=num>Cohen's kappa</th></tr></thead><tbody>{body}</tbody></table></div>{warning}")


def _agreement_row(key: str, label: str, figures: dict[str, Any] | None) -> str:
    if figures is None:
        return (f"<tr data-population={key}><td>{escape(label)}</td>"
                "<td class=num colspan=4>not measured: no labelled trace in it</td></tr>")
    kappa = figures["kappa"]
    facts = [("labels", f"{figures['labels']} ({figures['estimation_labels']} in the estimation sample)",
              figures["labels"]),
             ("sensitivity", _share(figures["sensitivity"]), _value(figures["sensitivity"])),
             ("specificity", _share(figures["specificity"]), _value(figures["specificity"])),
             ("kappa", "not measured" if kappa is None else
              f"{kappa:.2f} [{figures['kappa_ci95'][0]:.2f}, {figures['kappa_ci95'][1]:.2f}]", kappa)]
    cells = "".join(f"<td class=num data-agreement={fact} data-value=\"{'none' if raw is None else repr(raw)}\">"
                    f"{text}</td>" for fact, text, raw in facts)
    return f"<tr data-population={key}><td>{escape(label)}</td>{cells}</tr>"


def _share(rate: dict[str, Any] | None) -> str:
    if rate is None:
        return "not measured"
    return f"{rate['value']:.3f} [{rate['ci95'][0]:.3f}, {rate['ci95'][1]:.3f}] n={rate['n']}"


def _value(rate: dict[str, Any] | None) -> float | None:
    return None if rate is None else rate["value"]
