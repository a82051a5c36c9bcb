"""Worker entry point: the online stream's consumer (worker.online, a child process), and an RQ worker on the online
then the batch queue (strict priority), JSON-serialised.

A worker outlives Redis outages. Its client retries every command with backoff for about
WORKER_REDIS_OUTAGE_SECONDS, so a job in flight pauses through a Redis restart; a missed heartbeat while the
work-horse runs is skipped rather than fatal; and should RQ still give up (Redis gone for longer), the process
waits for Redis and starts a fresh RQ worker instead of exiting, so its supervisor sees no crash. Its RQ scheduler
(a forked process that ends when an outage outlasts its client's retries) is watched by the worker's own loop and
started again, where RQ would look only every ten minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import signal
import sys
import threading
import time

import redis
from rq import Worker

from dispatch.queues import SERIALIZER, queue_named
from ragpulse.judges import kinds
from ragpulse.exceptions import ConfigError
from ragpulse.config import defaults
from ragpulse.config.settings import LOG_LEVELS, Settings, log_level
from ragpulse.store.connection import RETRIED_ERRORS, probe_client, reconnect_once, worker_client
# Imported here, before any fork or thread: RQ forks a work-horse per job, and a horse that had to import the job
# module itself would pay for it on every job, or deadlock on an import lock held by the janitor thread at fork.
import worker.jobs  # noqa: F401
# The judges too: the online consumer process (forked at start) and every work-horse build one.
import ragpulse.judges.anthropic_judge  # noqa: F401
import ragpulse.judges.openai_judge  # noqa: F401
import ragpulse.judges.local  # noqa: F401
from worker.janitor import start_janitor
from worker.online import start_online_consumer, stop_online_consumer

log = logging.getLogger("ragpulse.worker")
REDIS_WAIT_CAP_SECONDS = 10.0
"""Longest pause between two checks whether Redis is back, while the worker has no RQ worker running."""
SCHEDULER_STOP_SECONDS = 3.0
"""How long a stopping worker waits for its RQ scheduler process before killing it."""
BATCH_NICENESS = 10
"""Niceness of a work-horse running a batch-queue job: the online consumer thread and online-queue jobs of the same
machine get the CPU first."""
ONLINE_STOP_SECONDS = 15.0
"""How long a stopping worker waits for its online consumer to finish the posts in flight."""
SCHEDULER_CHECK_SECONDS = 5
"""How often a worker looks whether its RQ scheduler process still runs (starting it again, or taking the scheduler
lock another worker's dead scheduler left), and the longest it blocks dequeuing between two looks."""


class ResilientWorker(Worker):
    """An RQ worker whose busy loop survives a Redis outage, and that tells a requested stop from giving up."""

    stop_requested = False
    """Set once SIGTERM or SIGINT asked this worker to stop (RQ's own flag is only set while busy)."""
    stop_event: threading.Event | None = None
    """Set by the process's own handlers when SIGTERM or SIGINT came before RQ's handlers were installed."""

    def request_stop(self, signum, frame) -> None:  # noqa: ANN001 - RQ's signal handler signature
        self.stop_requested = True
        # Stopping, a Redis outage must not hold the worker up (a work-horse's job keeps its own client's retries).
        self.connection.set_retry(reconnect_once())
        super().request_stop(signum, frame)

    def stop_scheduler(self) -> None:
        """RQ's, bounded: a scheduler process still retrying Redis (it releases its locks on the way out) is killed
        after SCHEDULER_STOP_SECONDS; its locks expire by themselves."""
        process = self.scheduler._process if self.scheduler else None  # noqa: SLF001 - RQ keeps it there
        if process is None or not process.pid:
            return
        with contextlib.suppress(OSError):
            os.kill(process.pid, signal.SIGTERM)
        process.join(SCHEDULER_STOP_SECONDS)
        if process.is_alive():
            self.log.warning("Worker %s: scheduler did not stop within %.0f s; killing it", self.name,
                             SCHEDULER_STOP_SECONDS)
            process.kill()
            process.join()

    _scheduler_checked = 0.0
    """monotonic time of the last look at the scheduler (supervise_scheduler)."""

    @property
    def dequeue_timeout(self) -> int:
        """RQ's, capped at SCHEDULER_CHECK_SECONDS: an idle worker otherwise blocks in BLPOP for minutes between two
        looks at its scheduler."""
        return min(super().dequeue_timeout, SCHEDULER_CHECK_SECONDS)

    @property
    def connection_timeout(self) -> int:
        """RQ's socket timeout, from its own dequeue timeout: the shorter dequeue must not shorten it, or a command
        that waits on a paused Redis would time out and be sent again."""
        return super().dequeue_timeout + 10

    def heartbeat(self, timeout: int | None = None, pipeline=None) -> None:  # noqa: ANN001 - RQ's signature
        """RQ's heartbeat (before every dequeue, after every job); then, outside a pipeline, a look at the
        scheduler."""
        super().heartbeat(timeout, pipeline)
        if pipeline is None:
            self.supervise_scheduler()

    def supervise_scheduler(self) -> None:
        """Start the scheduler again when its process has ended (an outage longer than its client's retries ends it,
        and RQ looks again only every maintenance interval, ten minutes), reaping the dead one; also take the
        scheduler lock when it is free, as when another worker's scheduler died. At most every
        SCHEDULER_CHECK_SECONDS; a Redis error waits for the next look."""
        scheduler = self.scheduler
        if scheduler is None or self._stop_requested or self.stop_requested:
            return
        if time.monotonic() - self._scheduler_checked < SCHEDULER_CHECK_SECONDS:
            return
        self._scheduler_checked = time.monotonic()
        process = scheduler._process  # noqa: SLF001 - RQ keeps it there
        if process is not None and process.is_alive():  # is_alive() also reaps a process that ended
            return
        if process is not None:
            self.log.warning("Worker %s: its scheduler (pid %s) exited with %s; starting it again once it holds the "
                             "lock", self.name, process.pid, process.exitcode)
            scheduler._process = None  # noqa: SLF001
        try:
            scheduler.acquire_locks(auto_start=True)
        except RETRIED_ERRORS as exc:
            self.log.warning("Worker %s: cannot restart the scheduler yet, Redis unreachable: %s", self.name, exc)

    def _install_signal_handlers(self) -> None:
        super()._install_signal_handlers()
        if self.stop_event is not None and self.stop_event.is_set():
            # The signal came while this worker was starting: stop before the first dequeue, the way RQ does for
            # a stop requested mid-job (its loop checks the flag first thing).
            self.stop_requested = self._stop_requested = True
            self.connection.set_retry(reconnect_once())

    batch_queue: str | None = None
    """Name of the batch queue, whose jobs' work-horses run niced (BATCH_NICENESS)."""

    def main_work_horse(self, job, queue) -> None:  # noqa: ANN001 - RQ's signature
        """RQ's work-horse; for a batch-queue job, at a lower CPU priority than online work."""
        if queue.name == self.batch_queue:
            with contextlib.suppress(OSError):
                os.nice(BATCH_NICENESS)
        super().main_work_horse(job, queue)

    def maintain_heartbeats(self, job, execution) -> None:  # noqa: ANN001 - RQ's signature
        """RQ's heartbeat while the horse works; with Redis unreachable it is skipped (the next one, a monitoring
        interval later, catches up) instead of raising out of the worker's loop and ending the process."""
        try:
            super().maintain_heartbeats(job, execution)
        except RETRIED_ERRORS as exc:
            self.log.warning("Worker %s: heartbeat skipped, Redis unreachable: %s", self.name, exc)
        self.supervise_scheduler()


def create_worker(settings: Settings, connection: redis.Redis | None = None,
                  stop: threading.Event | None = None) -> ResilientWorker:
    """A worker that always takes online work before batch work (and stops as it starts once `stop` is set)."""
    connection = connection or worker_client(settings.redis_url, outage_seconds=settings.worker_redis_outage_seconds)
    queues = [queue_named(name, connection) for name in settings.queues]
    rq_worker = ResilientWorker(queues, connection=connection, serializer=SERIALIZER)
    rq_worker.stop_event = stop
    rq_worker.batch_queue = settings.queues[1]
    return rq_worker


def wait_for_redis(url: str, stop: threading.Event) -> bool:
    """Block until Redis answers PING (True), or until `stop` is set (False); backs off up to 10 s between tries."""
    probe = probe_client(url)
    delay, failures = 0.5, 0
    try:
        while not stop.is_set():
            try:
                probe.ping()
                if failures:
                    log.warning("Redis answers again after %d failed attempts", failures)
                return True
            except redis.RedisError as exc:
                if failures == 0:
                    log.warning("waiting for Redis: %s", exc)
                failures += 1
            stop.wait(delay)
            delay = min(delay * 2, REDIS_WAIT_CAP_SECONDS)
        return False
    finally:
        probe.close()


def work(settings: Settings, rq_level: str, stop: threading.Event) -> None:
    """Run RQ workers one after the other until asked to stop: a fresh one whenever RQ gives up on Redis."""
    connection = worker_client(settings.redis_url, outage_seconds=settings.worker_redis_outage_seconds)
    abandoned: ResilientWorker | None = None
    while True:
        # Between RQ workers, SIGTERM and SIGINT just stop the wait (RQ installs its own handlers in work()).
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        if not wait_for_redis(settings.redis_url, stop):
            return
        if abandoned is not None:
            with contextlib.suppress(redis.RedisError):
                abandoned.register_death()             # not counted in ragpulse_workers any longer
        rq_worker = create_worker(settings, connection, stop)
        try:
            rq_worker.work(with_scheduler=True, logging_level=rq_level)  # the scheduler runs callback retries
        except RETRIED_ERRORS as exc:
            log.warning("worker %s lost Redis: %s", rq_worker.name, exc)
        if rq_worker.stop_requested or stop.is_set():
            return
        log.warning("worker %s gave up on Redis; starting a new worker once Redis answers", rq_worker.name)
        _abandon(rq_worker)
        abandoned = rq_worker


def _abandon(rq_worker: ResilientWorker) -> None:
    """Stop what an RQ worker that gave up may have left running: its work-horse (the janitor requeues that chunk
    once its lease lapses; the results it stored are kept) and its pub/sub thread."""
    if rq_worker.horse_pid:
        with contextlib.suppress(OSError):
            rq_worker.kill_horse()
            rq_worker.wait_for_horse()
    if rq_worker.pubsub_thread is not None:
        rq_worker.pubsub_thread.stop()


def main(argv: list[str] | None = None) -> None:
    """Start one worker process (and its janitor thread) and work until stopped."""
    parser = argparse.ArgumentParser(prog="python -m worker", description="Run one ragpulse RQ worker.")
    parser.add_argument("--rq-log-level", type=str.upper, choices=LOG_LEVELS,
                        help="level of RQ's own loggers (rq.*), which log several INFO lines per job "
                             "(default: RAGPULSE_LOG_LEVEL, else INFO; `ragpulse up` passes WARNING)")
    args = parser.parse_args(argv)
    try:
        level = log_level()
        settings = Settings.from_env()
    except ConfigError as exc:
        sys.exit(f"ragpulse worker: {exc}")
    logging.basicConfig(level=level, format=defaults.LOG_FORMAT)
    rq_level = args.rq_log_level or level
    logging.getLogger("rq").setLevel(rq_level)
    if settings.open_access:
        # DEBUG, not WARNING: under `ragpulse up` (and any open API) the API has no keys either, and every caller is
        # tenant 'default'. deploy/README.md says workers behind a keyed API need the keys file.
        logging.getLogger("ragpulse.worker").debug(
            "no API keys configured: metrics label every tenant but %r as 'other'; give workers the API's "
            "RAGPULSE_API_KEYS or RAGPULSE_API_KEYS_FILE (only the tenant names are used)", "default")
    if problem := kinds.default_judge_problem(settings):   # the online consumer judges with it
        logging.getLogger("ragpulse.worker").warning("%s", problem)
    online = start_online_consumer(settings)   # forked first, while this process has no other thread
    stop = threading.Event()
    start_janitor(settings, stop)
    # Move everything imported so far out of the collector's reach: each forked work-horse otherwise pays a full
    # collection of it (measured ~120 ms), long enough to make one paced judge request late.
    gc.freeze()
    try:
        work(settings, rq_level, stop)
    finally:
        stop.set()
        stop_online_consumer(online, ONLINE_STOP_SECONDS)
