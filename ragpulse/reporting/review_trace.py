"""One trace on the review page: the question form (the judge's verdicts left out) and, once answered, the result.

The form shows the query, the answer split into its claims and the retrieved documents, and asks the reviewer's own
call before anything the judge said is on the page: a reviewer who has seen the verdict anchors on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Protocol
from urllib.parse import quote

from ragpulse.model.labels import ClaimText, DocumentText, JudgeView, Label
from ragpulse.reporting.review_html import csrf_field

VERDICTS = ("supported", "unsupported", "contradicted")
"""The per-claim choices, as ClaimLabel.verdict spells them; `not sure` sends none."""


class Reviewable(Protocol):
    """A judged trace as a reviewer reads it: a ReviewItem of the queue, or one trace read back by id."""

    trace_id: str
    job_id: str | None
    app: str
    query: str
    answer: str | None
    documents: list[DocumentText]
    claims: list[ClaimText]
    judge: JudgeView


def review_path(app: str) -> str:
    return f"/review/{quote(app, safe='')}"


def trace_form(item: Reviewable, csrf: str, reviewer: str | None, error: str | None = None,
               answers: Mapping[str, str] | None = None) -> str:
    """The trace and the label form; `answers` refill the form after a refused submission."""
    given = answers or {}
    problem = f"<p class=error role=alert id=form-error>{escape(error)}</p>" if error else ""
    claims = "".join(_claim_fieldset(c.index, c.text, given.get(f"claim-{c.index}", "")) for c in item.claims)
    job = f"<input type=hidden name=job_id value=\"{escape(item.job_id)}\">" if item.job_id else ""
    form = (f"<form class=answer-form method=post action=\"{escape(review_path(item.app))}\">"
            f"<h2>Your label</h2>{problem}{csrf_field(csrf)}"
            f"<input type=hidden name=trace_id value=\"{escape(item.trace_id)}\">{job}"
            + (f"<p class=note>Per-claim verdicts are optional.</p>{claims}" if claims else "")
            + _yes_no("hallucinated", "Does the answer assert anything the documents do not support?", given)
            + _yes_no("abstained", "Does the answer decline to answer (and assert nothing else)?", given)
            + "<label class=field for=note><span>Note (optional)</span>"
            f"<textarea id=note name=note maxlength=4000>{escape(given.get('note', ''))}</textarea></label>"
            "<label class=field for=reviewer><span>Your name</span><input type=text id=reviewer name=reviewer "
            f"required maxlength=64 autocomplete=username value=\"{escape(given.get('reviewer', reviewer or ''))}\">"
            "</label><button type=submit>Save label and show the judge's call</button></form>")
    return f"<div class=review>{_trace(item)}{_documents(item)}{form}</div>"


def result_view(item: Reviewable, label: Label) -> str:
    """The reviewer's label beside the judge's call, and the way on to the next trace."""
    judge = item.judge
    by_claim = {c.index: c.verdict for c in label.claims or ()}
    rows = [_row("Hallucinated", _yes(label.hallucinated), _yes(judge.hallucinated)),
            _row("Abstained", _yes(label.abstained) if label.abstained is not None else "–", _yes(judge.abstained))]
    texts = {c.index: c.text for c in item.claims}
    for claim in judge.claims:
        why = " ".join(escape(x) for x in (claim.reason, f"“{claim.quote}”" if claim.quote else None) if x)
        rows.append(_row(f"Claim {claim.index + 1}: {texts.get(claim.index, '')}", by_claim.get(claim.index, "–"),
                         claim.verdict, why))
    note = f"<p>Your note: <span class=text>{escape(label.note)}</span></p>" if label.note else ""
    return (f"<div class=review>{_trace(item)}{_documents(item)}<section class=result aria-labelledby=result-h>"
            f"<h2 id=result-h>Your label and the judge's call</h2>"
            f"<p class=banner role=status>Label saved as <b>{escape(label.reviewer)}</b>"
            f"{' (your earlier label of this trace was replaced)' if label.replaced else ''}.</p>"
            f"<table data-judge=\"{escape(judge.judge)}\"><tr><th scope=col>question</th><th scope=col>you</th>"
            f"<th scope=col>judge ({escape(judge.judge)}, prompt {escape(judge.prompt_version)})</th></tr>"
            f"{''.join(rows)}</table>{note}"
            f"<p><a class=button id=next href=\"{escape(review_path(item.app))}\">Next trace</a></p></section></div>")


def _trace(item: Reviewable) -> str:
    answer = (f"<p class=text data-answer>{escape(item.answer)}</p>" if item.answer is not None
              else "<p class=note>No answer text.</p>")
    listed = "".join(f"<li class=text>{escape(c.text)}</li>" for c in item.claims)
    claims = (f"<h3>Its claims</h3><ol class=claims>{listed}</ol>" if listed
              else "<p class=note>The judge found no claim in this answer.</p>")
    return (f"<section class=trace data-trace-id=\"{escape(item.trace_id)}\"><h2>Query</h2>"
            f"<p class=text>{escape(item.query)}</p><h2>Answer</h2>{answer}{claims}"
            f"<p class=note>trace {escape(item.trace_id)}"
            f"{' · job ' + escape(item.job_id) if item.job_id else ''}</p></section>")


def _documents(item: Reviewable) -> str:
    docs = "".join(f"<article class=doc><h3>{escape(d.doc_id)}</h3>"
                   + (f"<p class=text>{escape(d.text)}</p>" if d.text is not None else "<p class=note>no text kept</p>")
                   + "</article>" for d in item.documents)
    return (f"<section class=docs><h2>Retrieved documents ({len(item.documents)})</h2>"
            f"{docs or '<p class=note>No document was retrieved.</p>'}</section>")


def _claim_fieldset(index: int, text: str, chosen: str) -> str:
    options = [*((v, v) for v in VERDICTS), ("", "not sure")]
    return (f"<fieldset><legend>Claim {index + 1}: <span class=text>{escape(text)}</span></legend>"
            + _choices(f"claim-{index}", options, chosen or "") + "</fieldset>")


def _yes_no(name: str, question: str, given: Mapping[str, str]) -> str:
    return (f"<fieldset><legend>{escape(question)}</legend>"
            + _choices(name, [("yes", "yes"), ("no", "no")], given.get(name), required=True) + "</fieldset>")


def _choices(name: str, options: list[tuple[str, str]], chosen: str | None, required: bool = False) -> str:
    out = []
    for n, (value, text) in enumerate(options):
        checked = " checked" if chosen == value else ""
        req = " required" if required and n == 0 else ""
        out.append(f"<label><input type=radio name=\"{name}\" value=\"{escape(value)}\"{checked}{req}>"
                   f"{escape(text)}</label>")
    return f"<div class=choices>{''.join(out)}</div>"


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _row(question: str, yours: str, judges: str, why: str = "") -> str:
    mark = "" if yours == "–" else (" <span class=agree>agree</span>" if yours == judges
                                    else " <span class=differ>differ</span>")
    return (f"<tr><td class=text>{escape(question)}</td><td class=you data-you>{escape(yours)}</td>"
            f"<td data-judge-call>{escape(judges)}{mark}{'<br><span class=note>' + why + '</span>' if why else ''}"
            "</td></tr>")
