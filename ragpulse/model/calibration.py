"""Calibration of a judge against human labels: the request (POST /v1/calibrations) and the stored result."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from ragpulse.model.verdicts import Verdict
from ragpulse.model.estimate import BOOTSTRAP_METHOD
from ragpulse.model.trace import Base, JobId, TraceId


class ClaimLabel(Base):
    """A human verdict for one claim, by its position in the judge's claim list."""

    index: Annotated[int, Meta(ge=0)]
    verdict: Verdict


class TraceLabel(Base):
    """A human label for one trace: is the answer faithful to the retrieved context?"""

    trace_id: TraceId
    faithful: bool
    claims: list[ClaimLabel] | None = None


class CalibrationRequest(Base):
    """Body of POST /v1/calibrations."""

    job_id: JobId
    """Bounded like every id: an unbounded one was looked up in Redis and echoed whole in the 404 (1 MB sent back)."""
    labels: Annotated[list[TraceLabel], Meta(min_length=1, max_length=10_000)]


class Agreement(msgspec.Struct, kw_only=True):
    """Agreement between judge and humans on one question."""

    n: int
    accuracy: float
    kappa: float
    kappa_ci95: tuple[float, float]
    ci_method: str = BOOTSTRAP_METHOD


class Calibration(msgspec.Struct, kw_only=True):
    """Stored with the job and shown in its report."""

    job_id: str
    judge: str | None
    traces: Agreement | None
    claims: Agreement | None
    unmatched_trace_ids: list[str]
    warning: str | None
