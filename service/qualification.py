"""/v1/judges: qualify a judge on the shipped suite (as an RQ job, priced first), follow the run, list the results."""

from __future__ import annotations

import datetime
import uuid
from typing import Annotated

from litestar import Controller, Response, get, post
from litestar.params import Parameter

from dispatch.qualification import enqueue_qualification
from ragpulse.exceptions import InvalidBody
from ragpulse.intake.decode import decode_body
from ragpulse.intake.estimate import estimate_batch
from ragpulse.judges import kinds
from ragpulse.model.trace import BatchOptions
from ragpulse.qualification import suite
from ragpulse.qualification.model import (QualificationJob, QualificationList, QualificationPriced,
                                           QualificationRequest)
from ragpulse.qualification.store import Qualifications
from service.context import Call

QualificationJobId = Annotated[str, Parameter(max_length=64, description=(
    "Job id answered by POST /v1/judges/qualify."))]


def qualifying_judge(named: str | None, call: Call) -> str:
    """The request's judge, else the service's default; 422 naming `$.judge` when it judges nothing."""
    judge = kinds.canonical(named or call.settings.default_judge)
    if judge not in kinds.judging_names():
        raise InvalidBody("the judge cannot be qualified", [{"path": "$.judge", "message": (
            f"{judge} judges nothing; name one of {', '.join(kinds.judging_names())}")}])
    return judge


class QualificationController(Controller):
    """Judge qualification; a tenant sees its own runs and results only (others get 404 or an empty list)."""

    path = "/v1/judges"
    tags = ["judges"]

    @post("/qualify", status_code=202, sync_to_thread=True, summary="Qualify a judge on the shipped suite")
    def qualify(self, body: bytes, call: Call) -> QualificationPriced | Response[QualificationPriced]:
        """Price judging the suite items (`split`, at most `limit`) with `judge`, then enqueue the run (202 with its
        `job_id`); `dry_run` true answers the estimate only (200). Suite text goes to the judge's provider, as trace
        text does. 422 naming `$.judge` for a judge that judges nothing or is not configured here."""
        request = decode_body(body, QualificationRequest)
        judge = qualifying_judge(request.judge, call)
        settings = call.settings
        items = suite.select(request.split, request.limit)
        estimate = estimate_batch([item.trace for item in items], BatchOptions(judge=judge),  # type: ignore[arg-type]
                                  kinds.model_for(judge, settings), settings.judge_prices)
        if request.dry_run:
            return Response(QualificationPriced(judge=judge, items=len(items), estimate=estimate, dry_run=True),
                            status_code=200)
        reason = kinds.unconfigured(judge, settings)
        if reason is not None:
            raise InvalidBody("the judge is not configured", [{"path": "$.judge", "message": reason}])
        job = QualificationJob(job_id=uuid.uuid4().hex, tenant=call.tenant, status="queued", judge=judge,
                               model=kinds.model_for(judge, settings) or "", split=request.split, items=len(items),
                               limit=request.limit, created_at=datetime.datetime.now(datetime.UTC))
        store = call.store
        with store.redis.pipeline(transaction=True) as pipe:
            Qualifications(store.redis, settings.result_ttl_seconds).save_job(job, pipe)
            enqueue_qualification(pipe, store.redis, settings, job.job_id)
            pipe.execute()
        return QualificationPriced(judge=judge, items=len(items), estimate=estimate, dry_run=False,
                                   job_id=job.job_id, status_url=f"/v1/judges/qualify/{job.job_id}")

    @get("/qualify/{job_id:str}", sync_to_thread=True, summary="A qualification run and its result")
    def run(self, job_id: QualificationJobId, call: Call) -> QualificationJob:
        """Status, then the result: figures overall, per split and per class, the verdict and the misses."""
        return Qualifications(call.store.redis, call.settings.result_ttl_seconds).job(job_id, call.tenant)

    @get("/qualifications", sync_to_thread=True, summary="The latest qualification of each judge configuration")
    def qualifications(self, call: Call) -> QualificationList:
        """The calling tenant's newest result per judge, model and prompt version, newest first."""
        return QualificationList(items=Qualifications(call.store.redis,
                                                      call.settings.result_ttl_seconds).latest(call.tenant))
