"""The gate's verdicts as a terminal table, JUnit XML (one test case per row) and GitHub Actions annotations."""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from ragpulse.gate.checks import Row

MARKS = {"pass": "PASS", "fail": "FAIL", "no_data": "NO DATA", "info": "info"}


def table(rows: Sequence[Row]) -> str:
    """metric, value, interval, threshold, p and adjusted p (baseline rows), verdict: one line per row; a baseline
    row's explanation (the test, the family, why a change is not significant; a dataset mismatch) on an indented line
    under it."""
    width = max([len(r.metric) for r in rows] + [6]) + 2
    lines = [f"{'metric':<{width}}{'value':>8}  {'95% CI':<18}{'threshold':<27}{'p':>8}{'p adj':>8}  verdict"]
    for row in rows:
        value = "-" if row.value is None else f"{row.value:.3f}"
        interval = "-" if row.interval is None else f"[{row.interval[0]:.3f}, {row.interval[1]:.3f}]"
        p_value, p_adjusted = (_p(row.p_value), _p(row.p_adjusted))
        lines.append(f"{row.metric:<{width}}{value:>8}  {interval:<18}{row.threshold:<27}{p_value:>8}{p_adjusted:>8}"
                     f"  {MARKS[row.verdict]}")
        if row.p_value is not None or row.metric in ("regression family", "dataset", "judges") or (
                row.value is None and row.verdict in ("fail", "no_data") and row.detail):
            lines.append(f"{'':<{width}}  {row.detail}")
    return "\n".join(lines)


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if value >= 0.0001 else f"{value:.0e}"


def summary(rows: Sequence[Row]) -> str:
    failed = [r.metric for r in rows if r.failed]
    if not failed:
        return "gate PASSED"
    return f"gate FAILED: {', '.join(failed)}"


def junit_xml(rows: Sequence[Row]) -> str:
    """A JUnit XML report (UTF-8, with its declaration): one testsuite `ragpulse gate`, one testcase per row, a <failure> for each failed row and
    <skipped> for rows without data or that only inform."""
    suite = ET.Element("testsuite", name="ragpulse gate", tests=str(len(rows)),
                       failures=str(sum(r.failed for r in rows)),
                       skipped=str(sum(r.verdict in ("no_data", "info") for r in rows)))
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname="ragpulse.gate", name=row.metric)
        text = _sentence(row)
        if row.failed:
            ET.SubElement(case, "failure", message=text).text = row.detail
        elif row.verdict in ("no_data", "info"):
            ET.SubElement(case, "skipped", message=text)
        ET.SubElement(case, "system-out").text = text
    root = ET.Element("testsuites", name="ragpulse")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True).decode("utf-8")


def github_annotations(rows: Sequence[Row]) -> str:
    """`::error` for each failed row, `::notice` for the others (workflow commands, one per line)."""
    lines = []
    for row in rows:
        level = "error" if row.failed else "notice"
        title = _escape(f"ragpulse gate: {row.metric}", prop=True)
        lines.append(f"::{level} title={title}::{_escape(_sentence(row))}")
    return "\n".join(lines)


def _sentence(row: Row) -> str:
    value = "no value" if row.value is None else f"{row.value:.3f}"
    interval = "" if row.interval is None else f" [{row.interval[0]:.3f}, {row.interval[1]:.3f}]"
    return f"{row.metric} = {value}{interval}, threshold {row.threshold}: {MARKS[row.verdict]}. {row.detail}".strip()


def _escape(text: str, prop: bool = False) -> str:
    """GitHub workflow-command escaping (data: % CR LF; properties also : and ,)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text
