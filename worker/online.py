"""The online consumer in every worker process: a thread with its own event loop reading the online stream, beside
RQ's loop in the main thread. Online traces never wait behind a batch job: the thread runs while a work-horse
evaluates a chunk, and batch-queue work-horses run at a lower CPU priority (worker.main.BATCH_NICENESS)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid

import redis

from ragpulse.config.settings import Settings
from ragpulse.online.consumer import consume
from ragpulse.store.connection import worker_async_client

log = logging.getLogger("ragpulse.online")
RESTART_CAP_SECONDS = 10.0
"""Longest pause before the consumer starts again after losing Redis or failing."""


def consumer_name() -> str:
    """This process's name in the consumer group: host, pid and a random part (pids repeat across containers)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def start_online_consumer(settings: Settings, stop: threading.Event) -> threading.Thread:
    """A thread consuming the online stream until `stop` is set; join it to let posts in flight finish."""
    thread = threading.Thread(target=serve, args=(settings, stop), name="ragpulse-online", daemon=True)
    thread.start()
    return thread


def serve(settings: Settings, stop: threading.Event) -> None:
    """Run the consumer, starting it again (same name, so its pending posts stay its own) after a Redis outage
    outlasting the client's retries or an unexpected error, until `stop` is set."""
    name, delay = consumer_name(), 0.5
    while not stop.is_set():
        try:
            asyncio.run(_consume(settings, name, stop))
        except redis.RedisError as exc:
            log.warning("online consumer lost Redis: %s; starting again", exc)
        except Exception:  # noqa: BLE001 - logged; the thread must outlive one bad loop, posts stay pending
            log.exception("online consumer failed; starting again")
        else:
            return
        stop.wait(delay)
        delay = min(delay * 2, RESTART_CAP_SECONDS)


async def _consume(settings: Settings, name: str, stop: threading.Event) -> None:
    client = worker_async_client(settings.redis_url)
    try:
        await consume(settings, client, name, stop)
    finally:
        await client.aclose()
