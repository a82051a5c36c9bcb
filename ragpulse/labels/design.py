"""The review sampling design: which judged traces a person should label, each with a known inclusion probability.

The unit of the design is the content that was judged (TraceResult.content_key: app, query, history, documents,
answer), not the trace: the same item re-run in six jobs is one review slot. Every judged content gets a draw u in
[0, 1) from a hash of (tenant, app, content key): deterministic, independent of what the content says, uniform over
contents, and the same in every job it appears in. It is in the review sample when u < pi, where

    pi = q + (1 - q) x r(stratum),

q is the app's review share (its policy's review_sample_rate, else RAGPULSE_REVIEW_SAMPLE_RATE) in force when the
content was first judged, stored with it and with each judged trace (TraceResult.review_share), so changing the
share applies to what is judged afterwards and never rewrites an earlier inclusion probability; r is the targeted
rate of the trace's stratum (defaults.REVIEW_TARGETED_RATES:
a repeat-judge disagreement, a judged hallucination, or any trace of an app whose hallucination rate is near its
alert threshold; 0 for none). u < q is the uniform estimation pool (sample `uniform`): a Bernoulli(q) sample of all
judged contents, whatever they say; a label of a content in it counts in the estimation sample whichever way the
reviewer came to it. q <= u < pi is a targeted pick (sample `targeted`). So each trace's chance of
being picked is exactly pi, and weighting labels by 1 / pi (Horvitz-Thompson) estimates figures over every judged
trace; the uniform labels alone need no weights.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from ragpulse.config import defaults
from ragpulse.model.labels import ReviewReason, SampleKind
from ragpulse.model.results import TraceResult

Stratum = Literal["disagreement", "hallucinated", "near_threshold"]
STRATA: tuple[Stratum, ...] = ("disagreement", "hallucinated", "near_threshold")
"""In order of precedence: a trace belongs to the first that applies."""


def draw(tenant: str, app: str, key: str) -> float:
    """u in [0, 1): the first 8 bytes of SHA-256 over the length-prefixed tenant and app and the content key."""
    digest = hashlib.sha256(f"{len(tenant)}:{tenant}:{len(app)}:{app}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def stamp(result: TraceResult, tenant: str, share: float) -> None:
    """Record on a judged result the share q in force and its content's draw u (nothing on an unjudged one)."""
    if result.generation is not None:
        result.review_share = share
        result.review_draw = draw(tenant, result.app, content_of(result))


def content_of(result: TraceResult) -> str:
    """The result's content key; a result stored without one stands for itself (its job and trace id)."""
    return result.content_key or f"trace:{result.index}:{result.trace_id}"


@dataclass(frozen=True)
class Placement:
    """Where a trace stands in the design."""

    sample: SampleKind
    reason: ReviewReason | None
    """`uniform`, the stratum of a targeted pick, or None when not picked."""
    inclusion_probability: float | None
    """pi, or None when not picked (`ad_hoc`)."""
    uniform_probability: float | None = None
    """q, for a trace of the uniform pool."""


@dataclass(frozen=True)
class ReviewDesign:
    """q and the targeted rates; `place` decides a trace's sample."""

    q: float = defaults.REVIEW_SAMPLE_RATE
    rates: tuple[tuple[Stratum, float], ...] = tuple(defaults.REVIEW_TARGETED_RATES.items())

    def stratum(self, disagreement: bool, hallucinated: bool, near_threshold: bool) -> Stratum | None:
        """The first stratum that applies to a judged trace, or None."""
        applies = {"disagreement": disagreement, "hallucinated": hallucinated, "near_threshold": near_threshold}
        return next((s for s in STRATA if applies[s]), None)

    def probability(self, stratum: Stratum | None) -> float:
        """pi = q + (1 - q) x r(stratum)."""
        rate = dict(self.rates).get(stratum, 0.0) if stratum else 0.0
        return self.q + (1 - self.q) * rate

    def place(self, u: float, stratum: Stratum | None) -> Placement:
        """The sample of a trace with draw `u` in `stratum`."""
        pi = self.probability(stratum)
        if u < self.q:
            return Placement("uniform", "uniform", pi, self.q)
        if u < pi:
            return Placement("targeted", stratum, pi)
        return Placement("ad_hoc", None, None)

    def can_pick(self, u: float, disagreement: bool, hallucinated: bool) -> bool:
        """Whether the design may ever pick this trace (its app may come near its threshold later): only those are
        indexed for the queue and keep their text."""
        applies = [s for s, on in zip(STRATA, (disagreement, hallucinated, True), strict=True) if on]
        return u < max(self.probability(s) for s in applies)
