"""Environments: where a trace was produced, and which of them the production monitor and alerts count.

Every trace and job carries one. POST /v1/traces and OTLP default to `production`, batches to `evaluation`, so an
eval run of an app's test set never moves that app's production monitor, series or alerts; `staging` is for a
pre-production deployment that sends its own traffic. The set is small and fixed because it labels Prometheus series.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from msgspec import Meta

from ragpulse.config import defaults

Environment = Literal["production", "staging", "evaluation"]
"""Where a trace was produced. Only `production` traces reach the monitor (/v1/monitor/{app} unless asked for another),
the series the alert rules read and the alerts; the others are counted under their own `environment` label."""
ENVIRONMENTS: tuple[str, ...] = get_args(Environment)
"""Every value of the `environment` label."""
TraceEnvironment = Annotated[Environment, Meta(description=(
    "Where the trace was produced: production, staging or evaluation. Absent: production on POST /v1/traces, the "
    "batch's options.environment in a batch, where naming another environment is refused. Only production traces "
    "count in the app's monitor, its production series and the alerts."))]
JobEnvironment = Annotated[Environment, Meta(description=(
    "Where the batch's traces were produced, for the job and every trace in it: evaluation (the default), staging, "
    "or production for a replay of production traffic that never reached POST /v1/traces. Only a production job's "
    "traces count in the app's monitor, its production series and the alerts."))]
StoredEnvironment = Annotated[Environment, Meta(description=(
    "Where the traces were produced: production, staging or evaluation. Only production counts in the app's monitor, "
    "its production series and the alerts."))]


def environment_of(environment: str | None) -> str:
    """A stored trace's environment: absent only on traces stored before traces had one, which were counted as
    production then and still are."""
    return environment or defaults.LEGACY_ENVIRONMENT
