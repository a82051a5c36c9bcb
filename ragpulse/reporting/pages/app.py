"""The app page: the monitor's rolling windows of one app (GET /v1/monitor/{app}'s view, one row per window)."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

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
    return ui_page(f"ragpulse: {app}", f"<h2>App {escape(app)}</h2>{links}{table}{note}", top)


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
