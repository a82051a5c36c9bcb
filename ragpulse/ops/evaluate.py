"""Evaluate a trace file against a running service: post it (as several jobs when it exceeds a batch), wait, and
build one report over all of it. `ragpulse eval` and `ragpulse gate` share this."""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ragpulse.exceptions import Interrupted, TracesRejected
from ragpulse.model.dataset import DatasetBinding
from ragpulse.reporting.report import Report
from ragpulse.model.results import JobView, TraceResult
from ragpulse.model.trace import BatchOptions
from ragpulse.ops.client import Client, TraceFile, batches
from ragpulse.ops.progress import Progress
from ragpulse.reporting.build import build_report

_TRACE_PATH = re.compile(r"^\$\.traces\[(\d+)\](.*)$")


@dataclass
class Evaluation:
    """The jobs a file was posted as, their final views, and (unless a job failed) one report over all."""

    posted: list[tuple[int, str]]
    """(offset of the job's first trace in the file, job id)."""
    jobs: list[JobView]
    report: Report | None = None
    results: list[TraceResult] = field(default_factory=list)
    """Every per-trace result, indexed by position in the file (fetched when asked for or when several jobs)."""

    @property
    def failed_jobs(self) -> list[JobView]:
        return [job for job in self.jobs if job.status == "failed"]

    @property
    def some_traces_failed(self) -> bool:
        return any(job.status == "finished_with_errors" for job in self.jobs)


def evaluate_file(client: Client, file: TraceFile, options: dict[str, Any], size: int,
                  want_results: bool = False) -> Evaluation:
    """Post the traces (in several jobs when there are more than `size`), wait, and build the report: the job's own
    for one job, else built locally from every job's results exactly as a worker builds one.

    Raises TracesRejected (each error printed with its trace and line) before anything is queued, and Interrupted
    (with the jobs created so far, which run on) on Ctrl-C."""
    posting = Posting()
    try:
        return _evaluate(client, file, options, size, want_results, posting)
    except KeyboardInterrupt:
        raise Interrupted([job_id for _, job_id in posting.jobs], posting.in_flight) from None


@dataclass
class Posting:
    """The jobs created so far, and whether a POST is in flight (its job may exist, unknown to us): what a Ctrl-C
    leaves running."""

    jobs: list[tuple[int, str]] = field(default_factory=list)
    in_flight: bool = False


def _evaluate(client: Client, file: TraceFile, options: dict[str, Any], size: int, want_results: bool,
              posting: Posting) -> Evaluation:
    posted = posting.jobs
    parts = list(batches(file.traces, size))
    if len(parts) > 1:
        print(f"posting {len(file.traces)} traces as {len(parts)} jobs of at most {size}; one report covers all",
              file=sys.stderr)
        for offset, part in parts:  # check every batch first, so a bad one does not leave the others running
            _post(client, file, offset, part, options, dry_run=True)
    for offset, part in parts:
        posting.in_flight = True
        job_id = _post(client, file, offset, part, options)
        posted.append((offset, job_id))
        posting.in_flight = False
        print(f"job {job_id} created: {client.url(f'/v1/jobs/{job_id}')}", file=sys.stderr, flush=True)
    progress = Progress()
    try:
        evaluation = Evaluation(posted, client.wait_all([job_id for _, job_id in posted], progress))
    finally:
        progress.close()
    if evaluation.failed_jobs:
        return evaluation
    if want_results or len(posted) > 1:
        evaluation.results = _all_results(client, posted)
    if len(posted) == 1:
        evaluation.report = client.report(posted[0][1])
    else:
        evaluation.report = build_report(" + ".join(job_id for _, job_id in posted),
                                         msgspec.convert(options, BatchOptions), evaluation.results,
                                         merged_binding(evaluation.jobs))
        # the service adds the judge's qualification to a job's report; the parts share one judge configuration
        evaluation.report.qualification = client.report(posted[0][1]).qualification
    return evaluation


def merged_binding(jobs: list[JobView]) -> DatasetBinding | None:
    """The dataset binding of a file posted as several jobs of one dataset version: their counts added up."""
    bound = [job.dataset for job in jobs]
    first = bound[0] if bound else None
    if first is None or any(b is None or b.content_hash != first.content_hash for b in bound):
        return None
    return msgspec.structs.replace(
        first, items=sum(b.items for b in bound), unbound=sum(b.unbound for b in bound),  # type: ignore[union-attr]
        splits=dict(sum((Counter(b.splits) for b in bound), Counter())),  # type: ignore[union-attr]
        sources=dict(sum((Counter(b.sources) for b in bound), Counter())))  # type: ignore[union-attr]


def _post(client: Client, file: TraceFile, offset: int, part: list[dict[str, Any]], options: dict[str, Any],
          dry_run: bool = False) -> str:
    """POST one batch; returns its job id. A rejection is reported with each error's trace and line in the file."""
    try:
        if dry_run:
            client.check(part, options, file.dataset)
            return ""
        accepted = client.submit(part, options, file.dataset)
    except TracesRejected as exc:
        target = f"the options for {file.path}" if refused_options(exc) else str(file.path)
        print(f"the service rejected {target}: {exc}", file=sys.stderr)
        for error in exc.errors[:50]:
            print(f"  {_locate(error.get('path', ''), offset, file)}: {error.get('message', '')}", file=sys.stderr)
        if exc.status == 413:
            print("  (a smaller --batch-size sends fewer traces per request)", file=sys.stderr)
        raise
    scope = f" (traces {offset + 1}-{offset + len(part)})" if len(part) < len(file.traces) else ""
    for warning in accepted.warnings:
        print(f"warning{scope}: {warning.message}", file=sys.stderr)
    return accepted.job_id


def interrupted(command: str, client: Client, job_ids: list[str], in_flight: bool = False) -> str:
    """What to tell the user after Ctrl-C: the jobs created so far run on; how to follow each, and that no command
    cancels one."""
    unsure = (" (but the batch being posted when interrupted may have been queued all the same: its job id never "
              "arrived)") if in_flight else ""
    if not job_ids:
        return f"\n{command}: interrupted before any job was created{unsure or '; nothing runs'}"
    lines = [f"\n{command}: interrupted; {'this job runs' if len(job_ids) == 1 else 'these jobs run'} on in the "
             "service:"]
    for job_id in job_ids:
        lines += [f"  job {job_id}", f"    follow it:  curl {client.url(f'/v1/jobs/{job_id}')}",
                  f"    its report once it ends:  {client.url(f'/v1/jobs/{job_id}/report.html')}"]
    if unsure:
        lines.append(f"  {unsure.strip(' ()')}")
    lines.append("  nothing cancels a job yet: it runs to its end (a batch's budget_usd bounds what a billable judge "
                 "spends); run the command again for a new job")
    return "\n".join(lines)


def refused_options(exc: TracesRejected) -> bool:
    """True when the service refused the batch's options only (a judge it cannot run, say), not its traces."""
    return bool(exc.errors) and all(str(e.get("path", "")).startswith("$.options") for e in exc.errors)


def _locate(path: str, offset: int, file: TraceFile) -> str:
    """`trace 7 (line 7): $.traces[6].query` for the batch path `$.traces[2].query` of a batch starting at 4."""
    found = _TRACE_PATH.match(path)
    if not found:
        return path
    index = offset + int(found.group(1))
    return f"{file.where(index)}: $.traces[{index}]{found.group(2)}"


def _all_results(client: Client, posted: list[tuple[int, str]]) -> list[TraceResult]:
    """Every job's per-trace results, each trace's index its position in the file: one report over several jobs is
    built from them exactly as a worker builds a job's report (ragpulse.reporting.build)."""
    results = []
    for offset, job_id in posted:
        results += [msgspec.structs.replace(r, index=r.index + offset) for r in client.results(job_id)]
    return results
