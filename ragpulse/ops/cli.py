"""The `ragpulse` command: `up` runs the stack, `eval` evaluates a trace file against a running service."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any


from ragpulse.config import defaults
from ragpulse.config.settings import Settings, log_level
from ragpulse.exceptions import ClientError, ConfigError, TraceFileError, TracesRejected
from ragpulse.judges import kinds
from ragpulse.ops.gate import GATE_BAD_INPUT, GATE_FAIL, GATE_PASS, GATE_UNREACHABLE, GateRequest, run_gate
from ragpulse.ops.client import Client, TraceFile, read_traces
from ragpulse.ops.evaluate import evaluate_file
from ragpulse.reporting.html import failing_traces, render_html
from ragpulse.reporting.render import render_report

EXIT_OK = 0
"""`ragpulse eval`: every trace was evaluated and the report printed."""
EXIT_FAILED = 1
"""A job failed, the service could not be reached, or it answered another error (such as 401 for a wrong key, or
a 429 or 5xx still there after the retries), or a body that is not its API's JSON (a proxy's page)."""
EXIT_USAGE = 2
"""Bad arguments (argparse's own code), or a trace file that cannot be read, is not valid JSON/JSONL, or holds no
traces."""
EXIT_TRACES_FAILED = 3
"""The report was printed, but some traces failed (it lists them under FAILED TRACES)."""
EXIT_REJECTED = 4
"""The service rejected the traces: schema violations (each named with its trace and line), or a batch over its
limits. Nothing was evaluated."""

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
    _server_arguments(ev)
    ev.add_argument("--k", type=_positive_int, nargs="+", metavar="K",
                    help="retrieval cutoffs (default: the service's, 1 3 5 10)")
    ev.add_argument("--gain", choices=["linear", "exponential"], help="nDCG gain (default: linear)")
    ev.add_argument("--judge", choices=kinds.names(),
                    help="judge for generation metrics: `openai` is any OpenAI-compatible server the service is "
                         "configured for (default: the service's, `anthropic` when it has ANTHROPIC_API_KEY, else "
                         "`local`, an offline heuristic)")
    ev.add_argument("--repeats", type=int, choices=[1, 2],
                    help="2 judges every trace twice and reports agreement (default: 1)")
    ev.add_argument("--batch-size", type=_positive_int, default=defaults.MAX_TRACES_PER_BATCH, metavar="N",
                    help="traces per POST; a larger file is posted as several jobs and still gets one report")
    ev.add_argument("--html", type=Path, metavar="FILE",
                    help="also write the report as one self-contained HTML page to FILE (no script, no external URL; "
                         "default: no page)")
    ev.set_defaults(run=_eval)
    _gate_parser(sub)
    return parser


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=f"http://{defaults.DEFAULT_HOST}:"
                                            f"{os.environ.get('RAGPULSE_PORT') or defaults.DEFAULT_PORT}",
                        help="base URL of the service; its port follows RAGPULSE_PORT when that is set")
    parser.add_argument("--api-key", help="key sent as `Authorization: Bearer` (default: RAGPULSE_API_KEY)")


def _gate_parser(sub: argparse._SubParsersAction) -> None:
    gate = sub.add_parser(
        "gate", formatter_class=_HelpFormatter,
        help="evaluate a trace file and fail on thresholds or a regression against a baseline (for CI)",
        description="Evaluate FILE against a running service, hold the report to floors and ceilings (a gate "
                    "config, or the defaults recall@5 >= 0.80, hallucination_rate <= 0.10, "
                    "unanswerable_hallucination_rate <= 0.15) and, with a baseline, fail when a metric regressed "
                    f"significantly. Exit codes: {GATE_PASS} pass; {GATE_FAIL} a gate failed; {GATE_BAD_INPUT} bad "
                    f"input or config; {GATE_UNREACHABLE} the service cannot be reached or a job failed.")
    gate.add_argument("file", type=Path, help="the trace file to evaluate (.jsonl or .json, as for `eval`)")
    _server_arguments(gate)
    gate.add_argument("--config", type=Path, metavar="TOML",
                      help="gate config: [options], [thresholds.\"metric\"], [baseline] (default: the built-in "
                           "thresholds)")
    baseline = gate.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", metavar="JOB_ID",
                          help="compare against this finished job (default: no comparison)")
    baseline.add_argument("--baseline-file", type=Path, metavar="FILE",
                          help="evaluate this file first and compare against it (default: no comparison)")
    gate.add_argument("--batch-size", type=_positive_int, default=defaults.MAX_TRACES_PER_BATCH, metavar="N",
                      help="traces per job; a larger file is posted as several jobs")
    gate.add_argument("--junit", type=Path, metavar="FILE", help="also write the verdicts as JUnit XML "
                                                                 "(default: none)")
    gate.add_argument("--github", action="store_true", help="also print GitHub Actions annotations")
    gate.set_defaults(run=_gate)


def _gate(args: argparse.Namespace) -> int:
    return run_gate(GateRequest(
        file=args.file, server=args.server, api_key=args.api_key or os.environ.get("RAGPULSE_API_KEY"),
        config=args.config, baseline_job=args.baseline, baseline_file=args.baseline_file,
        batch_size=args.batch_size, junit=args.junit, github=args.github))


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
        print("ragpulse eval: nothing was evaluated", file=sys.stderr)
        return EXIT_REJECTED
    except ClientError as exc:
        print(f"ragpulse eval: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _evaluate(client: Client, file: TraceFile, options: dict[str, Any], size: int, html: Path | None = None) -> int:
    """Evaluate the file, print one report over all of it (and write it as a page to `html`)."""
    evaluation = evaluate_file(client, file, options, size, want_results=html is not None)
    for job in evaluation.failed_jobs:
        print(f"job {job.job_id} failed: {job.error}", file=sys.stderr)
    if evaluation.report is None:
        return EXIT_FAILED
    print(render_report(evaluation.report))
    if html is not None:
        html.write_text(render_html(evaluation.report, failing_traces(evaluation.report, evaluation.results)),
                        encoding="utf-8")
        print(f"report page written to {html}", file=sys.stderr)
    return EXIT_TRACES_FAILED if evaluation.some_traces_failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
