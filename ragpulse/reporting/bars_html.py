"""The report page's metric tables: mean, n, numeric 95% interval and target, and a bar on a labelled scale.

One table per scale, so 1-3 relevance grades never share an axis with 0-1 rates; the legend says what the colours,
whiskers and tick mean. Every figure is also a data attribute (`data-mean`, `data-ci-low`, `data-target`) that the
browser tests compare with the JSON report.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import NamedTuple

from ragpulse.model.estimate import Estimate

BAR_WIDTH = 360
"""Width of a metric bar's track in SVG units (the bar scales to its column)."""
COLOURS = {True: "#81c995", False: "#f6ae2d", None: "#8ab4f8"}
"""Bar fill by target verdict: met, missed, no target."""
SCALE_NAMES = {(0.0, 1.0): "rates and scores, 0 to 1", (1.0, 3.0): "graded relevance, 1 (poor) to 3 (good)"}
"""How each scale is captioned; any other scale is captioned by its bounds."""


class Row(NamedTuple):
    """One metric of a table."""

    name: str
    est: Estimate | None
    target: float | None
    better: str
    scale: tuple[float, float]


def metric_tables(rows: Sequence[Row]) -> str:
    """One table per scale, in the order the scales first appear."""
    scales = list(dict.fromkeys(row.scale for row in rows))
    return "".join(_table([r for r in rows if r.scale == scale], scale, len(scales) > 1) for scale in scales)


def legend() -> str:
    """What the bars' colours, whiskers and tick mean."""
    swatch = "".join(f"<span class=swatch style='background:{COLOURS[met]}'></span>{escape(what)} "
                     for met, what in ((True, "meets its target"), (False, "misses its target"),
                                       (None, "no target")))
    return (f"<p class='note legend' data-legend>Bar colour: {swatch}· whisker: 95% interval · black tick: target. "
            "Each table's bars run on the scale in its header.</p>")


def met(est: Estimate, target: float | None, better: str) -> bool | None:
    """Whether the mean meets the target (None without one)."""
    if target is None:
        return None
    return est.mean >= target if better == "higher" else est.mean <= target


def _table(rows: Sequence[Row], scale: tuple[float, float], captioned: bool) -> str:
    low, high = scale
    caption = f"<caption>{escape(SCALE_NAMES.get(scale, f'{low:g} to {high:g}'))}</caption>" if captioned else ""
    head = (f"<tr><th>metric</th><th class=num>mean</th><th class=num>95% CI</th><th class=num>n</th>"
            f"<th class=num>target</th><th class=axis-head data-scale='{low:g}-{high:g}'><span>{low:g}</span>"
            f"<span>{high:g}</span></th></tr>")
    body = "".join(_row(row) for row in rows)
    return f"<div class=scroll><table class=metrics>{caption}{head}{body}</table></div>"


def _row(row: Row) -> str:
    name, est, target, better, scale = row
    if est is None:
        return (f"<tr data-metric-empty='{escape(name)}'><td>{escape(name)}</td><td class=num>–</td><td></td>"
                f"<td class=num>0</td><td class=num>{_target_text(target, better, None)}</td><td></td></tr>")
    verdict = met(est, target, better)
    low, high = est.ci95
    target_attr = f" data-target='{target:.6f}' data-met='{str(verdict).lower()}'" if target is not None else ""
    return (f"<tr data-metric='{escape(name)}'><td>{escape(name)}</td>"
            f"<td class=num data-mean='{est.mean:.6f}'>{est.mean:.3f}</td>"
            f"<td class=num data-ci-low='{low:.6f}' data-ci-high='{high:.6f}'>[{low:.3f}, {high:.3f}]</td>"
            f"<td class=num>{est.n}</td><td class=num{target_attr}>{_target_text(target, better, verdict)}</td>"
            f"<td class=bar>{_bar(est, target, verdict, scale)}</td></tr>")


def _target_text(target: float | None, better: str, verdict: bool | None) -> str:
    if target is None:
        return "–"
    sign = "≥" if better == "higher" else "≤"
    word = {True: " met", False: " <b class=missed>missed</b>", None: ""}[verdict]
    return f"{sign} {target:g}{word}"


def _bar(est: Estimate, target: float | None, verdict: bool | None, scale: tuple[float, float]) -> str:
    low, high = scale

    def x(value: float) -> float:
        return round(BAR_WIDTH * min(1.0, max(0.0, (value - low) / (high - low))), 1)

    ci_low, ci_high = est.ci95
    target_mark = (f"<line x1='{x(target)}' x2='{x(target)}' y1='1' y2='17' stroke='#202124' stroke-width='2'>"
                   f"<title>target {target:g}</title></line>") if target is not None else ""
    return (f"<svg viewBox='0 0 {BAR_WIDTH} 18' preserveAspectRatio='none' role=img aria-label='mean {est.mean:.3f}, "
            f"95% interval {ci_low:.3f} to {ci_high:.3f}'><rect width='{BAR_WIDTH}' height='18' fill='#f1f3f4'/>"
            f"<rect class=fill width='{x(est.mean)}' height='18' fill='{COLOURS[verdict]}'/>"
            f"<line x1='{x(ci_low)}' x2='{x(ci_high)}' y1='9' y2='9' stroke='#3c4043' stroke-width='1.5'/>"
            f"<line x1='{x(ci_low)}' x2='{x(ci_low)}' y1='5' y2='13' stroke='#3c4043'/>"
            f"<line x1='{x(ci_high)}' x2='{x(ci_high)}' y1='5' y2='13' stroke='#3c4043'/>{target_mark}</svg>")
