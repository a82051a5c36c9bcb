"""The online consumer of every worker: a process of its own, forked by the worker at start (before any thread
exists), reading the online stream with its own event loop while the worker's RQ loop runs batch jobs.

Not a thread of the worker: RQ forks a work-horse per job, and a fork taken while another thread held a lock (an
import's module lock, say, as the consumer builds its judge client) leaves the horse waiting on it forever. A child
process shares no lock with the horses, and has its own GIL. It stops when asked (SIGTERM/SIGINT: it lets the posts
in flight finish) and when its worker goes away (even SIGKILLed): it watches its parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import socket
import threading
import uuid
from collections.abc import Callable
from multiprocessing.process import BaseProcess

import redis

from ragpulse.config.settings import Settings
from ragpulse.online.consumer import consume
from ragpulse.ops.lifetime import die_with_parent
from ragpulse.store.connection import worker_async_client

log = logging.getLogger("ragpulse.online")
RESTART_CAP_SECONDS = 10.0
"""Longest pause before the consumer starts again after losing Redis or failing."""
PARENT_CHECK_SECONDS = 0.5
"""How often the consumer checks that its worker is still alive."""


def consumer_name() -> str:
    """This process's name in the consumer group: host, pid and a random part (pids repeat across containers)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def start_online_consumer(settings: Settings) -> BaseProcess:
    """Fork the consumer process. Call it before the worker starts any thread."""
    tie_to_parent = die_with_parent(signal.SIGTERM)
    process = multiprocessing.get_context("fork").Process(target=_consumer_main,
                                                          args=(settings, os.getpid(), tie_to_parent),
                                                          name="ragpulse-online", daemon=False)
    process.start()
    return process


def stop_online_consumer(process: BaseProcess, timeout: float) -> None:
    """Ask the consumer to stop (it finishes the posts in flight) and wait up to `timeout`, then kill it; the posts
    it still held are claimed by another worker."""
    if process.is_alive():
        process.terminate()
        process.join(timeout)
    if process.is_alive():
        log.warning("online consumer did not stop within %.0f s; killing it", timeout)
        process.kill()
        process.join()


def _consumer_main(settings: Settings, parent: int, tie_to_parent: Callable[[], None]) -> None:
    gc.freeze()   # what the worker imported stays out of this process's collections
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    tie_to_parent()   # Linux: the kernel sends SIGTERM when the worker dies, even by SIGKILL
    threading.Thread(target=_watch_parent, args=(parent, stop), name="ragpulse-online-parent", daemon=True).start()
    serve(settings, stop)


def _watch_parent(parent: int, stop: threading.Event) -> None:
    """The portable fallback of the kernel's parent-death signal."""
    while not stop.wait(PARENT_CHECK_SECONDS):
        if os.getppid() != parent:
            log.warning("online consumer: its worker (pid %d) is gone; stopping", parent)
            stop.set()


def serve(settings: Settings, stop: threading.Event) -> None:
    """Run the consumer, starting it again (same name, so its pending posts stay its own) after a Redis outage
    outlasting the client's retries or an unexpected error, until `stop` is set."""
    name, delay = consumer_name(), 0.5
    while not stop.is_set():
        try:
            asyncio.run(_consume(settings, name, stop))
        except redis.RedisError as exc:
            log.warning("online consumer lost Redis: %s; starting again", exc)
        except Exception:  # noqa: BLE001 - logged; the consumer must outlive one bad loop, posts stay pending
            log.exception("online consumer failed; starting again")
        else:
            return
        stop.wait(delay)
        delay = min(delay * 2, RESTART_CAP_SECONDS)


async def _consume(settings: Settings, name: str, stop: threading.Event) -> None:
    client = worker_async_client(settings.redis_url, settings.judge_concurrency, settings.worker_redis_outage_seconds)
    try:
        await consume(settings, client, name, stop)
    finally:
        with contextlib.suppress(redis.RedisError):
            await client.aclose()
