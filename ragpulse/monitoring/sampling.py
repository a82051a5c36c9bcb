"""Sampling policy per app: which production traces the judge sees, and the cheap checks every trace gets."""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ragpulse.model.results import BY_RULE
from ragpulse.model.trace import AppName, Base, Trace

NEGATIVE_FEEDBACK = frozenset({"negative", "thumbs_down", "down", "bad", "-1"})
"""Values of `metadata.feedback` that count as negative user feedback."""


class AlwaysJudge(Base):
    """Rules that send a trace to the judge whatever the sample rate."""

    negative_feedback: bool = True
    """`metadata.feedback` is negative (negative, thumbs_down, down, bad, or a number below 0)."""
    cited_not_retrieved: bool = True
    """The answer cites a document that was not retrieved."""
    top_score_below: float | None = None
    """The best retrieval score is below this threshold (a likely retrieval miss)."""
    injection_docs: bool = True
    """A retrieved document carries instructions aimed at the model: the judge says whether the answer obeyed."""


SampleBy = Literal["session", "trace"]
"""What the sample draws: whole conversations (`session`: a trace with a `session_id` is sampled by a hash of its app
and session, so a session sampled at its first turn keeps all its turns and session metrics are unbiased; a trace
without one by its trace id) or single traces (`trace`: every trace by its trace id, turns of one session drawn
apart)."""


class SamplingPolicy(Base):
    """How much of an app's production traffic is judged. Traces not sampled are counted, not judged."""

    sample_rate: Annotated[float, Meta(ge=0.0, le=1.0)] = 1.0
    """Share of traces (or of sessions, see `sample_by`) judged, chosen deterministically by a hash of trace_id (of app
    and session_id) so a retried post samples alike."""
    sample_by: SampleBy = "session"
    """`session` (default): a trace with a `session_id` is sampled with its whole session (a hash of app and
    session_id decides, the same for every turn); a trace without one by its trace_id. `trace`: each trace by its
    trace_id. The always-judge rules add single turns either way."""
    always_judge: AlwaysJudge = msgspec.field(default_factory=AlwaysJudge)
    max_source_age_days: Annotated[float, Meta(gt=0, le=36_500)] | None = None
    """Retrieved documents whose `updated_at` is older than this are stale (security.stale_docs); unset: no check."""
    review_sample_rate: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    """Share q of judged traces (by content) drawn into the uniform review pool, the sample the judge's error is
    measured on; unset: RAGPULSE_REVIEW_SAMPLE_RATE. Each judged trace keeps the q in force when it was judged, so a
    change applies to traces judged afterwards and earlier inclusion probabilities stay true."""

    judge: Literal["heuristic", "none"] | None = None
    """The app's judge of its production traces instead of the service's (RAGPULSE_JUDGE): `heuristic` opts the app in
    to the offline heuristic (unmeasured on its data: labelled everywhere, never pages), `none` judges nothing; unset:
    the service's judge."""

    def review_share(self, default: float) -> float:
        """q for traces judged under this policy."""
        return default if self.review_sample_rate is None else self.review_sample_rate


PolicySource = Literal["stored", "RAGPULSE_SAMPLE_RATE", "RAGPULSE_REVIEW_SAMPLE_RATE", "RAGPULSE_JUDGE", "default"]
"""Where a value in force comes from: the app's stored policy, the service setting (the sample rate of apps without a
stored policy), or ragpulse's built-in default."""


class AlwaysJudgeInForce(AlwaysJudge, omit_defaults=False):
    """Every always-judge rule with its value, the ones on by default included."""


class PolicyInForce(SamplingPolicy, kw_only=True, omit_defaults=False):
    """The sampling policy in force for an app: every rule, defaults included, and where each value came from."""

    always_judge: AlwaysJudgeInForce = msgspec.field(default_factory=AlwaysJudgeInForce)
    app: str
    stored: bool
    """True when the app has a stored policy (PUT); otherwise the service default is in force."""
    sources: dict[str, PolicySource] = {}
    """For `sample_rate`, each `always_judge.<rule>`, `max_source_age_days` and `review_sample_rate`: `stored`,
    `RAGPULSE_SAMPLE_RATE`, `RAGPULSE_REVIEW_SAMPLE_RATE` or `default`."""


class PolicyUpdate(SamplingPolicy, kw_only=True):
    """Body of PUT /v1/apps/{app}/policy: the policy to store. The fields GET answers beside it (`app`, `stored`,
    `sources`) describe the policy in force, not a wish: they are accepted and ignored, so a GET body can be PUT back
    as it is, to its own app or to another (the path names the app)."""

    app: AppName | None = None
    stored: bool | None = None
    sources: Annotated[dict[str, PolicySource], Meta(max_length=64)] | None = None

    def policy(self) -> SamplingPolicy:
        """The policy itself, without the fields GET describes it with. A review share GET filled in from
        RAGPULSE_REVIEW_SAMPLE_RATE stays unset: putting a GET body back must not pin the app to today's default."""
        fields = {name: getattr(self, name) for name in SamplingPolicy.__struct_fields__}
        if (self.sources or {}).get("review_sample_rate") == "RAGPULSE_REVIEW_SAMPLE_RATE":
            fields["review_sample_rate"] = None
        return SamplingPolicy(**fields)


def policy_in_force(app: str, stored: SamplingPolicy | None, default_rate: float,
                    review_rate: float | None = None) -> PolicyInForce:
    """The effective policy of `app`: its stored policy, else the service default rate with the built-in rules;
    `review_rate` (RAGPULSE_REVIEW_SAMPLE_RATE) fills an unset `review_sample_rate`.

    A rule counts as `stored` when the stored policy gives it a value other than the built-in default.
    """
    policy = stored or SamplingPolicy(sample_rate=default_rate)
    builtin = AlwaysJudge()
    sources: dict[str, PolicySource] = {"sample_rate": "stored" if stored else "RAGPULSE_SAMPLE_RATE"}
    for rule in msgspec.structs.fields(AlwaysJudge):
        value = getattr(policy.always_judge, rule.name)
        differs = stored is not None and value != getattr(builtin, rule.name)
        sources[f"always_judge.{rule.name}"] = "stored" if differs else "default"
    sources["max_source_age_days"] = "stored" if policy.max_source_age_days is not None else "default"
    sources["sample_by"] = "stored" if stored is not None and policy.sample_by != "session" else "default"
    sources["review_sample_rate"] = ("stored" if policy.review_sample_rate is not None
                                     else "RAGPULSE_REVIEW_SAMPLE_RATE")
    sources["judge"] = "stored" if policy.judge is not None else "RAGPULSE_JUDGE"
    review = policy.review_sample_rate if policy.review_sample_rate is not None else review_rate
    return PolicyInForce(app=app, stored=stored is not None, sample_rate=policy.sample_rate, sample_by=policy.sample_by,
                         always_judge=AlwaysJudgeInForce(**msgspec.structs.asdict(policy.always_judge)),
                         max_source_age_days=policy.max_source_age_days, review_sample_rate=review, judge=policy.judge,
                         sources=sources)


def hash_fraction(trace_id: str) -> float:
    """A uniform number in [0, 1) fixed by the trace id."""
    return int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big") / 2**64


def sample_key(trace: Trace, policy: SamplingPolicy) -> str:
    """What the sample hashes: `app:session_id` for a turn of a session under `sample_by: session` (app names hold no
    `:`, so no two apps' sessions collide), else the trace id."""
    if policy.sample_by == "session" and trace.session_id is not None:
        return f"{trace.app}:{trace.session_id}"
    return trace.trace_id or ""


def cheap_checks(trace: Trace, policy: SamplingPolicy) -> list[str]:
    """Programmatic checks run on every trace, judged or not."""
    flags = []
    if trace.citations:
        retrieved = {doc.id for doc in trace.retrieved_docs}
        if any(doc_id not in retrieved for doc_id in trace.citations):
            flags.append("cited_not_retrieved")
    if not trace.retrieved_docs:
        flags.append("no_retrieved_docs")
    if not (trace.answer or "").strip():
        flags.append("empty_answer")
    if _negative_feedback(trace):
        flags.append("negative_feedback")
    threshold = policy.always_judge.top_score_below
    if threshold is not None:
        scores = [doc.score for doc in trace.retrieved_docs if doc.score is not None]
        if scores and max(scores) < threshold:
            flags.append("low_top_score")
    return flags


def sampling_decision(trace: Trace, policy: SamplingPolicy, checks: list[str]) -> tuple[bool, str]:
    """(judge it?, why): the deterministic sample first, so that `sampled` means in the uniform sample (the traces
    the production rates are measured on), then an always-judge rule (`always:<check>`)."""
    if hash_fraction(sample_key(trace, policy)) < policy.sample_rate:
        return True, "sampled"
    rules = policy.always_judge
    forced = {"negative_feedback": rules.negative_feedback, "cited_not_retrieved": rules.cited_not_retrieved,
              "low_top_score": rules.top_score_below is not None}
    for check in checks:
        if forced.get(check):
            return True, f"{BY_RULE}{check}"
    return False, "not_sampled"


def _negative_feedback(trace: Trace) -> bool:
    value = (trace.metadata or {}).get("feedback")
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return value < 0
    return str(value).strip().lower() in NEGATIVE_FEEDBACK


def judge_for_injection(sampled: bool, reason: str, policy_judges_injection: bool,
                        has_injection_docs: bool) -> tuple[bool, str]:
    """The sampling decision once the security checks ran: a trace with injection documents is judged whatever the
    sample (always_judge.injection_docs), so the judge can say whether the answer obeyed them."""
    if not sampled and policy_judges_injection and has_injection_docs:
        return True, f"{BY_RULE}injection_docs"
    return sampled, reason
