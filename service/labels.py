"""The review loop's API: POST /v1/labels, GET /v1/labels, GET /v1/apps/{app}/review and /agreement."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get, post, route
from litestar.enums import HttpMethod
from litestar.params import Parameter

from ragpulse.config import defaults
from ragpulse.intake.decode import decode_body
from ragpulse.model.labels import AppAgreement, Label, LabelRequest, ReviewQueue, TraceLabels
from service.context import Call
from service.monitoring import AppName
from service.traces import TraceIdParam

JobIdParam = Annotated[str | None, Parameter(
    max_length=64, pattern=r"^[A-Za-z0-9_-]+$", description="The batch job holding the trace; absent for an online trace.")]
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
    def read(self, call: Call, trace_id: TraceIdParam, job_id: JobIdParam = None) -> TraceLabels:
        """Every reviewer's label of the trace, their majority call, and the inter-annotator agreement of its
        reviewers over the app's traces they all labelled within RAGPULSE_AGREEMENT_WINDOW_DAYS: Cohen's kappa for
        two reviewers, Fleiss' kappa for three or more."""
        return call.services.reviews.of_trace(call.tenant, trace_id, job_id)

    @route("/", http_method=HttpMethod.OPTIONS, include_in_schema=False, sync_to_thread=False)
    def allowed_methods(self) -> Response[None]:
        """Lists every handler's method: Litestar's automatic OPTIONS answer would list only the first's. Named to
        sort first: a controller registers its handlers in name order, and only a first OPTIONS handler prevents the
        automatic one."""
        return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS, POST"})


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

    @get("/agreement", sync_to_thread=True, summary="How far the app's judges agree with human labels")
    def agreement(self, app: AppName, call: Call) -> AppAgreement:
        """Per judge and prompt version, over the labels of the last RAGPULSE_AGREEMENT_WINDOW_DAYS: sensitivity
        (share of human-labelled hallucinations the judge flags), specificity and kappa, each with an interval, from
        the labelled traces weighted by 1 / their inclusion probability; the number of labels, the oldest and newest,
        and the reviewers' agreement with each other. A trace with several reviewers counts once, with their majority;
        ties are left out (`disputed`), as are traces the review design did not pick (`ad_hoc`)."""
        return call.services.reviews.agreement(call.tenant, app)
