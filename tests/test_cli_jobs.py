"""`ragpulse --version`, `wait`, `report` and `compare` (issue 25, item 4) against real API and worker processes
(the session's shared stack)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest

from ragpulse.model.results import JobView, Progress
from ragpulse.ops import cli
from ragpulse.ops.client import Client
from ragpulse.reporting.render import render_report
from tests.fake_api import JOB_ID, Answer, FakeApi
from tests.support import ROOT, child_env, wait_for_job

if TYPE_CHECKING:
    from tests.conftest import LiveStack

EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
TRACES = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
UNKNOWN_JOB = "0" * 32


def ragpulse(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=180, cwd=ROOT, env=child_env("unused"))


def post(stack: LiveStack, traces: list[dict[str, Any]], run: str) -> str:
    answer = httpx.post(f"{stack.url}/v1/batches", json={"traces": traces, "options": {"judge": "local", "run": run}},
                        timeout=30)
    assert answer.status_code == 202, answer.text
    return answer.json()["job_id"]


@pytest.fixture(scope="module")
def jobs(stack: LiveStack) -> dict[str, str]:
    """A baseline job on the example traces, and a candidate whose first 10 traces retrieve nothing relevant."""
    worse = [{**t, "retrieved_docs": [{"id": f"noise-{n}", "text": "unrelated"}]} if n < 10 else t
             for n, t in enumerate(TRACES)]
    return {"baseline": post(stack, TRACES, "base"), "candidate": post(stack, worse, "cand")}


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"ragpulse {metadata.version('ragpulse')}"


def test_wait_prints_the_status_line_once_the_job_ends(stack: LiveStack, jobs: dict[str, str]) -> None:
    result = ragpulse("wait", jobs["baseline"], "--server", stack.url)
    assert result.returncode == 0, result.stderr
    with httpx.Client(base_url=stack.url) as client:
        view = client.get(f"/v1/jobs/{jobs['baseline']}").json()
    assert view["status"] == "finished"
    total = len(TRACES)
    done = view["progress"]["done"]
    assert result.stdout.strip() == f"job {jobs['baseline']} finished: {done} evaluated, 0 failed, 0 skipped of {total}"


def test_wait_and_report_on_an_unknown_job_exit_1_naming_the_404(stack: LiveStack) -> None:
    for command in ("wait", "report"):
        result = ragpulse(command, UNKNOWN_JOB, "--server", stack.url)
        assert result.returncode == cli.EXIT_FAILED, result.stderr
        assert f"ragpulse {command}: HTTP 404" in result.stderr and "Traceback" not in result.stderr
        assert result.stdout == ""


def test_report_prints_evals_report_and_writes_the_services_page(stack: LiveStack, jobs: dict[str, str],
                                                                  tmp_path: Path) -> None:
    job_id = jobs["baseline"]
    with httpx.Client(base_url=stack.url, timeout=60) as client:
        wait_for_job(client, job_id)
        page = client.get(f"/v1/jobs/{job_id}/report.html").text
    page_file = tmp_path / "report.html"
    result = ragpulse("report", job_id, "--server", stack.url, "--html", page_file)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == render_report(Client(stack.url).report(job_id)).strip()
    assert f"job {job_id}" in result.stdout and "recall@5" in result.stdout
    assert page_file.read_text() == page and "<html" in page


def test_report_html_into_a_missing_directory_exits_2_before_anything(stack: LiveStack, jobs: dict[str, str],
                                                                       tmp_path: Path) -> None:
    result = ragpulse("report", jobs["baseline"], "--server", stack.url, "--html", tmp_path / "nope" / "r.html")
    assert result.returncode == cli.EXIT_USAGE, result.stderr
    assert "no such directory" in result.stderr and result.stdout == ""


def test_compare_prints_the_gates_deltas_and_the_regressed_traces(stack: LiveStack, jobs: dict[str, str]) -> None:
    with httpx.Client(base_url=stack.url, timeout=60) as client:
        for job_id in jobs.values():
            wait_for_job(client, job_id)
        comparison = client.get(f"/v1/jobs/{jobs['candidate']}/compare",
                                params={"baseline": jobs["baseline"]}).json()
    result = ragpulse("compare", jobs["candidate"], jobs["baseline"], "--server", stack.url)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"candidate {jobs['candidate']} (run cand, rag) vs baseline {jobs['baseline']} (run base, rag)" in out
    assert f"matched {comparison['matched']} traces" in out and comparison["matched"] == len(TRACES)
    for key in comparison["family"]:
        delta = {**comparison["retrieval"], **comparison["generation"]}[key]
        row = re.search(rf"^{re.escape(key)} vs baseline +(-?\d\.\d{{3}})", out, re.M)
        assert row, f"no row for {key}:\n{out}"
        assert float(row.group(1)) == pytest.approx(delta["delta"], abs=5e-4)
    assert comparison["regressions_total"] > 0
    total = comparison["regressions_total"]
    assert f"regressed traces (a drop of at least 0.2, or a new hallucination): {total}" in out
    worst = comparison["regressions"][0]
    assert re.search(rf"^  {re.escape(worst['trace_id'])} \(trace {worst['baseline_index'] + 1} of the baseline", out,
                     re.M)
    assert "recall@5 vs baseline" in out and "significant regressions: " in out


def test_compare_an_unknown_baseline_exits_1(stack: LiveStack, jobs: dict[str, str]) -> None:
    result = ragpulse("compare", jobs["candidate"], UNKNOWN_JOB, "--server", stack.url)
    assert result.returncode == cli.EXIT_FAILED and "ragpulse compare: HTTP 404" in result.stderr, result.stderr


# -- how a job ended decides the exit code, as for `eval` (a scripted service) -----------------------------------

def view(status: str, done: int = 2, failed: int = 0, error: str | None = None) -> Answer:
    job = JobView(job_id=JOB_ID, status=status,  # type: ignore[arg-type]
                  progress=Progress(total=2, done=done, failed=failed), created_at="2026-01-01T00:00:00Z",
                  started_at=None, finished_at=None, warnings=[], error=error)
    return Answer(200, msgspec.json.encode(job))


@pytest.mark.parametrize(("ended", "code", "line"), [
    (view("finished_with_errors", done=1, failed=1), cli.EXIT_TRACES_FAILED,
     f"job {JOB_ID} finished_with_errors: 1 evaluated, 1 failed, 0 skipped of 2"),
    (view("failed", done=0, error="the judge rejected the credentials"), cli.EXIT_FAILED,
     f"job {JOB_ID} failed: 0 evaluated, 0 failed, 0 skipped of 2; error: the judge rejected the credentials"),
])
def test_wait_polls_past_running_and_exits_as_eval_would(ended: Answer, code: int, line: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApi() as api:
        api.push("job", view("queued", done=0), view("running", done=1), ended)
        assert cli.main(["wait", JOB_ID, "--server", api.url]) == code
        assert len(api.times("job")) == 3
    assert capsys.readouterr().out.strip() == line


def test_report_of_a_running_job_exits_1_pointing_at_wait(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApi() as api:
        api.push("job", view("running", done=1))
        assert cli.main(["report", JOB_ID, "--server", api.url]) == cli.EXIT_FAILED
        assert api.times("report") == []
    captured = capsys.readouterr()
    assert captured.out == "" and f"no report yet (`ragpulse wait {JOB_ID}` waits for it)" in captured.err


def test_ctrl_c_during_wait_exits_130_saying_the_job_runs_on() -> None:
    with FakeApi() as api:
        api.push("job", *[view("running", done=1)] * 200)
        proc = subprocess.Popen([sys.executable, "-m", "ragpulse.ops.cli", "wait", JOB_ID, "--server", api.url],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=child_env("unused"))
        deadline = time.monotonic() + 30
        while not api.times("job") and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == cli.EXIT_INTERRUPTED, err
    assert f"ragpulse wait: interrupted; job {JOB_ID} runs on in the service" in err
    assert "Traceback" not in err and out == ""
