"""The `ragpulse` command: `up` runs the stack, `eval` evaluates a trace file against a running service, `gate` holds
it to thresholds and a baseline, `wait`, `report` and `compare` follow and read jobs already created, `dataset` pushes
and lists versioned eval sets."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any
from importlib import metadata

from ragpulse.config import defaults
from ragpulse.config.settings import Settings, log_level
from ragpulse.exceptions import (ClientError, ConfigError, Interrupted, OutputFileError, TraceFileError,
                                 TracesRejected)
from ragpulse.judges import kinds
from ragpulse.model.environment import ENVIRONMENTS
from ragpulse.model.trace import DATASET_NAME_PATTERN
from ragpulse.ops.gate import GATE_BAD_INPUT, GATE_FAIL, GATE_PASS, GATE_UNREACHABLE, GateRequest, run_gate
from ragpulse.ops.client import Client, TraceFile, read_traces
from ragpulse.ops.data_dir import default_data_dir
from ragpulse.ops.eval_options import choose_options
from ragpulse.ops.evaluate import evaluate_file, interrupted, refused_options
from ragpulse.ops.exit_codes import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED, EXIT_TRACES_FAILED,
                                     EXIT_USAGE)
from ragpulse.ops import dataset_commands, job_commands
from ragpulse.ops.output_file import check_writable, write_output
from ragpulse.reporting.html import failing_traces, render_html
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
        return EXIT_USAGE
    logging.basicConfig(level=level, format=defaults.LOG_FORMAT)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        return args.run(args)
    except KeyboardInterrupt:  # before any job was created (a job's command says what runs on itself)
        print("\nragpulse: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def server_url(args: argparse.Namespace) -> str:
    """--server, else http://127.0.0.1:$RAGPULSE_PORT (8080 when unset); ConfigError for an invalid RAGPULSE_PORT."""
    if args.server:
        return args.server
    port = Settings.from_env({"RAGPULSE_PORT": os.environ.get("RAGPULSE_PORT", "")}).port
    return f"http://{defaults.DEFAULT_HOST}:{port}"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to {defaults.MAX_PORT}, got {text!r}") \
            from None
    if not 1 <= value <= defaults.MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to {defaults.MAX_PORT}, got {value}")
    return value


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


def _dataset_ref(text: str) -> dict[str, Any]:
    """`faq:3` as a batch's `dataset` ({"name": "faq", "version": 3})."""
    name, _, version = text.rpartition(":")
    if not name or not version.isdigit() or int(version) < 1:
        raise argparse.ArgumentTypeError(f"must be NAME:VERSION (e.g. faq:3), got {text!r}")
    return {"name": name, "version": int(version)}


def _dataset_target(text: str) -> tuple[str, int | None]:
    """`faq` (the whole dataset) or `faq:3` (one version) for `dataset delete`."""
    name, colon, version = text.partition(":")
    if not re.fullmatch(DATASET_NAME_PATTERN, name) or (colon and not (version.isdigit() and int(version) >= 1)):
        raise argparse.ArgumentTypeError(f"must be NAME or NAME:VERSION (e.g. faq or faq:3), got {text!r}")
    return name, int(version) if colon else None


def _dataset_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", type=_dataset_ref, metavar="NAME:VERSION",
                        help="bind the batch to this dataset version: traces name items by item_id and take their "
                             "labels from it (default: the JSON file's own \"dataset\", else none)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragpulse", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {metadata.version('ragpulse')}")
    sub = parser.add_subparsers(required=True, metavar="COMMAND", dest="command_name")
    up = sub.add_parser(
        "up", formatter_class=_HelpFormatter, help="run Redis, the API and workers with embedded defaults",
        description="Run Redis (private, unless REDIS_URL is set), the API and RQ workers. Prints \"ragpulse is "
                    "up\" once GET /readyz answers 200 and a worker is registered, saying where the data lives (a "
                    "data directory, unless --ephemeral or REDIS_URL); exits 2 when the port is taken or invalid, "
                    "another stack holds the data directory, or the settings are invalid, 1 when the stack fails to "
                    "start or keeps crashing.")
    up.add_argument("--host", default=os.environ.get("RAGPULSE_HOST", defaults.DEFAULT_HOST),
                    help="address the API listens on; RAGPULSE_HOST sets the default")
    up.add_argument("--port", type=_port, help="port the API listens on, 1 to 65535 (default: RAGPULSE_PORT, "
                                               f"else {defaults.DEFAULT_PORT})")
    up.add_argument("--workers", type=_positive_int, default=2, help="RQ worker processes")
    up.add_argument("--ready-timeout", type=_positive_float, default=120.0, metavar="SECONDS",
                    help="give up when the API and a worker are not ready within this time")
    data = up.add_mutually_exclusive_group()
    data.add_argument("--data-dir", type=Path, metavar="DIR",
                      help="where the private Redis keeps its data across restarts, locked against a second stack "
                           "(default: RAGPULSE_DATA_DIR, else $XDG_DATA_HOME/ragpulse or ~/.local/share/ragpulse); "
                           "does not apply with REDIS_URL")
    data.add_argument("--ephemeral", action="store_true",
                      help="keep nothing: the private Redis's data is gone when the stack stops")
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
    ev.add_argument("--judge", choices=[*kinds.names(), *kinds.ALIASES],
                    help="judge for generation metrics: `openai` is any OpenAI-compatible server the service is "
                         "configured for; `heuristic` an offline heuristic whose accuracy on your data is "
                         "unmeasured (`local` is its deprecated name) (default: the service's, `anthropic` when it "
                         "has ANTHROPIC_API_KEY, else `none`: generation metrics not judged)")
    ev.add_argument("--repeats", type=int, choices=[1, 2],
                    help="2 judges every trace twice and reports agreement (default: 1)")
    ev.add_argument("--environment", choices=ENVIRONMENTS,
                    help="where the traces were produced (default: evaluation: counted apart, never in the app's "
                         "production monitor or alerts; production only to replay traffic never sent to the service)")
    ev.add_argument("--delivery", choices=["interactive", "batch"],
                    help="batch: the judge requests go to the provider's batch API at half price, results within 24 "
                         "hours (default: interactive)")
    ev.add_argument("--batch-size", type=_positive_int, default=defaults.MAX_TRACES_PER_BATCH, metavar="N",
                    help="traces per POST; a larger file is posted as several jobs and still gets one report")
    ev.add_argument("--html", type=Path, metavar="FILE",
                    help="also write the report as one self-contained HTML page to FILE (no script, no external URL; "
                         "default: no page)")
    _dataset_argument(ev)
    ev.set_defaults(run=_eval)
    _gate_parser(sub)
    _job_parsers(sub)
    _dataset_parser(sub)
    _judge_parser(sub)
    return parser


def _judge_parser(sub: argparse._SubParsersAction) -> None:
    judge = sub.add_parser("judge", formatter_class=_HelpFormatter, help="qualify a judge on the shipped suite",
                           description="Judge tools. `qualify` runs a judge over the labelled suite shipped with "
                                       "ragpulse and prints accuracy, sensitivity, specificity and kappa with 95% "
                                       "intervals, per split and per failure class, and the verdict.")
    actions = judge.add_subparsers(required=True, metavar="ACTION", dest="judge_action")
    qualify = actions.add_parser(
        "qualify", formatter_class=_HelpFormatter, help="measure a judge on the shipped suite",
        description="Judge every suite item (or --limit of them, spread over the suite) and hold the judge to the "
                    "qualification floors (kappa >= 0.6 with its interval above 0.4, sensitivity and specificity "
                    ">= 0.7). Without --server it runs in this process with this environment's judge settings; with "
                    "--server the service runs it as a job and keeps the result. Exit codes: 0 qualified; 1 not "
                    "qualified, or the run or the service failed; 2 bad arguments or a judge not configured.")
    qualify.add_argument("--judge", choices=kinds.judging_names(),
                         help="the judge to qualify (default: RAGPULSE_JUDGE's, or the service's)")
    qualify.add_argument("--limit", type=_positive_int, metavar="N",
                         help="judge only N items, spread over the suite (default: every item)")
    qualify.add_argument("--split", choices=("tune", "held_out", "all"), default="all",
                         help="held_out items are never used to tune a prompt: report those as the judge's figures")
    _server_arguments(qualify)
    qualify.set_defaults(run=_qualify)


def _qualify(args: argparse.Namespace) -> int:
    from ragpulse.ops import qualify_command  # noqa: PLC0415 - loads the suite and the judges only when asked

    if args.server:
        args.command = lambda client, args: qualify_command.run_remote(client, args.judge, args.split, args.limit)
        code = _job_command(args)
        return qualify_command.BAD_ARGS if code == EXIT_USAGE else code
    return qualify_command.run_local(args.judge, args.split, args.limit)


def _dataset_parser(sub: argparse._SubParsersAction) -> None:
    dataset = sub.add_parser(
        "dataset", formatter_class=_HelpFormatter,
        help="push a JSONL eval set as a new dataset version, list datasets, or delete one",
        description="Versioned eval datasets (POST and GET /v1/datasets). `push NAME FILE.jsonl` sends one item per "
                    "line as the dataset's next immutable version and prints its number, content hash and counts; "
                    "`list` prints every dataset with its latest version; `delete NAME` removes a dataset and all its "
                    "versions, `delete NAME:VERSION` one version (jobs that ran it keep their results). Exit codes: "
                    f"{EXIT_OK} done; {EXIT_FAILED} the service could not be reached or answered an error; "
                    f"{EXIT_USAGE} bad arguments, or the file cannot be read or has a line that is not an item (named "
                    f"by its line); {EXIT_REJECTED} the service rejected the items (each named with its line).")
    actions = dataset.add_subparsers(required=True, metavar="ACTION", dest="dataset_action",
                                     help="push (a new version from a JSONL file), list or delete")
    push = actions.add_parser("push", formatter_class=_HelpFormatter, help="push FILE as the next version of NAME")
    push.add_argument("name", metavar="NAME", help="the dataset's name (made by its first push)")
    push.add_argument("file", type=Path, metavar="FILE", help="a .jsonl file, one item per line: item_id, query, "
                                                              "gold_doc_ids or relevance, reference_answer or "
                                                              "key_facts, answerable, question_type, source, split")
    push.add_argument("--description", metavar="TEXT", help="a note kept with the version (default: none)")
    _server_arguments(push)
    push.set_defaults(run=_job_command, command=lambda client, args: dataset_commands.push(
        client, args.name, args.file, args.description))
    listing = actions.add_parser("list", formatter_class=_HelpFormatter, help="list datasets and their latest version")
    _server_arguments(listing)
    listing.set_defaults(run=_job_command, command=lambda client, args: dataset_commands.list_datasets(client))
    removal = actions.add_parser("delete", formatter_class=_HelpFormatter,
                                 help="delete a dataset (NAME) or one of its versions (NAME:VERSION)")
    removal.add_argument("target", type=_dataset_target, metavar="NAME[:VERSION]",
                         help="the dataset, or one version of it as `ragpulse dataset list` prints them")
    _server_arguments(removal)
    removal.set_defaults(run=_job_command, command=lambda client, args: dataset_commands.delete(
        client, *args.target))


def _job_parsers(sub: argparse._SubParsersAction) -> None:
    codes = (f"Exit codes as `eval`'s: {EXIT_OK} finished; {EXIT_TRACES_FAILED} finished with failed traces; "
             f"{EXIT_FAILED} the job failed (or has not ended), or the service could not be reached or answered an "
             f"error (404 for a job it does not know); {EXIT_USAGE} bad arguments.")
    wait = sub.add_parser("wait", formatter_class=_HelpFormatter, help="wait for a job to end and print its status",
                          description=f"Poll the job until it ends, then print its status line. {codes}")
    wait.add_argument("job", metavar="JOB", help="the job id (as `eval` and `gate` print it)")
    _server_arguments(wait)
    wait.set_defaults(run=_job_command, command=lambda client, args: job_commands.wait(client, args.job))
    report = sub.add_parser("report", formatter_class=_HelpFormatter, help="print an ended job's report",
                            description=f"Print the report of an ended job as `eval` prints it. {codes}")
    report.add_argument("job", metavar="JOB", help="the job id")
    _server_arguments(report)
    report.add_argument("--html", type=Path, metavar="FILE",
                        help="also write the service's report page to FILE (default: no page)")
    report.set_defaults(run=_job_command,
                        command=lambda client, args: job_commands.report(client, args.job, args.html))
    compare = sub.add_parser(
        "compare", formatter_class=_HelpFormatter, help="compare a job against a baseline job, trace by trace",
        description="Print GET /v1/jobs/CANDIDATE/compare?baseline=BASELINE: the tested metrics' paired deltas "
                    "with intervals and verdicts as `gate` prints them, and the regressed traces with both sides. "
                    f"Exit codes: {EXIT_OK} printed (whatever the verdicts: `gate` exits on them); {EXIT_FAILED} the "
                    f"service could not be reached or answered an error (404 for a job it does not know), or the "
                    f"pairwise run failed; {EXIT_INTERRUPTED} interrupted while waiting for it; {EXIT_USAGE} bad "
                    "arguments.")
    compare.add_argument("candidate", metavar="CANDIDATE", help="the job id to judge")
    compare.add_argument("baseline", metavar="BASELINE", help="the job id to compare it against")
    _server_arguments(compare)
    compare.add_argument("--threshold", type=_positive_float, default=defaults.COMPARE_REGRESSION_THRESHOLD,
                         help="a trace's recall@k or nDCG@k drop that lists it as regressed")
    compare.add_argument("--pairwise", action="store_true",
                         help="also have an LLM judge compare the two runs' answers item by item, in both orders, "
                              "and wait for its verdict (2 judge calls per matched item, at most "
                              "RAGPULSE_PAIRWISE_MAX_PAIRS items)")
    compare.add_argument("--judge", choices=("anthropic", "openai"),
                         help="the pairwise judge (default: the candidate batch's judge, else the service's)")
    compare.set_defaults(run=_job_command, command=lambda client, args: job_commands.compare(
        client, args.candidate, args.baseline, args.threshold, args.pairwise, args.judge))


def _job_command(args: argparse.Namespace) -> int:
    """Run `wait`, `report`, `compare` or `dataset` with a Client for --server and --api-key."""
    name = " ".join(["ragpulse", args.command_name, *([args.dataset_action] if "dataset_action" in args else [])])
    try:
        client = Client(server_url(args), args.api_key or os.environ.get("RAGPULSE_API_KEY"))
    except ConfigError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.command(client, args)
    except ClientError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OutputFileError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", help="base URL of the service (default: http://127.0.0.1:$RAGPULSE_PORT, "
                                         f"port {defaults.DEFAULT_PORT} when RAGPULSE_PORT is unset)")
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
    _dataset_argument(gate)
    gate.set_defaults(run=_gate)


def _gate(args: argparse.Namespace) -> int:
    try:
        server = server_url(args)
    except ConfigError as exc:
        print(f"ragpulse gate: {exc}", file=sys.stderr)
        return GATE_BAD_INPUT
    return run_gate(GateRequest(
        file=args.file, server=server, api_key=args.api_key or os.environ.get("RAGPULSE_API_KEY"),
        config=args.config, baseline_job=args.baseline, baseline_file=args.baseline_file,
        batch_size=args.batch_size, junit=args.junit, github=args.github, dataset=args.dataset))


def _up(args: argparse.Namespace) -> int:
    from ragpulse.ops.stack import Stack  # noqa: PLC0415 - only `up` needs process supervision

    up_log = logging.getLogger("ragpulse.up")  # its own few lines ("is up", where the data lives) at any level
    up_log.setLevel(min(up_log.getEffectiveLevel(), logging.INFO))
    try:
        settings = Settings.from_env(host=args.host, **({"port": args.port} if args.port else {}))
        settings.check_safe_to_serve()
        redis_url = os.environ.get("REDIS_URL")
        return Stack(host=settings.host, port=settings.port, workers=args.workers, redis_url=redis_url,
                     ready_timeout=args.ready_timeout, data_dir=_data_dir(args, settings, redis_url)).run()
    except ConfigError as exc:
        print(f"ragpulse up: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _data_dir(args: argparse.Namespace, settings: Settings, redis_url: str | None) -> Path | None:
    """Where the private Redis keeps its data: --data-dir, RAGPULSE_DATA_DIR, else the platform's default; None when
    ephemeral or when REDIS_URL names an external Redis (which keeps the data itself: said when a flag asked)."""
    if redis_url:
        if args.data_dir or args.ephemeral:
            flag = "--data-dir" if args.data_dir else "--ephemeral"
            logging.getLogger("ragpulse.up").warning("%s does not apply: REDIS_URL points at an external Redis, which "
                                                     "keeps (or drops) the data itself", flag)
        return None
    if args.ephemeral:
        return None
    return (args.data_dir.expanduser().absolute() if args.data_dir else None) or settings.data_dir \
        or default_data_dir()


def _eval(args: argparse.Namespace) -> int:
    flags: dict[str, Any] = {name: getattr(args, name) for name in ("k", "gain", "judge", "repeats", "environment",
                                                                    "delivery")
                             if getattr(args, name)}
    try:
        if args.html is not None:
            check_writable("--html", args.html)
        server = server_url(args)
        traces = read_traces(args.file)
        if args.dataset is not None:
            traces.dataset = args.dataset
    except (ConfigError, TraceFileError, OutputFileError) as exc:
        print(f"ragpulse eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    options, origins = choose_options(traces.options, flags, args.file)
    if origins:
        print(origins, file=sys.stderr)
    client = Client(server, args.api_key or os.environ.get("RAGPULSE_API_KEY"))
    try:
        return _evaluate(client, traces, options, args.batch_size, args.html)
    except TracesRejected as exc:
        print("ragpulse eval: nothing was evaluated", file=sys.stderr)
        return EXIT_USAGE if refused_options(exc) else EXIT_REJECTED
    except Interrupted as exc:
        print(interrupted("ragpulse eval", client, exc.job_ids, exc.in_flight), file=sys.stderr)
        return EXIT_INTERRUPTED
    except ClientError as exc:
        print(f"ragpulse eval: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OutputFileError as exc:
        print(f"ragpulse eval: {exc}; the report above was printed, but no page was written", file=sys.stderr)
        return EXIT_USAGE


def _evaluate(client: Client, file: TraceFile, options: dict[str, Any], size: int, html: Path | None = None) -> int:
    """Evaluate the file, print one report over all of it (and write it as a page to `html`)."""
    evaluation = evaluate_file(client, file, options, size, want_results=html is not None)
    for job in evaluation.failed_jobs:
        print(f"job {job.job_id} failed: {job.error}", file=sys.stderr)
    if evaluation.report is None:
        return EXIT_FAILED
    print(render_report(evaluation.report))
    if html is not None:
        failing = failing_traces(evaluation.report, evaluation.results)
        queries = {r.index: str(file.traces[r.index].get("query", "")) for r in failing
                   if 0 <= r.index < len(file.traces)}
        write_output("--html", html, render_html(evaluation.report, failing, queries))
        print(f"report page written to {html}", file=sys.stderr)
    return EXIT_TRACES_FAILED if evaluation.some_traces_failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
