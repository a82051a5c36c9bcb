"""The review sampling design: which judged traces a person should label, each with a known inclusion probability.

Every judged trace gets a draw u in [0, 1) from a hash of (tenant, app, trace id): deterministic, independent of
its content, uniform over traces. It is in the review sample when u < pi, where

    pi = q + (1 - q) x r(stratum),

q is RAGPULSE_REVIEW_SAMPLE_RATE and r the targeted rate of the trace's stratum (defaults.REVIEW_TARGETED_RATES:
a repeat-judge disagreement, a judged hallucination, or any trace of an app whose hallucination rate is near its
alert threshold; 0 for none). u < q is the uniform estimation pool (sample `uniform`): a Bernoulli(q) sample of all
judged traces, whatever their content. q <= u < pi is a targeted pick (sample `targeted`). So each trace's chance of
being picked is exactly pi, and weighting labels by 1 / pi (Horvitz-Thompson) estimates figures over every judged
trace; the uniform labels alone need no weights.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from ragpulse.config import defaults
from ragpulse.model.labels import ReviewReason, SampleKind

Stratum = Literal["disagreement", "hallucinated", "near_threshold"]
STRATA: tuple[Stratum, ...] = ("disagreement", "hallucinated", "near_threshold")
"""In order of precedence: a trace belongs to the first that applies."""


def draw(tenant: str, app: str, trace_id: str) -> float:
    """u in [0, 1): the first 8 bytes of SHA-256 over the length-prefixed tenant and app and the trace id."""
    digest = hashlib.sha256(f"{len(tenant)}:{tenant}:{len(app)}:{app}:{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


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
