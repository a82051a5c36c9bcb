"""The review loop's API: POST /v1/labels, GET /v1/labels, GET /v1/apps/{app}/review and /agreement."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.params import Parameter

from ragpulse.config import defaults
from ragpulse.intake.decode import decode_body
from ragpulse.model.labels import Label, LabelRequest, ReviewQueue, TraceLabels
from service.context import Call
from service.monitoring import AppName
from service.traces import TraceIdParam

JobIdParam = Annotated[str | None, Parameter(max_length=64, pattern=r"^[A-Za-z0-9_-]+$",
                                             description="The batch job holding the trace; absent for an online trace.")]
ReviewerParam = Annotated[str | None, Parameter(
    pattern=r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$",
    description="Leave out the traces this reviewer labelled (others' labels do not hide a trace).")]


class LabelController(Controller):
    """Human labels of judged traces (online or batch), several reviewers per trace."""

    path = "/v1/labels"
    tags = ["labels"]

    @post("/", status_code=201, sync_to_thread=True, summary="Label a judged trace")
    def create(self, body: bytes, call: Call) -> Label:
        """Store one reviewer's label of a judged trace of the tenant (`job_id` for a batch trace, null for an online
        one); the same reviewer labelling the trace again replaces their label (`replaced: true`). The stored label
        carries the judge's call beside the reviewer's, and the trace's sample in the review design with its
        inclusion probability.

        404 when the trace or job is not the tenant's (or has expired); 422 naming `$.trace_id` when the trace has
        no judge verdict; 422 naming each failing field otherwise."""
        return call.services.reviews.label(call.tenant, decode_body(body, LabelRequest))

    @get("/", sync_to_thread=True, summary="A trace's labels and the reviewers' agreement")
    def list(self, call: Call, trace_id: TraceIdParam, job_id: JobIdParam = None) -> TraceLabels:
        """Every reviewer's label of the trace, their majority call, and the inter-annotator agreement of its
        reviewers over the app's traces they all labelled within RAGPULSE_AGREEMENT_WINDOW_DAYS: Cohen's kappa for
        two reviewers, Fleiss' kappa for three or more."""
        return call.services.reviews.of_trace(call.tenant, trace_id, job_id)


class ReviewController(Controller):
    """What to label next, per app."""

    path = "/v1/apps/{app:str}"
    tags = ["labels"]

    @get("/review", sync_to_thread=True, summary="The next traces of the app to label")
    def review(self, app: AppName, call: Call,
               n: Annotated[int, Parameter(ge=1, le=defaults.REVIEW_QUEUE_MAX, description="Items (1-50).")] = 10,
               reviewer: ReviewerParam = None) -> ReviewQueue:
        """Judged traces to label, each with why it is served (`uniform`: the estimation sample; `hallucinated`,
        `disagreement`, `near_threshold`: targeted picks) and its inclusion probability. The uniform sample comes
        first until it has 30 labels, then the two alternate. The judge's verdicts are in `judge`: show them only
        after the reviewer answered."""
        return call.services.reviews.queue(call.tenant, app, n, reviewer)
