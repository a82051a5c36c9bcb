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
from ragpulse.ops.client import Client, batches, read_traces
from ragpulse.exceptions import ClientError, ConfigError
from ragpulse.judges import kinds
from ragpulse.model.report import Report
from ragpulse.reporting.render import render_report
from ragpulse.config.settings import Settings


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ragpulse` console script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    return args.run(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragpulse", description=__doc__)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    up = sub.add_parser("up", help="run Redis, the API and workers with embedded defaults")
    up.add_argument("--host", default=os.environ.get("RAGPULSE_HOST", defaults.DEFAULT_HOST))
    up.add_argument("--port", type=int, default=int(os.environ.get("RAGPULSE_PORT", defaults.DEFAULT_PORT)))
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--ready-timeout", type=float, default=120.0, metavar="SECONDS",
                    help="give up when the API and a worker are not ready within this time")
    up.set_defaults(run=_up)
    ev = sub.add_parser("eval", help="post a JSON/JSONL trace file to a running service and print the report")
    ev.add_argument("file", type=Path)
    ev.add_argument("--server", default=f"http://{defaults.DEFAULT_HOST}:{defaults.DEFAULT_PORT}")
    ev.add_argument("--k", type=int, nargs="+", help="retrieval cutoffs (default 1 3 5 10)")
    ev.add_argument("--gain", choices=["linear", "exponential"])
    ev.add_argument("--judge", choices=kinds.names(),
                    help="judge for generation metrics (default: the service's; `local` is an offline heuristic)")
    ev.add_argument("--repeats", type=int, choices=[1, 2], help="2 judges every trace twice and reports agreement")
    ev.add_argument("--batch-size", type=int, default=defaults.MAX_TRACES_PER_BATCH)
    ev.add_argument("--api-key", default=os.environ.get("RAGPULSE_API_KEY"))
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
    client = Client(args.server, args.api_key)
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
