"""Rolling windows per app and environment: per-minute counts in Redis, summed on read into a monitor view.

Each environment has buckets of its own, so evaluation runs never move the production monitor."""

from __future__ import annotations

import time
from typing import Any

import redis

from ragpulse.config import defaults, keys
from ragpulse.store.atomic import WriteQueue
from ragpulse.metrics.registry import GENERATION_BY_NAME
from ragpulse.model.results import TraceResult, judged_by_rule
from ragpulse.metrics.stats import wilson_interval
from ragpulse.model.estimate import WILSON_METHOD

WINDOWS = {"5m": 5, "1h": 60, "24h": 1440}
"""Window name -> minutes."""
BUCKET_TTL_SECONDS = 25 * 3600
"""A minute bucket outlives the longest window by an hour."""
FIELDS = ("judged", "answered", "hallucinated", "unanswerable", "unanswerable_hallucinated", "abstained",
          "judge_errors", "faithfulness_sum", "faithfulness_n", "sampled", "not_sampled", "received", "processed",
          "judged_by_rule")
"""`received` counts traces the API accepted (online posts and batches), `processed` traces whose result a worker
stored and counted: a window where received outruns processed shows a lagging pipeline. `judged_by_rule` counts the
judged traces outside the uniform sample (an always-judge rule picked them), which no rate counts."""
HALLUCINATION_RATE = GENERATION_BY_NAME["hallucination_rate"]
"""The report's metric: hallucinated among judged traces that made claims. `answered` counts its population."""


def minute(now: float | None = None) -> int:
    """Minutes since the epoch."""
    return int((now if now is not None else time.time()) // 60)


def bucket_increments(result: TraceResult) -> dict[str, float]:
    """What one trace result adds to its minute bucket."""
    inc: dict[str, float] = {"processed": 1}
    if result.sampled is not None:
        inc["sampled" if result.sampled else "not_sampled"] = 1
    if result.status == "judge_error":
        inc["judge_errors"] = 1
    g = result.generation
    if g is None:
        return inc
    # `answered` is written even at 0: a minute of abstentions only must not read as a bucket from before the
    # field existed, which _legacy would give judged traces as its denominator.
    if judged_by_rule(result.sample_reason) is not None:   # out of the rates: see model.results.judged_by_rule
        inc.update(judged=1, judged_by_rule=1, answered=0)
        return inc
    inc.update(judged=1, abstained=float(g.abstained), answered=0)
    hallucinated = HALLUCINATION_RATE.per_trace(result)
    if hallucinated is not None:
        inc.update(answered=1, hallucinated=hallucinated)
    if g.unanswerable:
        inc.update(unanswerable=1, unanswerable_hallucinated=float(bool(g.unanswerable_hallucination)))
    if g.faithfulness is not None:
        inc.update(faithfulness_sum=g.faithfulness, faithfulness_n=1)
    return inc


def queue_bucket(pipe: WriteQueue, tenant: str, result: TraceResult, at: float | None = None) -> None:
    """Add one result's counts to the current minute of its app, in its environment."""
    key = keys.monitor_bucket(tenant, result.app, minute(at), result.environment)
    for name, value in bucket_increments(result).items():
        pipe.hincrbyfloat(key, name, value)
    pipe.expire(key, BUCKET_TTL_SECONDS)


def queue_received(pipe: WriteQueue, tenant: str, app: str, environment: str, count: int,
                   at: float | None = None) -> None:
    """Count `count` traces of `app` in `environment` accepted by the API in the current minute."""
    key = keys.monitor_bucket(tenant, app, minute(at), environment)
    pipe.hincrbyfloat(key, "received", count)
    pipe.expire(key, BUCKET_TTL_SECONDS)


def window_totals(client: redis.Redis, tenant: str, app: str, minutes: int, now: float | None = None,
                  environment: str = defaults.MONITORED_ENVIRONMENT) -> dict:
    """Sums of every field over the last `minutes` minute buckets of one environment (the current one included)."""
    last = minute(now)
    with client.pipeline(transaction=False) as pipe:
        for m in range(last - minutes + 1, last + 1):
            pipe.hmget(keys.monitor_bucket(tenant, app, m, environment), FIELDS)
        rows = [_legacy(row) for row in pipe.execute()]
    return {name: sum(float(row[i] or 0) for row in rows) for i, name in enumerate(FIELDS)}


def _legacy(row: list) -> list:
    """A minute bucket written before `answered` existed (it expires within 25 hours) keeps its old denominator,
    judged traces, so that no window counts more hallucinated traces than answered ones."""
    answered, judged = FIELDS.index("answered"), FIELDS.index("judged")
    if row[answered] is None and row[judged] is not None:
        return [row[judged] if i == answered else value for i, value in enumerate(row)]
    return row


def monitor_view(totals: dict[str, float], app: str, window: str, sample_rate: float,
                 environment: str = defaults.MONITORED_ENVIRONMENT) -> dict[str, Any]:
    """Rates with Wilson 95% intervals; a rate over zero traces is null, never 0.

    hallucination_rate is the report's: hallucinated among judged traces that made claims (`answered`);
    abstentions and other claim-less answers are out of it, as in Prometheus' hallucinated / answered. Every rate is
    the uniform sample's: `judged` includes the `judged_by_rule` traces an always-judge rule picked, no rate does.
    """
    judged, by_rule = int(totals["judged"]), int(totals["judged_by_rule"])
    return {
        "app": app, "environment": environment, "window": window, "traces_received": int(totals["received"]),
        "traces_processed": int(totals["processed"]), "judged": judged, "judged_by_rule": by_rule,
        "answered": int(totals["answered"]),
        "sample_rate": sample_rate, "sampled": int(totals["sampled"]), "not_sampled": int(totals["not_sampled"]),
        "hallucination_rate": _rate(totals["hallucinated"], totals["answered"]),
        "unanswerable_hallucination_rate": _rate(totals["unanswerable_hallucinated"], totals["unanswerable"]),
        "mean_faithfulness": totals["faithfulness_sum"] / totals["faithfulness_n"] if totals["faithfulness_n"] else None,
        "abstention_rate": _rate(totals["abstained"], judged - by_rule),
        "judge_error_rate": _rate(totals["judge_errors"], judged + totals["judge_errors"]),
        "ci_method": WILSON_METHOD,
    }


def _rate(hits: float, n: float) -> dict[str, Any] | None:
    n = int(n)
    if n == 0:
        return None
    return {"rate": hits / n, "n": n, "ci95": wilson_interval(round(hits), n)}
