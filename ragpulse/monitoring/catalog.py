"""Every ragpulse_* quality metric, in one place: name, kind, help, labels, buckets.

Counters are written by any process (API, workers, RQ work-horses, on any machine) into one Redis hash and
exposed by the API's /metrics, so one scrape target sees everything and forked work-horses lose nothing.
Label values come from small fixed sets; `app` is limited to the configured apps plus `other`.
"""

from __future__ import annotations

from dataclasses import dataclass

FAITHFULNESS_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
JOB_DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)


@dataclass(frozen=True)
class MetricDef:
    """One metric family. Counter names omit `_total`; the exposition adds it."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()


TRACES_RECEIVED = MetricDef("ragpulse_traces_received", "counter", "Traces posted to the API.", ("app",))
TRACES_SAMPLED = MetricDef("ragpulse_traces_sampled", "counter", "Traces selected for judging.", ("app",))
TRACES_NOT_SAMPLED = MetricDef("ragpulse_traces_not_sampled", "counter",
                               "Traces left unjudged by the sampling policy (counted, not judged).", ("app",))
TRACES_JUDGED = MetricDef("ragpulse_traces_judged", "counter", "Traces with a judge verdict.", ("app", "judge"))
TRACES_HALLUCINATED = MetricDef("ragpulse_traces_hallucinated", "counter",
                                "Judged traces with at least one unsupported or contradicted claim.", ("app", "judge"))
CLAIMS = MetricDef("ragpulse_claims", "counter", "Judged claims by verdict.", ("app", "verdict"))
FAITHFULNESS = MetricDef("ragpulse_faithfulness", "histogram", "Faithfulness of judged traces that made claims.",
                         ("app",), FAITHFULNESS_BUCKETS)
UNANSWERABLE = MetricDef("ragpulse_unanswerable_traces", "counter",
                         "Judged traces labelled unanswerable, or unlabelled and judged not answerable from their context.", ("app",))
UNANSWERABLE_HALLUCINATIONS = MetricDef("ragpulse_unanswerable_hallucinations", "counter",
                                        "Unanswerable traces whose answer did not abstain and asserted something unsupported.", ("app",))
ABSTENTIONS = MetricDef("ragpulse_abstentions", "counter", "Judged traces whose answer abstained.", ("app",))
JUDGE_ERRORS = MetricDef("ragpulse_judge_errors", "counter", "Traces that ended as judge_error.", ("app",))
CHECKS = MetricDef("ragpulse_checks_failed", "counter", "Cheap programmatic checks that flagged a trace.",
                   ("app", "check"))
JUDGE_REQUESTS = MetricDef("ragpulse_judge_requests", "counter", "Judge HTTP requests by outcome.",
                           ("model", "status"))
JUDGE_LATENCY = MetricDef("ragpulse_judge_latency_seconds", "histogram", "Judge request latency.", ("model",),
                          LATENCY_BUCKETS)
JUDGE_TOKENS = MetricDef("ragpulse_judge_tokens", "counter",
                         "Judge tokens by direction: input (uncached), output, cache_read, cache_write.",
                         ("model", "direction"))
JUDGE_COST = MetricDef("ragpulse_judge_cost_usd", "counter", "Judge cost in US dollars.", ("model",))
RATELIMIT_WAIT = MetricDef("ragpulse_ratelimit_wait_seconds", "counter",
                           "Seconds judge calls waited for the shared rate limit.", ("model",))
JOB_DURATION = MetricDef("ragpulse_job_duration_seconds", "histogram", "Seconds from a job's creation to its report.",
                         ("queue",), JOB_DURATION_BUCKETS)

ALL = (TRACES_RECEIVED, TRACES_SAMPLED, TRACES_NOT_SAMPLED, TRACES_JUDGED, TRACES_HALLUCINATED, CLAIMS,
       FAITHFULNESS, UNANSWERABLE, UNANSWERABLE_HALLUCINATIONS, ABSTENTIONS, JUDGE_ERRORS, CHECKS, JUDGE_REQUESTS,
       JUDGE_LATENCY, JUDGE_TOKENS, JUDGE_COST, RATELIMIT_WAIT, JOB_DURATION)
BY_NAME = {m.name: m for m in ALL}
