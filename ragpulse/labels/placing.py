"""Place a judged trace in the review design now: its content's draw and share as first judged, its stratum (the
app's rate read from the rolling monitor for `near_threshold`), and so its sample and inclusion probability.

The share is never the one in force now: a content keeps the q it was first judged under (labels.design), so a
label of a content in the uniform pool counts in the estimation sample whatever brought the reviewer to it, and
raising the share later leaves earlier inclusion probabilities as they were."""

from __future__ import annotations

import redis

from ragpulse.config import defaults, keys
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


def first_judged(client: redis.Redis, tenant: str, app: str, content: str, share: float) -> tuple[ReviewDesign, float]:
    """The design (q) and draw u of a content as first judged; `share` (and the hash draw) where none is stored."""
    q, u = client.hmget(keys.review_content(tenant, app, content), "q", "u")
    return (ReviewDesign(q=float(q) if q is not None else share),
            float(u) if u is not None else draw(tenant, app, content))


def place(design: ReviewDesign, u: float, view: JudgeView, disagreement: bool, near: bool) -> Placement:
    """The placement of a content with draw `u`, given whether its app is near its threshold now."""
    return design.place(u, design.stratum(disagreement, view.hallucinated, near))


def place_judged(client: redis.Redis, default_share: float, tenant: str, judged: Judged, view: JudgeView,
                 near: bool | None = None) -> Placement:
    """A labelled trace's placement: its content's, as first judged (`default_share` for a trace judged with none)."""
    share = default_share if judged.share is None else judged.share
    design, u = first_judged(client, tenant, judged.app, judged.content, share)
    near = near_threshold(client, tenant, judged.app) if near is None else near
    return place(design, u, view, judged.disagreement, near)
