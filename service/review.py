"""GET/POST /review/{app}: the review page, one judged trace at a time, for the session's tenant only.

GET shows the next trace of the app's review queue that this reviewer has not labelled, without the judge's
verdicts; POST stores the label through the labels domain and redirects (303) to the result, where the judge's call
stands beside the reviewer's. The result is shown only once this reviewer's label of the trace exists.
Rendering lives in ragpulse.reporting.review_html and review_trace; authentication in service.review_auth.
"""

from __future__ import annotations

import re
from typing import Annotated

from litestar import Controller, Response, get, post
from litestar.params import Parameter
from litestar.response import Redirect

from ragpulse.config import defaults
from ragpulse.exceptions import InvalidBody
from ragpulse.model.labels import Label
from ragpulse.model.trace import APP_NAME_PATTERN
from ragpulse.reporting.review_html import header, index_page, message_page, page
from ragpulse.reporting.review_trace import Reviewable, result_view, review_path, trace_form
from service import review_labels
from service.review_auth import Review, form_text
from service.review_form import answers, label_request
from service.review_login import Form, html

AppParam = Annotated[str, Parameter(pattern=APP_NAME_PATTERN, description="The app whose traces to review.")]
_APP = re.compile(APP_NAME_PATTERN)


class ReviewPageController(Controller):
    """The review pages; every handler acts for the session's tenant (service.review_auth)."""

    path = "/review"
    tags = ["review"]
    include_in_schema = False
    request_max_body_size = defaults.REVIEW_FORM_MAX_BYTES

    @get("/", sync_to_thread=True)
    def index(self, review: Review, app: str | None = None) -> Response[str]:
        """Pick an app; `?app=` (the form's answer) goes straight to its page."""
        if app and _APP.match(app):
            return Redirect(review_path(app), status_code=303, cookies=review.cookies)
        return html(index_page(_top(review, None)), cookies=review.cookies)

    @get("/{app:str}", sync_to_thread=True)
    def next_trace(self, app: AppParam, review: Review) -> Response[str]:
        """The next trace to label, or a page saying there is none."""
        item = review_labels.next_item(review, app)
        top = _top(review, app)
        if item is None:
            return html(message_page(
                "Nothing to review", f"No judged trace of app {app} is waiting for your label.", top,
                "Traces appear here once they are judged and picked by the review sample; reload later."),
                cookies=review.cookies)
        return html(page(f"review {app}: {item.trace_id}", trace_form(item, review.session.csrf,
                                                                     review.session.reviewer), top),
                    cookies=review.cookies)

    @post("/{app:str}", sync_to_thread=True, status_code=303)
    def submit(self, app: AppParam, review: Review, data: Form) -> Response[str]:
        """Store the reviewer's label, then show it beside the judge's call; a form that cannot be a label is shown
        again (422) with what to fix."""
        review.check_form(data)
        item = review_labels.item(review, app, form_text(data, "trace_id"), form_text(data, "job_id") or None)
        try:
            request = label_request(data)
        except InvalidBody as exc:
            form = trace_form(item, review.session.csrf, review.session.reviewer, exc.detail, answers(data))
            return html(page(f"review {app}: {item.trace_id}", form, _top(review, app)), status=422)
        label = review_labels.save(review, request)
        review.services.review_sessions.remember_reviewer(review.session_id, review.session, label.reviewer)
        query = {"trace_id": label.trace_id, **({"job_id": label.job_id} if label.job_id else {})}
        return Redirect(f"{review_path(app)}/result", query_params=query, status_code=303)

    @get("/{app:str}/result", sync_to_thread=True)
    def result(self, app: AppParam, review: Review,
               trace_id: Annotated[str, Parameter(max_length=256)],
               job_id: Annotated[str | None, Parameter(max_length=64)] = None) -> Response[str]:
        """This reviewer's label beside the judge's call; without such a label, back to the question."""
        item = review_labels.item(review, app, trace_id, job_id)
        label = _own_label(review, item)
        if label is None:
            return Redirect(review_path(app), status_code=303)
        return html(page(f"review {app}: {item.trace_id}", result_view(item, label), _top(review, app)))


def _own_label(review: Review, item: Reviewable) -> Label | None:
    reviewer = review.session.reviewer
    if reviewer is None:
        return None
    return next((lab for lab in review_labels.labels(review, item.trace_id, item.job_id) if lab.reviewer == reviewer),
                None)


def _top(review: Review, app: str | None) -> str:
    return header(app, review.tenant, review.session.csrf, not review.services.settings.open_access)
