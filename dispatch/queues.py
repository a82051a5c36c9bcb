"""RQ queues: the one place an rq.Queue is built (always JSON, never pickle), and which queue a batch goes to."""

from __future__ import annotations

from collections.abc import Sequence

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.config.settings import Settings

SERIALIZER = JSONSerializer
"""How RQ serialises job arguments, for queues and workers alike: JSON, never pickle."""


def queue_named(name: str, connection: redis.Redis) -> Queue:
    """An RQ queue that serialises job arguments as JSON."""
    return Queue(name, connection=connection, serializer=SERIALIZER)


def pick_queue(traces: Sequence[Trace], options: BatchOptions) -> str:
    """`online` when asked, or for a production job whose every trace comes from production; else `batch`.

    The queue follows the environment: an `evaluation` or `staging` run of production-sourced traces (a replay of
    last week's traffic as an eval set) is judged whole on the batch queue, never sampled by the online policy."""
    if options.queue is not None:
        return options.queue
    production = options.environment == "production" and all(t.source == "production" for t in traces)
    return "online" if production else "batch"


def rq_queue_name(settings: Settings, queue: str) -> str:
    """The RQ queue behind a priority label."""
    online, batch = settings.queues
    return online if queue == "online" else batch
