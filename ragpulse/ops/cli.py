"""The `ragpulse` command: `up` runs the stack, `eval` evaluates a trace file against a running service."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import msgspec

from ragpulse.config import defaults
from ragpulse.config.settings import Settings, log_level
from ragpulse.exceptions import ClientError, ConfigError, TraceFileError, TracesRejected
from ragpulse.judges import kinds
from ragpulse.model.report import Report
from ragpulse.model.results import TERMINAL, TraceResult
from ragpulse.model.trace import BatchOptions
from ragpulse.ops.client import Client, TraceFile, batches, read_traces
from ragpulse.reporting.build import build_report
from ragpulse.reporting.html import failing_traces, render_html
from ragpulse.reporting.render import render_report

EXIT_OK = 0
"""`ragpulse eval`: every trace was evaluated and the report printed."""
EXIT_FAILED = 1
"""A job failed, the service could not be reached, or it answered another error (such as 401 for a wrong key)."""
EXIT_USAGE = 2
"""Bad arguments (argparse's own code), or a trace file that cannot be read, is not valid JSON/JSONL, or holds no
traces."""
EXIT_TRACES_FAILED = 3
"""The report was printed, but some traces failed (it lists them under FAILED TRACES)."""
EXIT_REJECTED = 4
"""The service rejected the traces: schema violations (each named with its trace and line), or a batch over its
limits. Nothing was evaluated."""

_TRACE_PATH = re.compile(r"^\$\.traces\[(\d+)\](.*)$")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows `(default: ...)` after every option that has one; options defaulting to None say theirs in words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ragpulse` console script."""
    args = _parser().parse_args(argv)
    try:
        level = log_level()
    except ConfigError as exc:
        print(f"ragpulse: {exc}", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    return args.run(args)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragpulse", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    up = sub.add_parser(
        "up", formatter_class=_HelpFormatter, help="run Redis, the API and workers with embedded defaults",
        description="Run Redis (private, unless REDIS_URL is set), the API and RQ workers. Prints \"ragpulse is "
                    "up\" once GET /readyz answers 200 and a worker is registered; exits 2 when the port is taken "
                    "or the settings are invalid, 1 when the stack fails to start or keeps crashing.")
    up.add_argument("--host", default=os.environ.get("RAGPULSE_HOST", defaults.DEFAULT_HOST),
                    help="address the API listens on; RAGPULSE_HOST sets the default")
    up.add_argument("--port", type=int, default=int(os.environ.get("RAGPULSE_PORT") or defaults.DEFAULT_PORT),
                    help="port the API listens on; RAGPULSE_PORT sets the default")
    up.add_argument("--workers", type=_positive_int, default=2, help="RQ worker processes")
    up.add_argument("--ready-timeout", type=_positive_float, default=120.0, metavar="SECONDS",
                    help="give up when the API and a worker are not ready within this time")
    up.set_defaults(run=_up)
    ev = sub.add_parser(
        "eval", formatter_class=_HelpFormatter,
        help="post a JSON/JSONL trace file to a running service and print the report",
        description="Post a JSON or JSONL trace file to a running service, wait, and print one report over all "
                    f"its traces. Exit codes: {EXIT_OK} ok; {EXIT_FAILED} a job failed or the service could not "
                    f"be reached or answered an error; {EXIT_USAGE} bad arguments, or the file cannot be read, is "
                    f"not JSON/JSONL or holds no traces; {EXIT_TRACES_FAILED} some traces failed; "
                    f"{EXIT_REJECTED} the service rejected the traces (schema violations, limits).")
    ev.add_argument("file", type=Path, help="a .jsonl file (one trace per line) or a .json file (a list of traces, "
                                             "or an object with a \"traces\" list)")
    ev.add_argument("--server", default=f"http://{defaults.DEFAULT_HOST}:"
                                        f"{os.environ.get('RAGPULSE_PORT') or defaults.DEFAULT_PORT}",
                    help="base URL of the service; its port follows RAGPULSE_PORT when that is set")
    ev.add_argument("--k", type=_positive_int, nargs="+", metavar="K",
                    help="retrieval cutoffs (default: the service's, 1 3 5 10)")
    ev.add_argument("--gain", choices=["linear", "exponential"], help="nDCG gain (default: linear)")
    ev.add_argument("--judge", choices=kinds.names(),
                    help="judge for generation metrics (default: the service's, `anthropic` when it has "
                         "ANTHROPIC_API_KEY, else `local`, an offline heuristic)")
    ev.add_argument("--repeats", type=int, choices=[1, 2],
                    help="2 judges every trace twice and reports agreement (default: 1)")
    ev.add_argument("--batch-size", type=_positive_int, default=defaults.MAX_TRACES_PER_BATCH, metavar="N",
                    help="traces per POST; a larger file is posted as several jobs and still gets one report")
    ev.add_argument("--html", type=Path, metavar="FILE",
                    help="also write the report as one self-contained HTML page to FILE (no script, no external URL; "
                         "default: no page)")
    ev.add_argument("--api-key", help="key sent as `Authorization: Bearer` (default: RAGPULSE_API_KEY)")
    ev.set_defaults(run=_eval)
    return parser


def _up(args: argparse.Namespace) -> int:
    from ragpulse.ops.stack import Stack  # noqa: PLC0415 - only `up` needs process supervision

    try:
        Settings.from_env(host=args.host, port=args.port).check_safe_to_serve()
        return Stack(host=args.host, port=args.port, workers=args.workers, redis_url=os.environ.get("REDIS_URL"),
                     ready_timeout=args.ready_timeout).run()
    except ConfigError as exc:
        print(f"ragpulse up: {exc}", file=sys.stderr)
        return 2


def _eval(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {}
    if args.k:
        options["k"] = args.k
    for name in ("gain", "judge", "repeats"):
        if getattr(args, name):
            options[name] = getattr(args, name)
    try:
        traces = read_traces(args.file)
    except TraceFileError as exc:
        print(f"ragpulse eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    client = Client(args.server, args.api_key or os.environ.get("RAGPULSE_API_KEY"))
    try:
        return _evaluate(client, traces, options, args.batch_size, args.html)
    except TracesRejected:
        return EXIT_REJECTED
    except ClientError as exc:
        print(f"ragpulse eval: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _evaluate(client: Client, file: TraceFile, options: dict[str, Any], size: int, html: Path | None = None) -> int:
    """Post the traces (in several jobs when there are more than `size`), wait, print one report over all (and
    write it as a page to `html`)."""
    parts = list(batches(file.traces, size))
    if len(parts) > 1:
        print(f"posting {len(file.traces)} traces as {len(parts)} jobs of at most {size}; one report covers all",
              file=sys.stderr)
        for offset, part in parts:  # check every batch first, so a bad one does not leave the others running
            _post(client, file, offset, part, options, dry_run=True)
    posted = [(offset, _post(client, file, offset, part, options)) for offset, part in parts]
    jobs = client.wait_all([job_id for _, job_id in posted], _progress_bar)
    print(file=sys.stderr)
    failed = [job for job in jobs if job["status"] == "failed"]
    for job in failed:
        print(f"job {job['job_id']} failed: {job['error']}", file=sys.stderr)
    if failed:
        return EXIT_FAILED
    results = _all_results(client, posted) if html is not None or len(posted) > 1 else []
    if len(posted) == 1:
        report = msgspec.convert(client.report(posted[0][1]), Report)
    else:
        report = build_report(" + ".join(job_id for _, job_id in posted), msgspec.convert(options, BatchOptions),
                              results)
    print(render_report(report))
    if html is not None:
        html.write_text(render_html(report, failing_traces(report, results)), encoding="utf-8")
        print(f"report page written to {html}", file=sys.stderr)
    return EXIT_TRACES_FAILED if any(job["status"] == "finished_with_errors" for job in jobs) else EXIT_OK


def _post(client: Client, file: TraceFile, offset: int, part: list[dict[str, Any]], options: dict[str, Any],
          dry_run: bool = False) -> str:
    """POST one batch; returns its job id. A rejection is reported with each error's trace and line in the file."""
    try:
        accepted = client.submit(part, options, dry_run=dry_run)
    except TracesRejected as exc:
        print(f"ragpulse eval: the service rejected {file.path}: {exc}", file=sys.stderr)
        for error in exc.errors[:50]:
            print(f"  {_locate(error.get('path', ''), offset, file)}: {error.get('message', '')}", file=sys.stderr)
        if exc.status == 413:
            print("  (a smaller --batch-size sends fewer traces per request)", file=sys.stderr)
        raise
    if dry_run:
        return ""
    scope = f" (traces {offset + 1}-{offset + len(part)})" if len(part) < len(file.traces) else ""
    for warning in accepted["warnings"]:
        print(f"warning{scope}: {warning['message']}", file=sys.stderr)
    return accepted["job_id"]


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


def _progress_bar(jobs: list[dict[str, Any]]) -> None:
    total = max(sum(job["progress"]["total"] for job in jobs), 1)
    finished = sum(job["progress"]["done"] + job["progress"]["failed"] + job["progress"].get("skipped", 0)
                   for job in jobs)
    filled = int(30 * min(finished, total) / total)
    print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {finished}/{total} {_status(jobs):<22}",
          end="", file=sys.stderr, flush=True)


def _status(jobs: list[dict[str, Any]]) -> str:
    """One status for several jobs: the worst terminal one once all ended, else running (or queued)."""
    statuses = {job["status"] for job in jobs}
    if statuses <= TERMINAL:
        return next(s for s in ("failed", "finished_with_errors", "finished") if s in statuses)
    return "queued" if statuses == {"queued"} else "running"

if __name__ == "__main__":
    sys.exit(main())
