"""`ragpulse eval` and `ragpulse up` as a user meets them: options and their help, trace-file errors, one report
over several batches, and every exit code, against real API and worker processes."""

from __future__ import annotations

import argparse
import io
import json
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import msgspec
import pytest

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.exceptions import ConfigError, Interrupted
from ragpulse.judges import kinds
from ragpulse.model.results import Accepted, JobView
from ragpulse.ops import gate as gate_command
from ragpulse.ops import cli
from ragpulse.ops.client import Client, TraceFile
from ragpulse.ops.evaluate import evaluate_file, interrupted
from ragpulse.ops.progress import Progress
from tests.fake_anthropic import FakeAnthropic, Fault
from tests.fake_api import HTML, Answer, FakeApi
from tests.support import ROOT, child_env, spawn, start_api, start_worker, wait_for_line

if TYPE_CHECKING:
    from tests.conftest import LiveStack

EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
README = (ROOT / "README.md").read_text()


def ragpulse_eval(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "eval", *map(str, args)], capture_output=True,
                          text=True, timeout=180, cwd=ROOT, env=env or child_env("unused"))


def subparsers() -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options_of(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


# -- options, help and the README -------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["up", "eval", "gate", "wait", "report", "compare"])
def test_every_option_has_help_showing_its_default(command: str) -> None:
    parser = subparsers()[command]
    formatter = parser.formatter_class(prog=parser.prog)
    for action in [*options_of(parser), *[a for a in parser._actions if not a.option_strings]]:
        assert action.help, f"{command} {action.dest} has no help"
    for action in options_of(parser):
        shown = formatter._get_help_string(action) % {"default": action.default}
        assert "default" in shown, f"`ragpulse {command} --help` does not show the default of {action.dest}"
    assert "(default: 10000)" in re.sub(r"\s+", " ", subparsers()["eval"].format_help())


def test_help_never_shows_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_API_KEY", "s3cret-key")
    assert "s3cret-key" not in subparsers()["eval"].format_help()


def test_eval_server_defaults_to_ragpulse_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGPULSE_PORT", raising=False)
    assert cli.server_url(cli._parser().parse_args(["eval", "f.jsonl"])) == "http://127.0.0.1:8080"
    monkeypatch.setenv("RAGPULSE_PORT", "9123")
    assert cli.server_url(cli._parser().parse_args(["eval", "f.jsonl"])) == "http://127.0.0.1:9123"
    assert cli.server_url(cli._parser().parse_args(["eval", "f.jsonl", "--server", "http://h:1"])) == "http://h:1"


def test_readme_synopsis_names_every_commands_arguments_and_options() -> None:
    assert {"up", "eval", "gate", "wait", "report", "compare"} <= set(subparsers())
    for command, parser in subparsers().items():
        found = re.search(rf"`ragpulse {command} ([^`]*)`", README)
        assert found, f"README has no synopsis `ragpulse {command} ...`"
        synopsis = found.group(1)
        for action in options_of(parser):
            assert action.option_strings[-1] in synopsis, f"README's `ragpulse {command}` lacks {action.option_strings}"
        for action in parser._actions:
            if not action.option_strings:
                assert (action.metavar or action.dest.upper()) in synopsis, f"README's `ragpulse {command}` lacks " \
                                                                            f"{action.dest}"


def test_top_level_help_describes_every_command_in_one_line() -> None:
    shown = re.sub(r"\s+", " ", cli._parser().format_help())
    [action] = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    described = {choice.dest: choice.help for choice in action._choices_actions}
    for command in subparsers():
        assert described.get(command), f"`ragpulse --help` does not describe {command}"
        one_line = re.sub(r"\s+", " ", described[command])
        assert f" {command} {one_line}" in shown, command
    assert "--version" in shown


def test_readme_settings_table_lists_every_variable_the_cli_reads() -> None:
    table = README[README.index("## Configuration"):README.index("## Tests")]
    sources = "".join((ROOT / "ragpulse" / "ops" / name).read_text() for name in ("cli.py", "stack.py"))
    read = set(re.findall(r"environ\.get\(\s*[\"'](RAGPULSE_\w+)", sources)) | {"RAGPULSE_LOG_LEVEL"}
    assert {"RAGPULSE_API_KEY", "RAGPULSE_PORT", "RAGPULSE_HOST"} <= read
    assert not [name for name in read if f"`{name}`" not in table]


def test_readme_lists_every_exit_code() -> None:
    codes = {value for name, value in vars(cli).items() if name.startswith("EXIT_")}
    assert codes == {0, 1, 2, 3, 4, 130}
    listed = {int(code) for code in re.findall(r"^- \*\*(\d+)\*\* ", README, re.M)}
    assert listed == codes
    gate = {value for name, value in vars(gate_command).items() if name.startswith("GATE_")}
    section = README[README.index("## Gate a release"):README.index("## Judges")]
    assert {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)} == gate == {0, 1, 2, 3, 130}


# -- trace files: exit 2 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "content", "says"), [
    ("empty.jsonl", "", "is empty: no traces to evaluate"),
    ("blank.jsonl", "\n   \n\n", "holds only blank lines: no traces to evaluate"),
    ("empty.json", "[]", "holds an empty list: no traces to evaluate"),
    ("empty-object.json", '{"traces": []}', "holds an empty list: no traces to evaluate"),
])
def test_a_file_without_traces_exits_2(tmp_path: Path, name: str, content: str, says: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    result = ragpulse_eval(path, "--server", "http://127.0.0.1:9")   # never contacted
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert result.stdout == ""


def test_a_jsonl_error_names_the_files_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"query": "fine"}\n\n{"query": }\n')
    result = ragpulse_eval(path, "--server", "http://127.0.0.1:9")
    assert result.returncode == 2
    assert f"{path}, line 3, column 11: not valid JSON: Expecting value" in result.stderr, result.stderr
    path.write_text('{"query": "fine"}\n["not", "a", "trace"]\n')
    result = ragpulse_eval(path, "--server", "http://127.0.0.1:9")
    assert result.returncode == 2 and "line 2: expected a JSON object (one trace per line), got a list" in result.stderr


def test_a_json_error_names_the_line_and_an_unreadable_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"query": "a"},\n  {"query" "b"}\n]\n')
    result = ragpulse_eval(path, "--server", "http://127.0.0.1:9")
    assert result.returncode == 2
    assert "line 3, column 12: not valid JSON: Expecting ':' delimiter" in result.stderr, result.stderr
    result = ragpulse_eval(tmp_path / "missing.jsonl", "--server", "http://127.0.0.1:9")
    assert result.returncode == 2 and "cannot read" in result.stderr and "No such file" in result.stderr


def test_bad_arguments_exit_2() -> None:
    result = ragpulse_eval(EXAMPLES, "--batch-size", "0")
    assert result.returncode == 2 and "--batch-size" in result.stderr


# -- against a running service: exits 0 and 4 -------------------------------------------------------------------

def report_body(stdout: str) -> str:
    """The report without its first line (the job ids) and its judge-corrected lines: the service adds those from its
    label store when a job's report is read, and a report assembled here from several jobs has none."""
    assert stdout.startswith("job ")
    return "".join(line for line in stdout.split("\n", 1)[1].splitlines(keepends=True) if "judge-corrected" not in line)


@pytest.mark.integration
def test_a_file_over_batch_size_gets_one_report_over_all_traces(stack: LiveStack) -> None:
    whole = ragpulse_eval(EXAMPLES, "--server", stack.url, "--judge", "local")
    split = ragpulse_eval(EXAMPLES, "--server", stack.url, "--judge", "local", "--batch-size", "20")
    assert whole.returncode == 0 and split.returncode == 0, split.stderr
    assert "as 4 jobs of at most 20" in split.stderr and "65/65 finished" in split.stderr
    assert "\r" not in split.stderr + whole.stderr                  # stderr is no terminal: plain progress lines
    assert len(re.findall(r"^job [0-9a-f]{32} created: ", split.stderr, re.M)) == 4
    assert split.stdout.count("DIAGNOSTIC MATRIX") == 1 and "traces: total 65, ok 65" in split.stdout
    assert len(re.findall(r"[0-9a-f]{32}", split.stdout.splitlines()[0])) == 4
    # The same numbers, intervals included, as the service's own report over the whole file in one job.
    assert report_body(split.stdout) == report_body(whole.stdout)


@pytest.mark.integration
def test_html_writes_the_report_page_of_the_printed_report(stack: LiveStack, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    result = ragpulse_eval(EXAMPLES, "--server", stack.url, "--judge", "local", "--batch-size", "40", "--html", page)
    assert result.returncode == 0, result.stderr
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "<script" not in html and "Offline heuristic judge" in html
    faithfulness = re.search(r"faithfulness\s+(\d\.\d{3})", result.stdout).group(1)   # the printed report's figure
    assert re.search(rf"data-metric='faithfulness'><td>faithfulness</td><td class=num data-mean='[0-9.]+'>"
                     rf"{faithfulness}<", html)
    assert html.count("class=trace ") >= 5                                   # failing traces with their claims
    questions = re.findall(r"<p class=question data-question><span class=verdict>question</span> ([^<]+)</p>", html)
    assert len(questions) == html.count("class=trace ")                     # each card shows the user's question
    file_queries = {json.loads(line)["query"] for line in EXAMPLES.read_text().splitlines() if line.strip()}
    assert {unescape(q) for q in questions} <= file_queries


@pytest.mark.integration
def test_traces_the_service_rejects_exit_4_naming_their_lines(stack: LiveStack, tmp_path: Path) -> None:
    lines = EXAMPLES.read_text().splitlines()[:30]
    lines[24] = json.dumps({"answer": "no query"})                      # trace 25, in the second batch of 20
    lines.insert(5, "")                                                  # so trace 25 is on line 26
    path = tmp_path / "invalid.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = ragpulse_eval(path, "--server", stack.url, "--judge", "local", "--batch-size", "20")
    assert result.returncode == 4, result.stderr
    assert "HTTP 422" in result.stderr
    assert "trace 25 (line 26): $.traces[24]: Object missing required field `query`" in result.stderr
    assert result.stdout == "" and "\r[" not in result.stderr        # no progress bar: no job was posted


# -- against a judging service: exits 1 and 3 -------------------------------------------------------------------

@pytest.fixture(scope="module")
def judged(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeAnthropic]]:
    """An API and a worker judging with `anthropic` against a fake Messages API."""
    tmp = tmp_path_factory.mktemp("cli-judged")
    with FakeAnthropic() as fake:
        env = {"RAGPULSE_QUEUE": f"cli-{uuid.uuid4().hex[:8]}", "ANTHROPIC_API_KEY": "test-key",
               "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_JUDGE_MAX_RETRIES": "1"}
        url, api = start_api(redis_url, tmp, env)
        worker = start_worker(redis_url, tmp, env, name="cli")
        try:
            yield url, fake
        finally:
            for proc in (api, worker):
                proc.stop()


def trace(query: str) -> dict[str, object]:
    return {"query": query, "answer": "Fine.", "retrieved_docs": [{"id": "a", "text": "Fine."}],
            "gold_doc_ids": ["a"]}


@pytest.mark.integration
def test_some_failed_traces_exit_3_with_the_report(judged: tuple[str, FakeAnthropic], tmp_path: Path) -> None:
    url, fake = judged
    bad = f"broken judge output {uuid.uuid4().hex}"
    fake.push_for(bad, Fault(tool_input={"claims": 3}), Fault(tool_input={"claims": 4}))
    path = tmp_path / "traces.json"
    path.write_text(json.dumps({"traces": [trace(bad), trace("fine")]}))
    result = ragpulse_eval(path, "--server", url, "--judge", "anthropic")
    assert result.returncode == 3, result.stderr
    assert "traces: total 2, ok 1, failed 1" in result.stdout and "FAILED TRACES" in result.stdout


@pytest.mark.integration
def test_a_failed_job_exits_1(judged: tuple[str, FakeAnthropic], tmp_path: Path) -> None:
    url, fake = judged
    query = f"auth {uuid.uuid4().hex}"
    fake.push_for(query, Fault(status=401))
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(trace(query)) + "\n")
    result = ragpulse_eval(path, "--server", url, "--judge", "anthropic")
    assert result.returncode == 1, result.stderr
    assert re.search(r"job [0-9a-f]{32} failed: .*rejected the credentials", result.stderr)
    assert result.stdout == ""


# -- a broken server: exit 1 as documented (3 is "some traces failed"), never a traceback -------------------------

def eval_in_process(api: FakeApi, tmp_path: Path) -> int:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"query": "q", "retrieved_docs": [{"id": "d"}], "gold_doc_ids": ["d"]}) + "\n")
    return cli.main(["eval", str(path), "--server", api.url])


@pytest.mark.parametrize(("route", "answer"), [
    ("submit", Answer(200, HTML, content_type="text/html")),
    ("job", Answer(200, b'{"status": "finished"}')),
    ("report", Answer(200, HTML, content_type="text/html")),
    ("job", Answer(429, headers={"retry-after": "0"})),
])
def test_eval_against_a_broken_server_exits_1_without_a_traceback(
        route: str, answer: Answer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(defaults, "CLIENT_BACKOFF_SECONDS", 0.01)
    with FakeApi() as api:
        api.push(route, *[answer] * (defaults.CLIENT_RETRIES + 1))
        assert eval_in_process(api, tmp_path) == cli.EXIT_FAILED   # before: an uncaught error on the 200s
    err = capsys.readouterr().err
    assert "ragpulse eval: " in err and ("not the API's JSON" in err or "HTTP 429" in err)


def test_eval_retries_one_503_while_polling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApi() as api:
        api.push("job", Answer(503, headers={"retry-after": "0"}))
        assert eval_in_process(api, tmp_path) == cli.EXIT_OK       # before: 1 at once
    assert "recall@5" in capsys.readouterr().out


def test_readme_settings_table_lists_every_variable_the_service_reads() -> None:
    table = README[README.index("## Configuration"):README.index("## Tests")]
    source = (ROOT / "ragpulse" / "config" / "settings.py").read_text()
    read = set(re.findall(r"[\"'](RAGPULSE_[A-Z0-9_]+)[\"']", source))
    assert {"RAGPULSE_OTLP_SETTLE_SECONDS", "RAGPULSE_ONLINE_MAX_BACKLOG"} <= read
    def listed(name: str) -> bool:
        """`RAGPULSE_X_Y`, or a row naming `RAGPULSE_X...` with the abbreviation `_Y` (`.. / _TEMPERATURE`)."""
        if f"`{name}`" in table:
            return True
        cuts = [i for i, ch in enumerate(name) if ch == "_"]
        return any(f"`{name[:i]}" in line and f"`{name[i:]}`" in line for line in table.splitlines() for i in cuts)

    missing = sorted(name for name in read if not listed(name))
    assert not missing, f"README's Configuration table lacks {missing}"


# -- ports: 1 to 65535, or exit 2 naming the setting (issue 25, defect 1) -----------------------------------------

UP = [sys.executable, "-m", "ragpulse.ops.cli", "up"]


@pytest.mark.parametrize("port", ["70000", "65536", "0", "-1", "http"])
def test_a_port_out_of_range_exits_2_naming_the_setting(port: str, tmp_path: Path) -> None:
    """Before: `--port 70000` announced :70000 and listened on 4464 (70000 - 65536)."""
    env = {**child_env("unused"), "TMPDIR": str(tmp_path)}
    env.pop("REDIS_URL")
    flag = subprocess.run([*UP, f"--port={port}", "--ephemeral"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, env=env)
    assert flag.returncode == 2, flag.stderr
    assert "argument --port: must be a port number from 1 to 65535" in flag.stderr
    for command in (["up", "--ephemeral"], ["eval", str(EXAMPLES)], ["gate", str(EXAMPLES)]):
        run = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", *command], capture_output=True, text=True,
                             timeout=60, cwd=ROOT, env={**env, "RAGPULSE_PORT": port})
        assert run.returncode == 2, (command, run.stderr)
        assert "RAGPULSE_PORT must be" in run.stderr and "Traceback" not in run.stderr, run.stderr
        assert "is up" not in run.stdout + run.stderr
    assert not list(tmp_path.iterdir())                                 # nothing was started, not even Redis


def test_the_service_refuses_a_port_out_of_range() -> None:
    with pytest.raises(ConfigError, match="RAGPULSE_PORT must be at most 65,535, got 70,000"):
        Settings.from_env({"RAGPULSE_PORT": "70000"})
    assert Settings.from_env({"RAGPULSE_PORT": "65535"}).port == 65535


# -- a judge the service cannot run is refused at submit (issue 25, defect 2) -----------------------------------

@pytest.fixture(scope="module")
def keyless(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An API with no judge credentials and no worker on its queue (what it accepts stays queued)."""
    tmp = tmp_path_factory.mktemp("keyless")
    url, api = start_api(redis_url, tmp, {"RAGPULSE_QUEUE": f"keyless-{uuid.uuid4().hex[:8]}",
                                          "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""})
    try:
        yield url
    finally:
        api.stop()


@pytest.mark.integration
@pytest.mark.parametrize(("judge", "settings"), [("anthropic", ["ANTHROPIC_API_KEY"]),
                                                 ("openai", ["RAGPULSE_OPENAI_BASE_URL", "RAGPULSE_OPENAI_MODEL"])])
def test_a_batch_naming_an_unconfigured_judge_is_422_naming_the_service_setting(
        keyless: str, judge: str, settings: list[str]) -> None:
    """Before: accepted, then every trace ended judge_error one by one and the job `finished_with_errors`."""
    body = {"traces": [trace("q")], "options": {"judge": judge}}
    refused = httpx.post(f"{keyless}/v1/batches", json=body)
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["errors"]
    assert error["path"] == "$.options.judge"
    assert all(name in error["message"] for name in settings) and "service's environment" in error["message"]
    # What judging would cost is still answered; an offline judge is accepted.
    assert httpx.post(f"{keyless}/v1/batches", params={"dry_run": "true"}, json=body).status_code == 200
    assert httpx.post(f"{keyless}/v1/batches", json={**body, "options": {"judge": "local"}}).status_code == 202


@pytest.mark.integration
def test_configured_judges_are_accepted(redis_url: str, tmp_path: Path) -> None:
    url, api = start_api(redis_url, tmp_path, {"RAGPULSE_QUEUE": f"keyed-{uuid.uuid4().hex[:8]}",
                                               "ANTHROPIC_API_KEY": "k", "RAGPULSE_JUDGE_BASE_URL": "http://127.0.0.1:9",
                                               "RAGPULSE_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                               "RAGPULSE_OPENAI_MODEL": "m"})
    try:
        for judge in ("anthropic", "openai"):
            posted = httpx.post(f"{url}/v1/batches", json={"traces": [trace("q")], "options": {"judge": judge}})
            assert posted.status_code == 202, posted.text
    finally:
        api.stop()


def test_the_judge_catalog_says_what_each_judge_lacks() -> None:
    bare = Settings.from_env({})
    assert kinds.unconfigured("local", bare) is None and kinds.unconfigured("none", bare) is None
    assert "set ANTHROPIC_API_KEY" in (kinds.unconfigured("anthropic", bare) or "")
    assert kinds.unconfigured("anthropic", Settings.from_env({"ANTHROPIC_AUTH_TOKEN": "t"})) is None
    assert "set RAGPULSE_OPENAI_MODEL" in (kinds.unconfigured(
        "openai", Settings.from_env({"RAGPULSE_OPENAI_BASE_URL": "http://h/v1"})) or "")


@pytest.mark.integration
def test_eval_of_the_example_batch_on_a_keyless_service_exits_2_naming_the_setting(keyless: str) -> None:
    """examples/batch.json asks for `judge: anthropic` in its own options, which `eval` now sends."""
    result = ragpulse_eval(ROOT / "examples" / "batch.json", "--server", keyless)
    assert result.returncode == 2, result.stderr
    assert "options: k 1 3 5 from" in result.stderr and "judge anthropic from" in result.stderr
    assert "the service rejected the options for" in result.stderr
    assert "$.options.judge: judge anthropic is not configured on this service: set ANTHROPIC_API_KEY" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr


# -- the file's own options (issue 25, defect 3) ------------------------------------------------------------------

@pytest.mark.integration
def test_eval_sends_the_files_own_options_and_flags_override_them(stack: LiveStack, tmp_path: Path) -> None:
    path = tmp_path / "batch.json"
    path.write_text(json.dumps({"traces": [trace(f"q{n}") for n in range(3)], "options": {"k": [2], "judge": "none"}}))
    own = ragpulse_eval(path, "--server", stack.url)
    assert own.returncode == 0, own.stderr
    assert f"options: k 2 from {path}; judge none from {path}" in own.stderr
    assert "\nk = [2], " in own.stdout and "recall@2 " in own.stdout and "GENERATION: not judged" in own.stdout
    flagged = ragpulse_eval(path, "--server", stack.url, "--judge", "local", "--k", "2", "4")
    assert flagged.returncode == 0, flagged.stderr
    assert "judge local from --judge, over the file's none" in flagged.stderr
    assert "k 2 4 from --k, over the file's 2" in flagged.stderr
    assert "\nk = [2, 4], " in flagged.stdout and "GENERATION (judge: heuristic" in flagged.stdout


# -- the job id at once; Ctrl-C says how to follow the job (issue 25, defect 5) ------------------------------------

@pytest.mark.integration
@pytest.mark.parametrize("command", ["eval", "gate"])
def test_the_job_id_is_printed_when_created_and_ctrl_c_says_how_to_follow_it(command: str, keyless: str,
                                                                             tmp_path: Path) -> None:
    config = tmp_path / "gate.toml"
    config.write_text('allow_heuristic = true\n[options]\njudge = "local"\n')
    judge = ["--judge", "local"] if command == "eval" else ["--config", str(config)]
    proc = spawn([sys.executable, "-m", "ragpulse.ops.cli", command, str(EXAMPLES), "--server", keyless, *judge],
                 child_env("unused"), tmp_path / f"{command}.log")
    try:
        said = wait_for_line(proc, " created: ", timeout=60)          # no worker: the job stays queued
        job_id = re.search(r"job ([0-9a-f]{32}) created: " + re.escape(f"{keyless}/v1/jobs/") + r"\1", said).group(1)
        proc.process.send_signal(signal.SIGINT)
        assert proc.process.wait(30) == cli.EXIT_INTERRUPTED == gate_command.GATE_INTERRUPTED == 130
    finally:
        proc.stop()
    output = proc.output()
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    assert f"ragpulse {command}: interrupted; this job runs on in the service" in output
    assert f"curl {keyless}/v1/jobs/{job_id}" in output and f"{keyless}/v1/jobs/{job_id}/report.html" in output
    assert "nothing cancels a job yet" in output


def test_ctrl_c_during_a_post_says_its_job_may_exist_all_the_same(tmp_path: Path) -> None:
    class PostInterrupted(Client):
        def submit(self, traces: list[dict[str, object]], options: dict[str, object],
                   dataset: object = None) -> Accepted:
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as caught:
        evaluate_file(PostInterrupted("http://127.0.0.1:9"), TraceFile(tmp_path / "t.json", [trace("q")]), {}, 10)
    assert caught.value.job_ids == [] and caught.value.in_flight
    said = interrupted("ragpulse eval", PostInterrupted("http://h:1"), [], caught.value.in_flight)
    assert "may have been queued all the same" in said and "nothing runs" not in said
    assert "nothing runs" in interrupted("ragpulse eval", Client("http://h:1"), [], in_flight=False)


# -- progress on a stderr that is no terminal (issue 25, defect 10) -----------------------------------------------

def job_view(done: int, total: int, status: str) -> JobView:
    return msgspec.convert({"job_id": "j", "status": status, "progress": {"total": total, "done": done, "failed": 0},
                            "created_at": "", "started_at": None, "finished_at": None, "warnings": [], "error": None},
                           JobView)


def test_progress_is_plain_lines_off_a_terminal_and_a_bar_on_one() -> None:
    clock = [0.0]
    plain = io.StringIO()
    progress = Progress(plain, interactive=False, every=10, clock=lambda: clock[0])
    for second, done in [(0, 0), (1, 1), (2, 1), (11, 2), (12, 3), (13, 4)]:
        clock[0] = second
        progress([job_view(done, 4, "finished" if done == 4 else "running")])
    progress.close()
    # The first state, one changed state per 10 s, and the last: no \r frames in a CI log.
    assert plain.getvalue().splitlines() == [f"[{'#' * 0}{'.' * 30}] 0/4 running", f"[{'#' * 15}{'.' * 15}] 2/4 running",
                                             f"[{'#' * 30}] 4/4 finished"]
    bar = io.StringIO()
    progress = Progress(bar, interactive=True)
    progress([job_view(1, 4, "running")])
    progress([job_view(4, 4, "finished")])
    progress.close()
    assert bar.getvalue().count("\r") == 2 and bar.getvalue().endswith("\n")
