"""The `ragpulse` command: `up` runs the stack, `eval` evaluates a trace file against a running service."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

from ragpulse.config import defaults
from ragpulse.config.settings import Settings, log_level
from ragpulse.exceptions import ClientError, ConfigError
from ragpulse.judges import kinds
from ragpulse.model.report import Report
from ragpulse.ops.client import Client, batches, read_traces
from ragpulse.reporting.render import render_report


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
        return 2
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
        description="Post a JSON or JSONL trace file to a running service in batches, wait, and print the report.")
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
                    help="traces per POST; a larger file is posted in several batches")
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
    except (OSError, ValueError, KeyError) as exc:
        print(f"ragpulse eval: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    client = Client(args.server, args.api_key or os.environ.get("RAGPULSE_API_KEY"))
    worst = 0
    try:
        for batch in batches(traces, args.batch_size):
            accepted = client.submit(batch, options)
            for warning in accepted["warnings"]:
                print(f"warning: {warning['message']}", file=sys.stderr)
            job = client.wait(accepted["job_id"], _progress_bar)
            print(file=sys.stderr)
            if job["status"] == "failed":
                print(f"job {job['job_id']} failed: {job['error']}", file=sys.stderr)
                worst = max(worst, 1)
                continue
            print(render_report(msgspec.convert(client.report(job["job_id"]), Report)))
            if job["status"] == "finished_with_errors":
                worst = max(worst, 3)
    except ClientError as exc:
        print(f"ragpulse eval: {exc}", file=sys.stderr)
        return 1
    return worst


def _progress_bar(job: dict[str, Any]) -> None:
    progress = job["progress"]
    total = max(progress["total"], 1)
    finished = progress["done"] + progress["failed"]
    filled = int(30 * finished / total)
    print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {finished}/{total} {job['status']:<22}",
          end="", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
