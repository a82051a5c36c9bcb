"""Comparisons that check what they compare: each side's judge, model and prompt version, the judged-share floor,
and the refusals of compare (409), gate (exit 2) and the job page's default baseline; in process, then once against
real API and worker processes judging with the fake Anthropic server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
import redis

from ragpulse.exceptions import Conflict, GateConfigError, JudgingRefused
from ragpulse.gate.checks import check_comparison
from ragpulse.gate.config import GateConfig, load_config
from ragpulse.judges.kinds import JUDGES, make_judge
from ragpulse.config.settings import Settings
from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.metrics.registry import needs_judge
from ragpulse.model.compare import Comparison, RunInfo
from ragpulse.model.results import TraceResult
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.model.verdicts import JudgeCall
from ragpulse.ops import gate as gate_command
from ragpulse.reporting.compare import compare
from ragpulse.reporting.judging import comparable, judging
from ragpulse.store import Store
from service.auth import OPEN_TENANT
from service.job_list import job_judging, previous_job
from service.jobs import refuse_judged
from tests.fake_anthropic import FakeAnthropic
from tests.support import start_api, start_worker, wait_for_job
from tests.traces import faithful_traces

HEURISTIC = next(name for name, kind in JUDGES.items() if kind.heuristic)
"""Whatever the offline heuristic is called here: the checks read the capability, never the name."""
RUNS = (RunInfo(job_id="base", run=None, variant="rag"), RunInfo(job_id="cand", run=None, variant="rag"))
LLM = {"judge": "anthropic", "model": "claude-sonnet-4-6", "prompt_version": "v4"}


def heuristic_results(n: int = 20) -> list[TraceResult]:
    """n faithful traces judged by the offline heuristic, as a worker stores them."""
    judge = make_judge(HEURISTIC, Settings())
    traces = [msgspec.convert(t, Trace) for t in faithful_traces(n)]
    return [asyncio.run(evaluate_trace(t, i, BatchOptions(judge=HEURISTIC), judge)) for i, t in enumerate(traces)]


def as_judged_by(results: list[TraceResult], judge: str, model: str, prompt_version: str) -> list[TraceResult]:
    """The same verdicts, recorded as another judge's (what an LLM agreeing with the heuristic would store)."""
    return [msgspec.structs.replace(r, judge=judge, judgments=[msgspec.structs.replace(
        j, judge=judge, model=model, prompt_version=prompt_version) for j in r.judgments]) for r in results]


def all_judge_errors(results: list[TraceResult]) -> list[TraceResult]:
    """Every trace judge_error (the provider kept failing): retrieval metrics kept, no verdict."""
    call = JudgeCall(raw_output=None, **LLM)
    return [msgspec.structs.replace(r, status="judge_error", error="judge unavailable", judge="anthropic",
                                    generation=None, claims=[], judgments=[], failed_calls=[call]) for r in results]


def test_the_registry_says_which_metrics_need_a_judge() -> None:
    assert [needs_judge(k) for k in ("recall@5", "mrr", "ndcg@10", "faithfulness", "hallucination_rate",
                                     "answer_relevance", "context_precision", "nonsense")] == \
        [False, False, False, True, True, True, True, False]


def test_each_side_names_its_judge_model_and_prompt_version() -> None:
    heuristic = heuristic_results(4)
    side = judging(heuristic)
    assert side.judge == HEURISTIC and side.heuristic and (side.judged, side.sent) == (4, 4)
    llm = judging(as_judged_by(heuristic, **LLM))
    assert (llm.judge, llm.model, llm.prompt_version, llm.heuristic) == ("anthropic", "claude-sonnet-4-6", "v4", False)
    assert not comparable(llm, side) and comparable(llm, llm)


def test_a_heuristic_baseline_against_an_llm_candidate_is_a_judge_mismatch() -> None:
    baseline = heuristic_results()
    candidate = as_judged_by(baseline, **LLM)
    comparison = compare(*RUNS, baseline, candidate)
    assert comparison.baseline.judging.judge == HEURISTIC and comparison.candidate.judging.model == LLM["model"]
    mismatch = comparison.judge_mismatch
    assert mismatch is not None and f"judge {HEURISTIC} (heuristic)" in mismatch
    assert "judge anthropic, model claude-sonnet-4-6, prompt v4" in mismatch
    assert f"JUDGE MISMATCH: {mismatch}" in comparison.warnings
    with pytest.raises(Conflict, match="judge mismatch: the baseline job base was judged by") as refused:
        refuse_judged(comparison, [])
    assert refused.value.errors[0]["path"] == "query.baseline"
    # a family of retrieval metrics only reads no verdict: said, not refused
    retrieval_only = compare(*RUNS, baseline, candidate, family=["recall@5", "mrr"])
    assert retrieval_only.judge_mismatch and retrieval_only.family == ["recall@5", "mrr"]
    refuse_judged(retrieval_only, ["recall@5", "mrr"])


def test_the_same_judge_model_and_prompt_on_both_sides_is_no_mismatch() -> None:
    results = heuristic_results()
    comparison = compare(*RUNS, results, results)
    assert comparison.judge_mismatch is None and comparison.judged_refused is None and comparison.warnings == []
    refuse_judged(comparison, ["faithfulness"])


def test_a_baseline_with_every_trace_judge_error_is_refused_for_judged_metrics() -> None:
    candidate = as_judged_by(heuristic_results(65), **LLM)
    baseline = all_judge_errors(candidate)
    comparison = compare(*RUNS, baseline, candidate)
    assert comparison.judged_refused == "baseline job base: 0 of 65 traces judged (floor 90%)"
    assert comparison.refused_metrics == ["faithfulness", "hallucination_rate", "unanswerable_hallucination_rate"]
    assert comparison.judge_mismatch is None          # no judged trace on the baseline: nothing judged to compare
    assert [k for k in comparison.family] == ["recall@5", "ndcg@5", "mrr"]   # retrieval still tested
    assert any(w.startswith("JUDGED METRICS REFUSED: baseline job base: 0 of 65") for w in comparison.warnings)
    refuse_judged(comparison, [])                     # the default family: visible, not refused
    with pytest.raises(Conflict, match=r"judged metrics refused \(faithfulness\): baseline job base: 0 of 65"):
        refuse_judged(comparison, ["recall@5", "faithfulness"])


def test_a_partly_judged_side_below_the_floor_describes_its_judged_metrics_untested() -> None:
    candidate = heuristic_results(20)
    baseline = candidate[:17] + all_judge_errors(candidate[17:])     # 17 of 20 = 85% < 90%
    comparison = compare(*RUNS, baseline, candidate, family=["recall@5", "faithfulness"])
    assert comparison.judged_refused == "baseline job base: 17 of 20 traces judged (floor 90%)"
    faithfulness = comparison.generation["faithfulness"]
    assert not faithfulness.tested and faithfulness.change == "untested" and "17 of 20" in faithfulness.note
    enough = candidate[:18] + all_judge_errors(candidate[18:])      # 18 of 20 = 90%: at the floor
    assert compare(*RUNS, enough, candidate).judged_refused is None


# -- the gate ------------------------------------------------------------------------------------------------------

def gate_config(tmp_path: Path, toml: str) -> GateConfig:
    path = tmp_path / "gate.toml"
    path.write_text(toml)
    return load_config(path)


def test_judge_mismatch_takes_refuse_or_warn_and_nothing_else(tmp_path: Path) -> None:
    assert GateConfig().baseline.judge_mismatch == "refuse"
    assert gate_config(tmp_path, '[baseline]\njudge_mismatch = "warn"\n').baseline.judge_mismatch == "warn"
    with pytest.raises(GateConfigError, match=r"\$\.baseline\.judge_mismatch"):
        gate_config(tmp_path, '[baseline]\njudge_mismatch = "ignore"\n')


def run_gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, comparison: Comparison, toml: str) -> int:
    """The gate command over a comparison given here (the service's part faked at _gate's boundary)."""
    config = tmp_path / "gate.toml"
    config.write_text(toml)
    traces = tmp_path / "t.jsonl"
    traces.write_text('{"query": "q", "retrieved_docs": [{"id": "d"}], "gold_doc_ids": ["d"]}\n')

    def judged_gate(_client, _request, config, *_rest) -> list:  # noqa: ANN001 - the real _gate's arguments
        gate_command._check_judging(comparison, config)
        return check_comparison(comparison, config)

    monkeypatch.setattr(gate_command, "_gate", judged_gate)
    return gate_command.run_gate(gate_command.GateRequest(
        file=traces, server="http://127.0.0.1:9", api_key=None, config=config, baseline_job="b", baseline_file=None,
        batch_size=100, junit=None, github=False))


def test_the_gate_refuses_a_heuristic_baseline_unless_told_to_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    baseline = heuristic_results()
    comparison = compare(*RUNS, baseline, as_judged_by(baseline, **LLM))
    assert run_gate(tmp_path, monkeypatch, comparison, "") == gate_command.GATE_BAD_INPUT
    err = capsys.readouterr().err
    assert "refused, no verdict: judge mismatch" in err and "claude-sonnet-4-6" in err and HEURISTIC in err
    code = run_gate(tmp_path, monkeypatch, comparison, '[baseline]\njudge_mismatch = "warn"\n')
    out, err = capsys.readouterr()
    assert code == gate_command.GATE_PASS
    assert "WARNING, judge mismatch" in err
    assert "judges" in out and "MISMATCH (warned, not refused)" in out and "model claude-sonnet-4-6" in out


def test_the_gate_refuses_an_unjudged_baseline_for_the_judged_metrics_it_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    candidate = heuristic_results(65)
    comparison = compare(*RUNS, all_judge_errors(candidate), candidate,
                         family=GateConfig().regression_family)          # the default thresholds: hallucination_rate
    assert run_gate(tmp_path, monkeypatch, comparison, "") == gate_command.GATE_BAD_INPUT
    assert "judged metrics refused (hallucination_rate" in capsys.readouterr().err
    retrieval = '[thresholds."recall@5"]\nmin = 0.5\n'                   # judged metrics only in the default family
    config = gate_config(tmp_path, retrieval)
    comparison = compare(*RUNS, all_judge_errors(candidate), candidate, family=config.regression_family)
    assert run_gate(tmp_path, monkeypatch, comparison, retrieval) == gate_command.GATE_PASS
    out = capsys.readouterr().out
    assert "BELOW THE FLOOR" in out
    rows = {row.metric: row for row in check_comparison(comparison, config)}
    assert rows["faithfulness vs baseline"].verdict == "no_data"
    assert "0 of 65 traces judged (floor 90%)" in rows["faithfulness vs baseline"].detail


# -- the API and the job page's default baseline, live --------------------------------------------------------------

@pytest.fixture(scope="module")
def judged(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """API + one worker that judge with `anthropic` through the fake server, or with the heuristic when asked."""
    tmp = tmp_path_factory.mktemp("compare-judging")
    with FakeAnthropic() as fake:
        env = {"RAGPULSE_QUEUE": f"cmpj-{uuid.uuid4().hex[:8]}", "ANTHROPIC_API_KEY": "test-key",
               "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_JUDGE_MAX_RETRIES": "1"}
        url, api = start_api(redis_url, tmp, env)
        worker = start_worker(redis_url, tmp, env, name="cmpj")
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client
        for proc in (api, worker):
            proc.stop()


def job(client: httpx.Client, judge: str, run: str) -> str:
    response = client.post("/v1/batches", json={"traces": faithful_traces(10), "options": {"judge": judge, "run": run}})
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    wait_for_job(client, job_id)
    return job_id


def test_compare_answers_409_for_a_heuristic_baseline_and_the_job_page_skips_it(judged: httpx.Client,
                                                                                 redis_url: str) -> None:
    run = f"judging-{uuid.uuid4().hex[:6]}"
    first_llm, heuristic, candidate = (job(judged, "anthropic", run), job(judged, HEURISTIC, run),
                                       job(judged, "anthropic", run))
    response = judged.get(f"/v1/jobs/{candidate}/compare", params={"baseline": heuristic})
    assert response.status_code == 409, response.text
    problem = response.json()
    assert problem["errors"][0]["path"] == "query.baseline"
    assert f"judge {HEURISTIC} (heuristic)" in problem["detail"] and "judge anthropic, model" in problem["detail"]
    warned = judged.get(f"/v1/jobs/{candidate}/compare", params={"baseline": heuristic, "on_judge_mismatch": "warn"})
    assert warned.status_code == 200, warned.text
    body = warned.json()
    assert body["judge_mismatch"] and any(w.startswith("JUDGE MISMATCH") for w in body["warnings"])
    assert body["baseline"]["judging"]["judge"] == HEURISTIC and body["candidate"]["judging"]["judge"] == "anthropic"
    assert judged.get(f"/v1/jobs/{candidate}/report").json()["judging"]["judged"] == 10
    store = Store(redis.Redis.from_url(redis_url), 600)
    assert job_judging(store, OPEN_TENANT, heuristic).heuristic
    previous, alike = previous_job(store, OPEN_TENANT, candidate)
    assert previous is not None and previous.job_id == first_llm and alike == f"run {run}"   # the heuristic skipped
