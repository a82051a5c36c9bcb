"""Worker entry point: an RQ worker on the ragpulse queue, JSON-serialised (never pickle)."""

from __future__ import annotations

import logging
import sys

import redis
from rq import Queue, Worker
from rq.serializers import JSONSerializer

from ragpulse.exceptions import ConfigError
from ragpulse.settings import Settings


def create_worker(settings: Settings, connection: redis.Redis | None = None) -> Worker:
    """A worker listening on the configured queue."""
    connection = connection or redis.Redis.from_url(settings.redis_url)
    queue = Queue(settings.queue_name, connection=connection, serializer=JSONSerializer)
    return Worker([queue], connection=connection, serializer=JSONSerializer)


def main() -> None:
    """Start one worker process and work until stopped."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        sys.exit(f"ragpulse worker: {exc}")
    create_worker(settings).work(with_scheduler=False)
