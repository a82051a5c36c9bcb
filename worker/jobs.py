"""RQ job functions. The API enqueues them by dotted path with ids only; traces come from Redis."""

from __future__ import annotations

import functools
import logging

import msgspec
import redis
from rq import get_current_job

from ragpulse.evaluate import evaluate_trace, failed_result
from ragpulse.exceptions import JudgeAuthError
from ragpulse.jobs import TraceResult
from ragpulse.judges.factory import make_judge
from ragpulse.judges.verdicts import Judge
from ragpulse.report import build_report
from ragpulse.schema import BatchOptions, Trace
from ragpulse.settings import Settings
from ragpulse.store import Store

log = logging.getLogger("ragpulse.worker")


@functools.cache
def _settings() -> Settings:
    return Settings.from_env()


@functools.cache
def _judge(name: str) -> Judge | None:
    return make_judge(name, _settings())


def _store(connection: redis.Redis | None = None) -> Store:
    connection = connection if connection is not None else get_current_job().connection
    return Store(connection, _settings().result_ttl_seconds)


def evaluate_chunk(job_id: str, chunk: int) -> dict[str, int]:
    """Evaluate one chunk of a job; the call that completes the last chunk builds the report."""
    store = _store()
    traces = store.load_chunk(job_id, chunk)
    offset = store.chunk_offset(job_id, chunk)
    job = store.job(job_id)
    if job.status == "failed":
        results = [failed_result(t, offset + i, f"job failed: {job.error}") for i, t in enumerate(traces)]
    else:
        store.mark_running(job_id)
        results = _evaluate(store, job_id, traces, offset, store.options(job_id))
    if store.record_chunk(job_id, chunk, results):
        finalize(store, job_id)
    return {"traces": len(results), "failed": sum(r.status != "ok" for r in results)}


def _evaluate(store: Store, job_id: str, traces: list[Trace], offset: int, options: BatchOptions) -> list[TraceResult]:
    judge = _judge(options.judge or _settings().default_judge)
    results: list[TraceResult] = []
    for position, trace in enumerate(traces):
        index = offset + position
        try:
            results.append(evaluate_trace(trace, index, options, judge))
        except JudgeAuthError as exc:
            store.finish(job_id, "failed", exc.reason)
            results += [failed_result(t, offset + p, f"job failed: {exc.reason}")
                        for p, t in enumerate(traces[position:], start=position)]
            break
        except Exception as exc:  # noqa: BLE001 - a failing trace is recorded as data, the chunk goes on
            log.exception("trace %s of job %s failed", index, job_id)
            results.append(failed_result(trace, index, f"{type(exc).__name__}: {exc}"))
    return results


def finalize(store: Store, job_id: str) -> None:
    """Build and store the report, then move the job to its terminal status (a failed job stays failed)."""
    report = build_report(job_id, store.options(job_id), store.all_results(job_id))
    store.save_report(job_id, msgspec.json.encode(report))
    if store.job(job_id).status == "failed":
        return
    store.finish(job_id, "finished_with_errors" if report["counts"]["failed"] else "finished")


def chunk_failed(job, connection, exc_type, exc_value, traceback) -> None:  # noqa: ANN001 - RQ's callback signature
    """RQ failure callback: the whole chunk crashed, so record each of its traces as failed, with the error."""
    job_id, chunk = job.args
    store = _store(connection)
    error = f"chunk failed: {exc_type.__name__}: {exc_value}"
    try:
        traces = store.load_chunk(job_id, chunk)
    except Exception:  # noqa: BLE001 - the chunk data itself is gone; fail the whole job with the reason
        store.finish(job_id, "failed", error)
        return
    offset = store.chunk_offset(job_id, chunk)
    results = [failed_result(t, offset + i, error) for i, t in enumerate(traces)]
    if store.record_chunk(job_id, chunk, results):
        finalize(store, job_id)
