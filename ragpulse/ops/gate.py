"""`ragpulse gate FILE`: evaluate the file, check its report (and its change from a baseline), print the verdicts
and exit 0 (pass), 1 (a gate failed), 2 (bad input or config) or 3 (the service cannot be reached or evaluate)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ragpulse.exceptions import (ClientError, DatasetMismatch, GateConfigError, HeuristicEvidence, Interrupted,
                                 JudgingRefused, OutputFileError, TraceFileError, TracesRejected)
from ragpulse.judges import kinds
from ragpulse.gate.checks import Row, check_comparison, check_report
from ragpulse.gate.config import GateConfig, load_config
from ragpulse.gate.output import github_annotations, junit_xml, summary, table
from ragpulse.model.compare import Comparison, RunInfo
from ragpulse.model.metric_keys import is_metric_key
from ragpulse.model.results import ENDED_WITH_REPORT, JobView
from ragpulse.ops.client import Client, TraceFile, read_traces, service_fault
from ragpulse.ops.evaluate import Evaluation, evaluate_file, interrupted
from ragpulse.ops.output_file import check_writable, write_output
from ragpulse.reporting.compare import compare
from ragpulse.reporting.judging import judged_keys

GATE_PASS = 0
"""Every threshold held and nothing regressed significantly."""
GATE_FAIL = 1
"""A threshold failed, too many traces did not evaluate, or a metric regressed significantly against the baseline."""
GATE_BAD_INPUT = 2
"""Bad arguments, an unreadable trace file or gate config, traces the service rejected, an unknown baseline, or a
--junit file that cannot be written (checked before anything runs; should writing fail all the same, the verdicts
are printed and the gate exits 2, never a pass or a fail), a baseline run on other dataset items (different
versions; `[baseline] dataset_mismatch = "refuse"`, the default), a baseline judged by another judge, model or prompt
version (`[baseline] judge_mismatch = "refuse"`, the default), a side that judged too few of its traces for a
judged metric the config names, or a judged metric judged by the offline heuristic without
`allow_heuristic = true`."""
GATE_UNREACHABLE = 3
"""The service cannot be reached, answered a server error, or a job failed: nothing was judged."""
GATE_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT): no verdict; the jobs created so far run on, and the message says how to follow them."""


@dataclass(frozen=True)
class GateRequest:
    """What `ragpulse gate` was asked to do."""

    file: Path
    server: str
    api_key: str | None
    config: Path | None
    baseline_job: str | None
    baseline_file: Path | None
    batch_size: int
    junit: Path | None
    github: bool
    dataset: dict[str, Any] | None = None
    """`--dataset NAME:VERSION` as the batch's `dataset` ({name, version}); None: the trace file's own, if any."""


def run_gate(request: GateRequest) -> int:
    """Run the gate; the exit code."""
    try:
        if request.junit is not None:
            check_writable("--junit", request.junit)
        config = load_config(request.config)
        candidate_file = read_traces(request.file)
        baseline_file = read_traces(request.baseline_file) if request.baseline_file else None
        if request.dataset is not None:
            candidate_file.dataset = request.dataset
        _check_corrected_fits(config, len(candidate_file.traces), request.batch_size)
        _check_heuristic_asked(config, compared=bool(request.baseline_job or request.baseline_file))
    except (GateConfigError, TraceFileError, OutputFileError, HeuristicEvidence) as exc:
        print(f"ragpulse gate: {exc}", file=sys.stderr)
        return GATE_BAD_INPUT
    for file in (candidate_file, baseline_file):
        if file is not None and file.options:  # as `eval` would send them: say they are not, rather than drop them
            print(f"ragpulse gate: {file.path}'s own options are not used: the gate evaluates with the config's "
                  "[options]", file=sys.stderr)
    client = Client(request.server, request.api_key)
    jobs: dict[str, list[str]] = {}
    try:
        rows = _gate(client, request, config, candidate_file, baseline_file, jobs)
    except TracesRejected:
        print("ragpulse gate: nothing was evaluated", file=sys.stderr)
        return GATE_BAD_INPUT
    except (DatasetMismatch, HeuristicEvidence, JudgingRefused) as exc:
        print(f"ragpulse gate: refused, no verdict: {exc}", file=sys.stderr)
        print(job_pages(client, jobs))
        return GATE_BAD_INPUT
    except Interrupted as exc:
        created = [job for ids in jobs.values() for job in ids if job != request.baseline_job]  # not ours to run on
        print(interrupted("ragpulse gate", client, created, exc.in_flight), file=sys.stderr)
        return GATE_INTERRUPTED
    except ClientError as exc:
        print(f"ragpulse gate: {exc}", file=sys.stderr)
        return GATE_UNREACHABLE if service_fault(exc) else GATE_BAD_INPUT
    if rows is None:
        return GATE_UNREACHABLE
    try:
        _publish(rows, request)
    except OutputFileError as exc:
        print(f"ragpulse gate: {exc}; the verdicts above stand, but no JUnit report was written", file=sys.stderr)
        return GATE_BAD_INPUT
    finally:
        print(job_pages(client, jobs))
    return GATE_FAIL if any(row.failed for row in rows) else GATE_PASS


def _gate(client: Client, request: GateRequest, config: GateConfig, candidate_file: TraceFile,
          baseline_file: TraceFile | None, jobs: dict[str, list[str]]) -> list[Row] | None:
    """Evaluate (the baseline file first, then the candidate), check, compare; None when a job failed. `jobs` gets
    the job ids of each side ("baseline", "candidate") as they are created, even when interrupted."""
    options = gate_options(config)
    baseline = None
    if request.baseline_job is not None:  # an unknown or foreign job fails here (404), before anything is posted
        try:
            client.wait_all([request.baseline_job], lambda _jobs: None)
        except ClientError as exc:
            if exc.status != 404:
                raise
            raise ClientError(f"--baseline {request.baseline_job}: the service has no such job for this key, so "
                              f"there is nothing to compare against ({exc})", exc.status) from None
        jobs["baseline"] = [request.baseline_job]
    if baseline_file is not None:
        print(f"evaluating the baseline {baseline_file.path}", file=sys.stderr)
        baseline = _evaluate(client, baseline_file, {**options, "run": config.baseline.run,
                                                     "variant": config.baseline.variant},
                             request.batch_size, True, jobs.setdefault("baseline", []))
        if not _evaluated(baseline):
            return None
    print(f"evaluating {candidate_file.path}", file=sys.stderr)
    several_jobs = len(candidate_file.traces) > request.batch_size or (baseline is not None and len(baseline.posted) > 1)
    candidate = _evaluate(client, candidate_file, options, request.batch_size,
                          several_jobs and (baseline is not None or request.baseline_job is not None),
                          jobs.setdefault("candidate", []))
    if not _evaluated(candidate):
        return None
    assert candidate.report is not None
    _check_heuristic_judged(config, {"candidate": candidate, "baseline": baseline},
                            compared=baseline is not None or request.baseline_job is not None)
    rows = check_report(candidate.report, config)
    comparison = _comparison(client, candidate, baseline, request.baseline_job, config)
    if comparison is not None:
        for warning in comparison.warnings:   # `matched: 0` of two unrelated runs must not pass unseen
            print(f"ragpulse gate: warning: {warning}", file=sys.stderr)
        _check_dataset(comparison, config)
        _check_judging(comparison, config)
        rows += check_comparison(comparison, config)
    return rows


def _check_corrected_fits(config: GateConfig, traces: int, batch_size: int) -> None:
    """GateConfigError when a threshold reads a judge-corrected rate but the file is posted as several jobs: the
    service corrects a job's rates with its app's labels, and a report merged here from several jobs has none, so
    the row would fail saying no labels exist when they may."""
    corrected = [key for key, threshold in config.active_thresholds.items() if threshold.on.startswith("corrected")]
    if corrected and traces > batch_size:
        raise GateConfigError(
            f"[thresholds.{corrected[0]}] on = \"{config.active_thresholds[corrected[0]].on}\" needs the file posted "
            f"as one job (the service corrects a job's rates), but {traces} traces over --batch-size {batch_size} "
            f"make several: pass --batch-size {traces} or more")


def _check_heuristic_asked(config: GateConfig, compared: bool) -> None:
    """HeuristicEvidence before anything is posted when the config's own judge is the heuristic."""
    if config.options.judge is not None and kinds.is_heuristic(config.options.judge):
        _refuse_heuristic(config, compared, f"[options] judge = \"{config.options.judge}\"")


def _check_heuristic_judged(config: GateConfig, sides: dict[str, Evaluation | None], compared: bool) -> None:
    """HeuristicEvidence when either side's report was judged by the heuristic (the service's default judge)."""
    for side, evaluation in sides.items():
        if evaluation is not None and evaluation.report is not None and evaluation.report.generation.heuristic:
            _refuse_heuristic(config, compared, f"the {side}'s traces were judged by the heuristic")


def _refuse_heuristic(config: GateConfig, compared: bool, why: str) -> None:
    judged = config.judged_keys(compared)
    if config.allow_heuristic or not judged:
        return
    raise HeuristicEvidence(
        f"{why}, an offline heuristic whose accuracy on your data is unmeasured, so it is no evidence for "
        f"{', '.join(judged)}: configure an LLM judge on the service (ANTHROPIC_API_KEY, or RAGPULSE_JUDGE=openai "
        "with RAGPULSE_OPENAI_BASE_URL and RAGPULSE_OPENAI_MODEL), gate on retrieval metrics only, or set "
        "`allow_heuristic = true` at the top of the gate config to gate on it anyway")


def _check_dataset(comparison: Comparison, config: GateConfig) -> None:
    """DatasetMismatch when the two runs are on other dataset items and the config refuses that; a loud warning when
    it only warns."""
    mismatch = comparison.dataset_mismatch
    if mismatch is None:
        return
    if config.baseline.dataset_mismatch == "refuse":
        raise DatasetMismatch(f"{mismatch} ([baseline] dataset_mismatch = \"warn\" compares them all the same)")
    print(f"ragpulse gate: WARNING, dataset mismatch: {mismatch}", file=sys.stderr)


def _check_judging(comparison: Comparison, config: GateConfig) -> None:
    """JudgingRefused when the two sides were judged differently with a judged metric in the tested family and the
    config refuses that (a loud warning when it warns), or when a side below the judged-share floor had judged
    metrics the config names (thresholds, `[baseline] metrics`): those cannot be ruled on, so no verdict is given.
    Judged metrics only in the default family are left untested, each a row saying why."""
    if comparison.judge_mismatch and judged_keys(comparison.family):
        if config.baseline.judge_mismatch == "refuse":
            raise JudgingRefused(f"judge mismatch: {comparison.judge_mismatch} ([baseline] judge_mismatch = \"warn\" "
                                 "compares them all the same)")
        print(f"ragpulse gate: WARNING, judge mismatch: {comparison.judge_mismatch}", file=sys.stderr)
    named = [key for key in comparison.refused_metrics if key in config.named_metrics]
    if named:
        raise JudgingRefused(f"judged metrics refused ({', '.join(named)}): {comparison.judged_refused}")


def _evaluate(client: Client, file: TraceFile, options: dict[str, Any], size: int, want_results: bool,
              ids: list[str]) -> Evaluation:
    """evaluate_file, noting its job ids in `ids` (those created before a Ctrl-C included)."""
    try:
        evaluation = evaluate_file(client, file, options, size, want_results=want_results)
    except Interrupted as exc:
        ids += exc.job_ids
        raise
    ids += [job_id for _, job_id in evaluation.posted]
    return evaluation


def job_pages(client: Client, jobs: dict[str, list[str]]) -> str:
    """Each side's job ids with their report pages, and how to gate a later run against this one."""
    lines = []
    for side in ("candidate", "baseline"):
        for job_id in jobs.get(side, []):
            lines.append(f"{side} job {job_id}: {client.url(f'/v1/jobs/{job_id}/report.html')}")
    candidate = jobs.get("candidate", [])
    if len(candidate) == 1:
        lines.append(f"to gate a later run against this one: --baseline {candidate[0]}")
    return "\n".join(lines)


def gate_options(config: GateConfig) -> dict[str, Any]:
    """The batch options to evaluate with: the config's, with the thresholds as the report's targets."""
    options = msgspec.to_builtins(config.options)
    options["targets"] = {**{key: t.limit for key, t in config.active_thresholds.items() if is_metric_key(key)},
                          **(config.options.targets or {})}
    return options


def _comparison(client: Client, candidate: Evaluation, baseline: Evaluation | None, baseline_job: str | None,
                config: GateConfig) -> Comparison | None:
    """The candidate against the baseline: the service's compare endpoint when each side is one job, else the same
    comparison built here from both sides' per-trace results."""
    threshold, family, correction = (config.baseline.regression_threshold, config.regression_family,
                                     config.baseline.correction)
    if baseline is None and baseline_job is None:
        return None
    base_jobs = [job_id for _, job_id in baseline.posted] if baseline else [baseline_job]
    if len(base_jobs) == 1 and len(candidate.posted) == 1:
        return client.compare(candidate.posted[0][1], base_jobs[0], threshold,  # type: ignore[arg-type]
                              family=family, correction=correction, on_judge_mismatch="warn")  # ruled on here
    base_view = baseline.jobs[0] if baseline else client.job(baseline_job)  # type: ignore[arg-type]
    if baseline is None and base_view.status not in ENDED_WITH_REPORT:   # as the service's compare refuses it (409)
        raise ClientError(f"the baseline job {baseline_job} is {base_view.status}: compare against a job that "
                          "finished", status=409)
    base_results = baseline.results if baseline else client.results(baseline_job)  # type: ignore[arg-type]
    cand_view = candidate.jobs[0]
    return compare(_info(base_view, base_jobs), _info(cand_view, [j for _, j in candidate.posted]), base_results,
                   candidate.results, threshold, family=family, correction=correction)


def _info(view: JobView, job_ids: list[str | None]) -> RunInfo:
    return RunInfo(job_id=" + ".join(map(str, job_ids)), run=view.run, variant=view.variant, dataset=view.dataset)


def _evaluated(evaluation: Evaluation) -> bool:
    for job in evaluation.failed_jobs:
        print(f"ragpulse gate: job {job.job_id} failed: {job.error}", file=sys.stderr)
    return evaluation.report is not None


def _publish(rows: list[Row], request: GateRequest) -> None:
    print(table(rows))
    print(summary(rows))
    if request.junit is not None:
        write_output("--junit", request.junit, junit_xml(rows))
        print(f"JUnit report written to {request.junit}", file=sys.stderr)
    if request.github:
        print(github_annotations(rows))
