"""POST /v1/calibrations: human labels for a job's traces -> judge accuracy and Cohen's kappa."""

from __future__ import annotations

import msgspec
from litestar import Controller, post

from ragpulse.judges.calibration import calibrate, check_labels
from ragpulse.model.calibration import Calibration, CalibrationRequest
from ragpulse.model.results import ENDED_WITH_REPORT
from ragpulse.exceptions import Conflict
from ragpulse.intake.decode import decode_body
from service.context import Call


class CalibrationController(Controller):
    """Judge calibration against hand labels; the result is stored and shown in the job's report."""

    path = "/v1/calibrations"
    tags = ["calibration"]

    @post("/", status_code=201, sync_to_thread=True, summary="Calibrate a job's judge against human labels")
    def create(self, body: bytes, call: Call) -> Calibration:
        """Accuracy and Cohen's kappa (with a 95% interval) between the judge and humans; a warning below 0.6.

        422 naming each `$.labels[i].trace_id` when no label matches a judged trace of the job, the second label
        of a trace labelled twice, and each `$.labels[i].claims[j].index` given twice in a label or past the end of
        the judge's claims; the stored calibration is then left as it was. 409 naming `$.job_id` while the job is
        queued or running, or when it failed. The labels that match are also stored in the label store (reviewer
        `calibration`, replacing the previous calibration's), where they count in the app's judge agreement."""
        store, tenant = call.store, call.tenant
        request = decode_body(body, CalibrationRequest)
        check_labels(request)
        job = store.job(request.job_id, tenant)
        if job.status not in ENDED_WITH_REPORT:
            what = "ended without results" if job.status == "failed" else "has not finished"
            raise Conflict(f"job {request.job_id} is {job.status}; calibrate a finished job",
                           [{"path": "$.job_id", "message": f"job {what}"}])
        results = store.results.all(request.job_id)
        calibration = calibrate(request.job_id, request, results)
        store.results.save_calibration(request.job_id, msgspec.json.encode(calibration))
        call.services.reviews.calibrate(tenant, request, results)
        return calibration
