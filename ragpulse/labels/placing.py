"""Place a judged trace in the review design now: its draw, its stratum (the app's rate read from the rolling
monitor for `near_threshold`), and so its sample and inclusion probability."""

from __future__ import annotations

import redis

from ragpulse.config import defaults
from ragpulse.labels.design import Placement, ReviewDesign, draw
from ragpulse.labels.lookup import Judged
from ragpulse.model.labels import JudgeView
from ragpulse.monitoring.rolling import window_totals


def near_threshold(client: redis.Redis, tenant: str, app: str) -> bool:
    """True when the app's hallucination rate over the alert's window (15 min, at least 20 answered traces) is within
    defaults.REVIEW_NEAR_BAND of HallucinationRateSpike's threshold: whether it pages hinges on the judge."""
    totals = window_totals(client, tenant, app, defaults.REVIEW_NEAR_MINUTES)
    if totals["answered"] < defaults.REVIEW_NEAR_MIN_ANSWERED:
        return False
    rate = totals["hallucinated"] / totals["answered"]
    return abs(rate - defaults.REVIEW_ALERT_THRESHOLD) <= defaults.REVIEW_NEAR_BAND


def place(design: ReviewDesign, tenant: str, app: str, trace_id: str, view: JudgeView, disagreement: bool,
          near: bool) -> tuple[float, Placement]:
    """The trace's draw and placement, given whether its app is near its threshold now."""
    u = draw(tenant, app, trace_id)
    return u, design.place(u, design.stratum(disagreement, view.hallucinated, near))


def place_judged(client: redis.Redis, design: ReviewDesign, tenant: str, judged: Judged, view: JudgeView) -> Placement:
    """A labelled trace's placement."""
    near = near_threshold(client, tenant, judged.app)
    return place(design, tenant, judged.app, judged.ref.trace_id, view, judged.disagreement, near)[1]
