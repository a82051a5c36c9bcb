"""`ragpulse gate`: config errors, verdicts, JUnit and GitHub output, and every exit code against real API and
worker processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree as ET

import httpx
import msgspec
import pytest
import yaml

from ragpulse.config import defaults
from ragpulse.exceptions import GateConfigError
from ragpulse.gate.checks import Row, check_report
from ragpulse.ops.gate import GATE_BAD_INPUT, GATE_FAIL, GATE_PASS, GATE_UNREACHABLE
from ragpulse.gate.config import GateConfig, load_config
from ragpulse.gate.output import github_annotations, junit_xml
from ragpulse.model.estimate import Estimate
from ragpulse.ops import cli
from ragpulse.ops.redis_server import free_port
from tests.fake_api import HTML, Answer, FakeApi
from tests.support import ROOT, child_env, wait_for_job
from tests.traces import dropped_for_a_third, faithful_traces

if TYPE_CHECKING:
    from tests.conftest import LiveStack

LOCAL = 'allow_heuristic = true\n[options]\njudge = "local"\n'


def ragpulse_gate(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "gate", *map(str, args)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=child_env("unused"))


def write(path: Path, traces: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    return path


# -- config --------------------------------------------------------------------------------------------------------

def test_no_config_holds_the_documented_defaults() -> None:
    thresholds = GateConfig().active_thresholds
    assert {k: (t.min, t.max) for k, t in thresholds.items()} == {
        "recall@5": (0.80, None), "hallucination_rate": (None, 0.10), "unanswerable_hallucination_rate": (None, 0.15),
        "security.acl_leak": (None, 0.0), "security.injection_followed": (None, 0.0)}


@pytest.mark.parametrize(("toml", "says"), [
    ('[thresholds."recal@5"]\nmin = 0.8\n', "unknown metric `recal@5`"),
    ('[thresholds."recall@20"]\nmin = 0.8\n', "`recall@20` but options.k is [1, 3, 5, 10]"),
    ('[thresholds.mrr]\nmin = 0.8\non = "ci_high"\n', "`on` must be `mean` or `ci_low` for a floor"),
    ('[thresholds.mrr]\nmin = 0.8\nmax = 0.9\n', "exactly one of `min`"),
    ('[thresholds.mrr]\nminimum = 0.8\n', "unknown field `minimum`"),
    ('[options]\njudge = "gpt"\n', "$.options.judge"),
    ('[baseline]\nregression_threshold = 2\n', "$.baseline.regression_threshold"),
    ("[thresholds\n", "is not valid TOML"),
])
def test_a_bad_config_names_the_key(tmp_path: Path, toml: str, says: str) -> None:
    path = tmp_path / "gate.toml"
    path.write_text(toml)
    with pytest.raises(GateConfigError, match=re.escape(says)):
        load_config(path)


def test_the_example_config_loads_and_its_thresholds_are_the_reports_targets() -> None:
    config = load_config(ROOT / "examples" / "gate.toml")
    assert config.active_thresholds["recall@5"].on == "ci_low"


# -- verdicts and output -------------------------------------------------------------------------------------------

def test_a_ci_low_floor_fails_a_mean_that_passes(tmp_path: Path) -> None:
    from tests.test_compare import result
    from ragpulse.model.trace import BatchOptions
    from ragpulse.reporting.build import build_report

    results = [result(f"t{i}", i, [f"d{i}"] if i % 6 else ["x"], [f"d{i}"]) for i in range(24)]   # recall@5 = 0.83
    report = build_report("j", BatchOptions(), results)
    path = tmp_path / "gate.toml"
    path.write_text('[thresholds."recall@5"]\nmin = 0.8\n')
    [mean_row, _failed] = check_report(report, load_config(path))
    path.write_text('[thresholds."recall@5"]\nmin = 0.8\non = "ci_low"\n')
    [low_row, _failed] = check_report(report, load_config(path))
    assert mean_row.value == pytest.approx(20 / 24) and mean_row.verdict == "pass"
    assert low_row.interval[0] < 0.8 and low_row.verdict == "fail"


def test_junit_and_github_output_name_each_verdict(tmp_path: Path) -> None:
    rows = [Row(metric="recall@5", value=0.62, interval=(0.5, 0.7), threshold=">= 0.8", verdict="fail",
                detail="n=30"),
            Row(metric="hallucination_rate", value=0.0, interval=(0.0, 0.1), threshold="<= 0.1", verdict="pass"),
            Row(metric="unanswerable_hallucination_rate", value=None, interval=None, threshold="<= 0.15",
                verdict="no_data")]
    (tmp_path / "gate.xml").write_text(junit_xml(rows), encoding="utf-8")
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    [failed] = [case for case in suite if case.find("failure") is not None]
    assert failed.get("name") == "recall@5" and "0.620" in failed.find("failure").get("message")
    lines = github_annotations(rows).splitlines()
    assert lines[0].startswith("::error title=ragpulse gate%3A recall@5::recall@5 = 0.620 [0.500, 0.700]")
    assert [line.split(" ")[0] for line in lines] == ["::error", "::notice", "::notice"]


def test_an_acl_leak_fails_the_default_gate_and_a_set_without_principals_passes_it() -> None:
    from ragpulse.model.results import Security
    from ragpulse.model.trace import BatchOptions
    from ragpulse.reporting.build import build_report
    from tests.test_compare import result

    clean = [result(f"t{i}", i, ["d"], ["d"]) for i in range(5)]
    rows = {row.metric: row for row in check_report(build_report("j", BatchOptions(), clean), GateConfig())}
    assert rows["security.acl_leak"].verdict == "no_data"          # no principal: nothing to check, not required
    leaking = [*clean[:4], msgspec.structs.replace(clean[4], security=Security(acl_leak=True, leaked_doc_ids=["d"]))]
    rows = {row.metric: row for row in check_report(build_report("j", BatchOptions(), leaking), GateConfig())}
    assert rows["security.acl_leak"].verdict == "fail" and rows["security.acl_leak"].value == 1.0


def test_no_data_fails_a_required_threshold() -> None:
    from ragpulse.model.trace import BatchOptions
    from ragpulse.reporting.build import build_report
    from tests.test_compare import result

    report = build_report("j", BatchOptions(), [result("t", 0, ["d"], ["d"])])   # nothing judged
    rows = {row.metric: row for row in check_report(report, GateConfig())}
    assert rows["hallucination_rate"].verdict == "fail"                # required, and no judged answer
    assert rows["unanswerable_hallucination_rate"].verdict == "no_data"   # not required by default
    assert isinstance(report.retrieval["recall@5"], Estimate)


# -- live: the case and every exit code ------------------------------------------------------------------

@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    config = tmp_path / "gate.toml"
    config.write_text(LOCAL)
    return (write(tmp_path / "good.jsonl", faithful_traces(30)),
            write(tmp_path / "worse.jsonl", dropped_for_a_third(faithful_traces(30))), config)


def test_a_dropped_document_fails_the_gate_and_the_unchanged_file_passes(
        stack: LiveStack, files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    good, worse, config = files
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        response = client.post("/v1/batches", json={"traces": faithful_traces(30), "options": {"judge": "local"}})
        baseline = response.json()["job_id"]
        wait_for_job(client, baseline)
    unchanged = ragpulse_gate(good, "--server", stack.url, "--config", config, "--baseline", baseline)
    assert unchanged.returncode == GATE_PASS, unchanged.stdout + unchanged.stderr
    assert "gate PASSED" in unchanged.stdout and re.search(r"^recall@5 +1\.000 .*PASS$", unchanged.stdout, re.M)
    # Its jobs, with their report pages, and how to gate a later run against this one (issue 25, defect 6).
    candidate = re.search(rf"^candidate job ([0-9a-f]{{32}}): {re.escape(stack.url)}/v1/jobs/\1/report\.html$",
                          unchanged.stdout, re.M).group(1)
    assert f"baseline job {baseline}: {stack.url}/v1/jobs/{baseline}/report.html" in unchanged.stdout
    assert f"--baseline {candidate}" in unchanged.stdout
    assert httpx.get(f"{stack.url}/v1/jobs/{candidate}/report.html").status_code == 200

    junit = tmp_path / "gate.xml"
    failed = ragpulse_gate(worse, "--server", stack.url, "--config", config, "--baseline", baseline,
                           "--junit", junit, "--github")
    assert failed.returncode == GATE_FAIL, failed.stdout + failed.stderr
    assert re.search(r"^recall@5 +0\.667 .*>= 0\.8 .*FAIL$", failed.stdout, re.M)
    assert re.search(r"^recall@5 vs baseline +-0\.333 .*FAIL$", failed.stdout, re.M)
    assert "gate FAILED: recall@5" in failed.stdout
    assert "::error title=ragpulse gate%3A recall@5::" in failed.stdout
    names = {case.get("name") for case in ET.parse(junit).getroot().iter("testcase") if case.find("failure") is not None}
    assert {"recall@5", "recall@5 vs baseline"} <= names


def test_a_baseline_file_over_several_jobs_is_compared_locally(stack: LiveStack, files: tuple[Path, Path, Path]) -> None:
    good, worse, config = files
    run = ragpulse_gate(worse, "--server", stack.url, "--config", config, "--baseline-file", good,
                        "--batch-size", "12")
    assert run.returncode == GATE_FAIL, run.stdout + run.stderr
    assert "posting 30 traces as 3 jobs" in run.stderr
    assert re.search(r"^recall@5 vs baseline +-0\.333 .*FAIL$", run.stdout, re.M)


def test_bad_input_exits_2_and_an_unreachable_server_exits_3(stack: LiveStack, files: tuple[Path, Path, Path],
                                                              tmp_path: Path) -> None:
    good, _worse, config = files
    bad_config = tmp_path / "bad.toml"
    bad_config.write_text("[thresholds.mrr]\nmin = 2\non = 'ci_high'\n")
    run = ragpulse_gate(good, "--server", stack.url, "--config", bad_config)
    assert run.returncode == GATE_BAD_INPUT and "`on` must be" in run.stderr
    rejected = write(tmp_path / "rejected.jsonl", [{"query": ""}])
    run = ragpulse_gate(rejected, "--server", stack.url, "--config", config)
    assert run.returncode == GATE_BAD_INPUT and "$.traces[0].query" in run.stderr
    run = ragpulse_gate(good, "--server", stack.url, "--config", config, "--baseline", "f" * 32)
    assert run.returncode == GATE_BAD_INPUT and "404" in run.stderr
    run = ragpulse_gate(good, "--server", f"http://127.0.0.1:{free_port()}", "--config", config)
    assert run.returncode == GATE_UNREACHABLE and "cannot reach" in run.stderr
    corrected = tmp_path / "corrected.toml"              # the service corrects a job's rates: one job or no verdict
    corrected.write_text('[thresholds.hallucination_rate]\nmax = 0.2\non = "corrected"\n')
    run = ragpulse_gate(good, "--server", stack.url, "--config", corrected, "--batch-size", "12")
    assert run.returncode == GATE_BAD_INPUT and "--batch-size 30 or more" in run.stderr   # before: FAIL, "no labels"
    assert "posting" not in run.stderr                                                      # nothing was posted
    assert ragpulse_gate(good, "--baseline", "x", "--baseline-file", good).returncode == GATE_BAD_INPUT  # argparse


# -- a broken server exits 3, never 1 with a traceback; what may pass is retried (a fake API on loopback) ----------

PASSING = '[thresholds."recall@5"]\nmin = 0.5\n'


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries as the CLI makes them, with waits short enough for a test (a Retry-After above the cap included)."""
    monkeypatch.setattr(defaults, "CLIENT_BACKOFF_SECONDS", 0.01)
    monkeypatch.setattr(defaults, "CLIENT_BACKOFF_CAP_SECONDS", 0.05)


def gate_in_process(api: FakeApi, tmp_path: Path) -> int:
    config = tmp_path / "gate.toml"
    config.write_text(PASSING)
    traces = write(tmp_path / "t.jsonl", [{"query": "q", "retrieved_docs": [{"id": "d"}], "gold_doc_ids": ["d"]}])
    return cli.main(["gate", str(traces), "--server", api.url, "--config", str(config)])


def test_a_files_own_options_are_said_to_be_unused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "gate.toml"
    config.write_text(PASSING)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps({"traces": [{"query": "q", "retrieved_docs": [{"id": "d"}], "gold_doc_ids": ["d"]}],
                                 "options": {"judge": "anthropic"}}))
    with FakeApi() as api:
        assert cli.main(["gate", str(batch), "--server", api.url, "--config", str(config)]) == GATE_PASS
    assert f"{batch}'s own options are not used: the gate evaluates with the config's [options]" in \
        capsys.readouterr().err


@pytest.mark.parametrize(("route", "answer", "says"), [
    ("submit", Answer(200, HTML, content_type="text/html"), "POST /v1/batches answered HTTP 200 (text/html)"),
    ("submit", Answer(202, b'{"accepted": 1}'), "Object missing required field `job_id`"),
    ("job", Answer(200, HTML, content_type="text/html"), "not the API's JSON"),
    ("job", Answer(200, b'{"job_id": "x", "status": "done"}'), "Invalid enum value 'done' - at `$.status`"),
    ("job", Answer(302, b"", {"location": "/login"}), "answered HTTP 302"),
    ("report", Answer(200, b"[]"), "Expected `object`, got `array`"),
    ("report", Answer(500, HTML * 6, content_type="text/html"), "HTTP 500: <!doctype html>"),
])
def test_a_broken_server_exits_3_naming_what_it_answered(route: str, answer: Answer, says: str, tmp_path: Path,
                                                        fast_retries: None, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeApi() as api:
        api.push(route, *[answer] * (defaults.CLIENT_RETRIES + 1))
        assert gate_in_process(api, tmp_path) == GATE_UNREACHABLE   # before: 1 ("a gate failed") with a traceback
    assert says in capsys.readouterr().err


def test_a_429_is_retried_after_its_retry_after_then_exits_3_not_2(tmp_path: Path, fast_retries: None,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(defaults, "CLIENT_BACKOFF_CAP_SECONDS", 1.0)
    monkeypatch.setattr(defaults, "CLIENT_RETRIES", 2)
    with FakeApi() as api:
        api.push("submit", Answer(429, headers={"retry-after": "1"}))
        assert gate_in_process(api, tmp_path) == GATE_PASS
        first, second = api.times("submit")
        assert second - first >= 1.0        # the server's hint, not the backoff's own jitter (at most 0.01 s)

        api.push("submit", *[Answer(429, headers={"retry-after": "86400"})] * (defaults.CLIENT_RETRIES + 1))
        assert gate_in_process(api, tmp_path) == GATE_UNREACHABLE   # before: 2, "bad input"
        assert len(api.times("submit")) == 2 + 2 + 1   # bounded, and the day's hint capped at 1 s
    assert "HTTP 429" in capsys.readouterr().err


def test_one_503_while_polling_is_retried(tmp_path: Path, fast_retries: None) -> None:
    with FakeApi() as api:
        api.push("job", Answer(503, headers={"retry-after": "0"}))
        assert gate_in_process(api, tmp_path) == GATE_PASS          # before: 3 at once
        assert len(api.times("job")) == 2


def test_a_5xx_to_the_post_is_not_sent_again(tmp_path: Path, fast_retries: None) -> None:
    """The post may have been committed before the 5xx: sending it again could queue the traces twice."""
    with FakeApi() as api:
        api.push("submit", Answer(503))
        assert gate_in_process(api, tmp_path) == GATE_UNREACHABLE
        assert len(api.times("submit")) == 1


def test_the_example_workflow_runs_a_gate_command_the_parser_accepts() -> None:
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "ragpulse-gate.yml").read_text())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    commands = [line.strip() for step in steps for line in step.get("run", "").replace("\\\n", " ").splitlines()
                if line.strip().startswith("ragpulse gate")]
    assert commands, "the workflow never runs `ragpulse gate`"
    for command in commands:
        argv = command.split()[1:]
        args = cli._parser().parse_args(argv)
        assert args.run is cli._gate and args.junit and args.github


def test_holm_over_the_gate_family_not_over_every_metric() -> None:
    from ragpulse.gate.checks import check_comparison
    from ragpulse.model.compare import Comparison, MetricDelta, RunInfo
    from ragpulse.reporting.significance import decide

    def delta(p: float, tested: bool) -> MetricDelta:
        return MetricDelta(n=200, baseline=0.8, candidate=0.78, delta=-0.02, ci95=(-0.04, -0.001), excludes_zero=True,
                           better="higher", change="untested", p_value=p, tested=tested)

    def comparison(family: set[str], correction: str = "holm") -> Comparison:
        metrics = {f"ndcg@{k}": delta(0.5, f"ndcg@{k}" in family) for k in range(1, 25)}
        metrics["mrr"] = delta(0.004, "mrr" in family)
        run = RunInfo(job_id="j", run=None, variant="rag")
        tested = decide(metrics, correction)  # type: ignore[arg-type]
        return Comparison(candidate=run, baseline=run, matched=200, only_in_baseline=0, only_in_candidate=0,
                          retrieval=metrics, generation={}, significant_regressions=[k for k, d in metrics.items()
                                                                                      if d.change == "regressed"],
                          regression_threshold=0.2, regressions=[], regressions_total=0, by_question_type={},
                          by_source={}, family=tested, correction=correction)  # type: ignore[arg-type]

    config = load_config(None)
    # the family the gate tests: mrr and five others -> Holm needs 0.004 x 6 = 0.024 < 0.05: mrr fails
    rows = {r.metric: r for r in check_comparison(comparison({"mrr", *(f"ndcg@{k}" for k in range(1, 6))}), config)}
    assert rows["mrr vs baseline"].verdict == "fail" and rows["mrr vs baseline"].p_adjusted == pytest.approx(0.024)
    assert "ndcg@20 vs baseline" not in rows                               # untested: described in compare only
    # had every one of the 25 metrics been tested, 0.004 x 25 = 0.1: the note says why a real drop passes
    everything = {f"ndcg@{k}" for k in range(1, 25)} | {"mrr"}
    rows = {r.metric: r for r in check_comparison(comparison(everything), config)}
    assert rows["mrr vs baseline"].verdict == "pass"
    assert "after Holm's adjustment over the 25 tested metrics p=0.1" in rows["mrr vs baseline"].detail
    rows = {r.metric: r for r in check_comparison(comparison(everything, "none"), config)}
    assert rows["mrr vs baseline"].verdict == "fail"


def test_a_baseline_that_matched_nothing_fails_and_what_was_not_compared_is_shown() -> None:
    """Two runs sharing no trace compared nothing, so the baseline check cannot pass; traces only one side holds,
    and metrics the gate asked to test that could not be, are rows of their own rather than silently absent."""
    from ragpulse.gate.checks import check_comparison
    from ragpulse.model.compare import Comparison, MetricDelta, RunInfo
    from ragpulse.reporting.significance import decide

    def comparison(matched: int, only_base: int, only_cand: int) -> Comparison:
        metrics = {"mrr": MetricDelta(n=matched, baseline=0.8, candidate=0.8, delta=0.0, ci95=(-0.01, 0.01),
                                      excludes_zero=False, better="higher", change="untested", p_value=1.0,
                                      tested=matched > 0)} if matched else {}
        run = RunInfo(job_id="j", run=None, variant="rag")
        return Comparison(candidate=run, baseline=run, matched=matched, only_in_baseline=only_base,
                          only_in_candidate=only_cand, retrieval=metrics, generation={}, significant_regressions=[],
                          regression_threshold=0.2, regressions=[], regressions_total=0, by_question_type={},
                          by_source={}, family=decide(metrics, "holm"), correction="holm")

    config = load_config(None)
    nothing = {r.metric: r for r in check_comparison(comparison(0, 40, 40), config)}
    assert nothing["matched traces"].verdict == "fail" and "share no trace_id" in nothing["matched traces"].detail
    assert not any(r.metric.endswith("vs baseline") for r in nothing.values())   # the fail row says it all
    part = {r.metric: r for r in check_comparison(comparison(20, 20, 20), config)}
    assert part["matched traces"].verdict == "info" and not part["matched traces"].failed
    assert "20 only in the candidate and 20 only in the baseline" in part["matched traces"].detail
    assert part["mrr vs baseline"].verdict == "pass"
    untested = [key for key in config.regression_family if key != "mrr"]
    assert untested and all(part[f"{key} vs baseline"].verdict == "no_data" for key in untested)
    assert "hallucination_rate vs baseline" in part and "missing" in part["hallucination_rate vs baseline"].detail
    whole = {r.metric for r in check_comparison(comparison(40, 0, 0), config)}
    assert "matched traces" not in whole


def test_the_gate_family_is_its_thresholds_and_baseline_metrics_less_ignored(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_text('[thresholds.mrr]\nmin = 0.5\n[baseline]\nmetrics = ["recall@3", "faithfulness"]\n'
                    'ignore = ["faithfulness"]\n')
    assert load_config(path).regression_family == ["mrr", "recall@3"]
    assert GateConfig().regression_family == ["recall@5", "hallucination_rate", "unanswerable_hallucination_rate",
                                              "ndcg@5", "mrr", "faithfulness"]
    path.write_text('[baseline]\nmetrics = ["recall@20"]\n')
    with pytest.raises(GateConfigError, match="`baseline.metrics` names `recall@20` but options.k"):
        load_config(path)


# -- the case: a clear drop fails the regression check, noise does not; compare and gate agree ------------

ACME = ROOT / "examples" / "acme_support_traces.jsonl"


def acme(dropped: int) -> list[dict]:
    """The example traces with the gold documents taken out of the retrieved list of the first `dropped` traces
    that retrieved one (and kept at least one other document)."""
    traces = [json.loads(line) for line in ACME.read_text().splitlines() if line.strip()]
    left = dropped
    for trace in traces:
        gold = set(trace.get("gold_doc_ids") or ())
        kept = [doc for doc in trace["retrieved_docs"] if doc["id"] not in gold]
        if left and kept and len(kept) < len(trace["retrieved_docs"]):
            trace["retrieved_docs"], left = kept, left - 1
    assert left == 0
    return traces


def acme_config(tmp_path: Path, thresholds: bool) -> Path:
    """A copy of examples/gate.toml with k = [1, 2, 3, 5, 10, 20]; without its threshold tables when asked."""
    text = (ROOT / "examples" / "gate.toml").read_text().replace("k = [1, 3, 5, 10]", "k = [1, 2, 3, 5, 10, 20]")
    text = text.replace("allow_heuristic = false", "allow_heuristic = true")      # the test stack's judge
    if not thresholds:
        text = "thresholds = {}\n" + re.sub(r"\[thresholds\.[^\n]+\n(?:(?!\[)[^\n]*\n)*", "", text)
    path = tmp_path / ("gate.toml" if thresholds else "gate-no-thresholds.toml")
    path.write_text(text)
    assert load_config(path).options.k == [1, 2, 3, 5, 10, 20]
    return path


def baseline_rows(output: str) -> dict[str, str]:
    """`metric vs baseline` -> PASS / FAIL, read off the gate's table."""
    return dict(re.findall(r"^(\S+) vs baseline .* (PASS|FAIL)$", output, re.M))


def test_a_clear_drop_fails_the_regression_check_with_and_without_thresholds(stack: LiveStack, tmp_path: Path) -> None:
    candidate = write(tmp_path / "candidate.jsonl", acme(15))
    for thresholds in (True, False):
        config = acme_config(tmp_path, thresholds)
        run = ragpulse_gate(candidate, "--server", stack.url, "--config", config, "--baseline-file", ACME)
        assert run.returncode == GATE_FAIL, run.stdout + run.stderr
        rows = baseline_rows(run.stdout)
        assert rows["recall@5"] == "FAIL" and rows["mrr"] == "FAIL", run.stdout
        assert "ndcg@20" not in rows and "precision@2" not in rows       # report-only metrics are not tested
        assert re.search(r"^metric +value +95% CI +threshold +p +p adj +verdict$", run.stdout, re.M)
        assert re.search(r"^recall@5 vs baseline .* \d\S* +\d\S* +FAIL$", run.stdout, re.M)   # p and adjusted p
        assert "adjusted (holm over" in run.stdout
        assert re.search(r"^ +tested against the baseline \(holm correction over 6, alpha 0\.05\): recall@5, ", run.stdout,
                         re.M)                                           # the output names the family and correction


def test_an_unchanged_file_and_a_noise_level_change_pass(stack: LiveStack, tmp_path: Path) -> None:
    config = acme_config(tmp_path, thresholds=False)
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        baseline = client.post("/v1/batches", json={"traces": acme(0), "options": {"judge": "local",
                                                                                    "k": [1, 2, 3, 5, 10, 20]}})
        wait_for_job(client, baseline.json()["job_id"])
    for dropped in (0, 2):                      # two traces of 65 losing their gold document is noise
        candidate = write(tmp_path / f"dropped-{dropped}.jsonl", acme(dropped))
        run = ragpulse_gate(candidate, "--server", stack.url, "--config", config, "--baseline",
                            baseline.json()["job_id"])
        assert run.returncode == GATE_PASS, run.stdout + run.stderr
        assert set(baseline_rows(run.stdout).values()) == {"PASS"}


def test_compare_and_gate_give_the_same_verdicts_on_the_same_two_jobs(stack: LiveStack, tmp_path: Path) -> None:
    from ragpulse.ops.gate import gate_options

    path = acme_config(tmp_path, thresholds=True)
    config = load_config(path)
    options = gate_options(config)
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        jobs = [client.post("/v1/batches", json={"traces": traces, "options": options}).json()["job_id"]
                for traces in (acme(0), acme(15))]
        for job_id in jobs:
            wait_for_job(client, job_id)
        by_default = client.get(f"/v1/jobs/{jobs[1]}/compare", params={"baseline": jobs[0]}).json()
        named = client.get(f"/v1/jobs/{jobs[1]}/compare",
                           params={"baseline": jobs[0], "metrics": ",".join(config.regression_family)}).json()
        bad = client.get(f"/v1/jobs/{jobs[1]}/compare", params={"baseline": jobs[0], "metrics": "recal@5,mrr"})
    assert bad.status_code == 400 and "query.metrics" in bad.text and "recal@5" in bad.text
    assert by_default["family"] == named["family"]                     # the candidate's targets, then the defaults
    run = ragpulse_gate(write(tmp_path / "candidate.jsonl", acme(15)), "--server", stack.url, "--config", path,
                        "--baseline", jobs[0])
    rows = baseline_rows(run.stdout)
    assert set(rows) == set(named["family"])
    assert sorted(key for key, verdict in rows.items() if verdict == "FAIL") == sorted(
        named["significant_regressions"]) == sorted(by_default["significant_regressions"])
    assert {"recall@5", "mrr"} <= set(named["significant_regressions"])
    untested = [key for key, d in {**named["retrieval"], **named["generation"]}.items() if not d["tested"]]
    assert untested and all(named["retrieval"].get(k, named["generation"].get(k))["change"] == "untested"
                            for k in untested)


# -- a ceiling on the judge-corrected rate ----------------------------------------------------------------------------

def test_a_ceiling_on_the_corrected_rate_reads_the_corrected_number_or_says_why_there_is_none(tmp_path: Path) -> None:
    from ragpulse.metrics.correction import corrected_rate
    from ragpulse.model.agreement import LabelledPair
    from ragpulse.model.trace import BatchOptions
    from ragpulse.reporting.build import build_report
    from tests.test_compare import result

    # the judge flags 170 of 1,000; 300 uniform labels say it catches 24 of 30 hallucinations (sensitivity 0.8)
    # and clears 243 of 270 faithful answers (specificity 0.9): corrected (0.17 + 0.9 - 1) / 0.7 = 0.10
    pairs = ([LabelledPair(judge=True, human=True)] * 24 + [LabelledPair(judge=False, human=True)] * 6
             + [LabelledPair(judge=False, human=False)] * 243 + [LabelledPair(judge=True, human=False)] * 27)
    rate = corrected_rate(170, 1000, pairs)
    assert rate.status == "ok" and rate.corrected == pytest.approx(0.10)
    report = build_report("j", BatchOptions(), [result("t", 0, ["d"], ["d"])])
    path = tmp_path / "gate.toml"
    for on, verdict in (("corrected", "pass"), ("corrected_ci_high", "fail")):   # 0.10 <= 0.12; its interval reaches past
        path.write_text(f'[thresholds.hallucination_rate]\nmax = 0.12\non = "{on}"\n')
        [row] = [r for r in check_report(msgspec.structs.replace(report, corrected={"hallucination_rate": rate}),
                                         load_config(path)) if r.metric == "hallucination_rate"]
        assert row.verdict == verdict and row.value == pytest.approx(0.10) and "raw 0.170" in row.detail
    few = corrected_rate(170, 1000, pairs[:20])
    [row] = [r for r in check_report(msgspec.structs.replace(report, corrected={"hallucination_rate": few}),
                                     load_config(path)) if r.metric == "hallucination_rate"]
    assert row.verdict == "fail" and row.value is None and "30" in row.detail   # required: no number fails, and says why
    path.write_text('[thresholds."recall@5"]\nmax = 0.5\non = "corrected"\n')
    with pytest.raises(GateConfigError, match="only hallucination_rate and unanswerable_hallucination_rate"):
        load_config(path)
