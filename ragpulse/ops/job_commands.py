"""`ragpulse wait`, `report` and `compare`: follow and read jobs already created (by `eval`, `gate`, the SDK or a
POST), each printing what `eval` or `gate` would print for them."""

from __future__ import annotations

import sys
from pathlib import Path

from ragpulse.gate.checks import check_comparison
from ragpulse.gate.config import GateConfig
from ragpulse.gate.output import table
from ragpulse.model.compare import Comparison, Regression
from ragpulse.model.pairwise import Pairwise, PairwisePending
from ragpulse.model.results import TERMINAL, JobView
from ragpulse.ops.client import Client
from ragpulse.ops.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TRACES_FAILED
from ragpulse.ops.output_file import check_writable, write_output
from ragpulse.ops.progress import Progress
from ragpulse.reporting.render import render_report

REGRESSIONS_SHOWN = 10
"""`ragpulse compare` lists at most this many regressed traces (worst first), and says how many it left out."""


def exit_code(job: JobView) -> int:
    """As `eval` exits for its job: 0 finished, 3 finished with failed traces, 1 failed (or, for `report`, not
    ended yet)."""
    return {"finished": EXIT_OK, "finished_with_errors": EXIT_TRACES_FAILED}.get(job.status, EXIT_FAILED)


def status_line(job: JobView) -> str:
    """`job 1f2e… finished_with_errors: 63 evaluated, 2 failed, 0 skipped of 65` (and the job's error, if any)."""
    p = job.progress
    error = f"; error: {job.error}" if job.error else ""
    return f"job {job.job_id} {job.status}: {p.done} evaluated, {p.failed} failed, {p.skipped} skipped of " \
           f"{p.total}{error}"


def wait(client: Client, job_id: str) -> int:
    """Poll the job (with eval's progress line) until it ends; print its status line."""
    progress = Progress()
    try:
        job = client.wait(job_id, lambda view: progress([view]))
    except KeyboardInterrupt:
        job = None
    finally:
        progress.close()
    if job is None:
        print(f"ragpulse wait: interrupted; job {job_id} runs on in the service (`ragpulse wait {job_id}` follows it "
              "again)", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(status_line(job))
    return exit_code(job)


def report(client: Client, job_id: str, html: Path | None) -> int:
    """Print the ended job's report as `eval` does; with `html`, write the service's report page there."""
    if html is not None:
        check_writable("--html", html)   # before anything is asked of the service: OutputFileError, exit 2
    job = client.job(job_id)
    if job.status not in TERMINAL:
        print(f"ragpulse report: {status_line(job)}; no report yet (`ragpulse wait {job_id}` waits for it)",
              file=sys.stderr)
        return EXIT_FAILED
    if job.status == "failed":
        print(f"ragpulse report: {status_line(job)}", file=sys.stderr)
        return EXIT_FAILED
    print(render_report(client.report(job_id)))
    if html is not None:
        write_output("--html", html, client.report_page(job_id))
        print(f"report page written to {html}", file=sys.stderr)
    return exit_code(job)


def compare(client: Client, candidate: str, baseline: str, threshold: float, pairwise: bool = False,
            judge: str | None = None) -> int:
    """Print GET /v1/jobs/{candidate}/compare?baseline=: the gate's table of the tested family's deltas, then the
    regressed traces with both sides' values; with `pairwise`, wait for the pairwise judging and print its verdict."""
    comparison = client.compare(candidate, baseline, threshold)
    print(render_comparison(comparison))
    if not pairwise:
        return EXIT_OK
    try:
        judged = client.compare_pairwise(candidate, baseline, judge, _pairwise_progress)
    except KeyboardInterrupt:
        print(f"\nragpulse compare: interrupted; the pairwise run goes on in the service (the same command "
              "answers it when it has ended)", file=sys.stderr)
        return EXIT_INTERRUPTED
    print("\n" + render_pairwise(judged.pairwise))
    return EXIT_FAILED if judged.pairwise is None or judged.pairwise.status == "failed" else EXIT_OK


def _pairwise_progress(pending: PairwisePending) -> None:
    p = pending.progress
    print(f"pairwise judging by {pending.judge} {pending.status}: {p.done + p.failed} of {p.total} items",
          file=sys.stderr)


def render_pairwise(section: Pairwise | None) -> str:
    """The pairwise verdict: which run the judge prefers and how far to trust it (order consistency, p-value)."""
    if section is None:
        return "pairwise: no section in the service's answer"
    if section.status == "failed":
        return f"pairwise judging by {section.judge} failed: {section.error}"
    lines = [f"pairwise judging by {section.judge} ({section.model}, {section.prompt_version}): {section.judged} of "
             f"{section.matched} matched items judged in both orders, {section.identical} identical answers, "
             f"{section.failed} failed",
             f"  candidate wins {section.wins}, baseline wins {section.losses}, ties {section.ties} "
             f"(a verdict that flips with the order is a tie)"]
    if section.win_rate is not None:
        low, high = section.win_rate_ci95 or (section.win_rate, section.win_rate)
        lines.append(f"  candidate win rate {section.win_rate:.2f} [{low:.2f}, {high:.2f}] (0.50: no difference)")
    if section.position_consistency is not None:
        lines.append(f"  order consistency {section.position_consistency:.2f} (low: the verdicts follow the position, "
                     "not the answers)")
    if section.p_value is not None:
        preferred = f"the judge prefers the {section.better}" if section.better else "no significant preference"
        lines.append(f"  sign test p = {section.p_value:.3g} (alpha {section.alpha:g}): {preferred}")
    lines += [f"  not judged, {why}: {n}" for why, n in sorted(section.not_judged.items()) if n]
    lines += [f"  warning: {warning}" for warning in section.warnings]
    if section.spend is not None:
        lines.append(f"  spend: {section.spend.judge_calls} judge calls, ${section.spend.cost_usd:.4f}")
    return "\n".join(lines)


def render_comparison(comparison: Comparison) -> str:
    c, b = comparison.candidate, comparison.baseline
    lines = [f"candidate {c.job_id} (run {c.run or '-'}, {c.variant}) vs baseline {b.job_id} "
             f"(run {b.run or '-'}, {b.variant})",
             f"matched {comparison.matched} traces; {comparison.only_in_baseline} only in the baseline, "
             f"{comparison.only_in_candidate} only in the candidate"]
    lines += [f"warning: {warning}" for warning in comparison.warnings]
    lines += ["", table(check_comparison(comparison, GateConfig())), ""]
    regressed = ", ".join(comparison.significant_regressions) or "none"
    lines.append(f"significant regressions: {regressed}")
    lines.append(f"regressed traces (a drop of at least {comparison.regression_threshold:g}, or a new "
                 f"hallucination): {comparison.regressions_total}")
    lines += [_regression(r) for r in comparison.regressions[:REGRESSIONS_SHOWN]]
    if comparison.regressions_total > REGRESSIONS_SHOWN:
        lines.append(f"  ... and {comparison.regressions_total - REGRESSIONS_SHOWN} more (GET /v1/jobs/"
                     f"{c.job_id}/compare?baseline={b.job_id} lists up to 100)")
    return "\n".join(lines)


def _regression(regression: Regression) -> str:
    return f"  {regression.trace_id} (trace {regression.baseline_index + 1} of the baseline, " \
           f"{regression.candidate_index + 1} of the candidate): " \
           f"{', '.join(regression.reasons)}; baseline {_values(regression.baseline)}; candidate " \
           f"{_values(regression.candidate)}"


def _values(values: dict[str, float | bool | None]) -> str:
    return " ".join(f"{key}={'-' if v is None else v if isinstance(v, bool) else f'{v:.2f}'}"
                    for key, v in values.items())

