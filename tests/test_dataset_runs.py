"""Issue 26's done-when for datasets, against real Redis, the API and RQ workers: a version pushed from JSONL by the
CLI, a run bound to it whose traces carry only item ids (and answers and retrieved documents), its report with the
human-written subset and the test split apart; compare and gate between runs on different versions."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveStack
from tests.support import ROOT, child_env, wait_for_job

pytestmark = pytest.mark.integration

# Eight items: q0-q3 human (q0, q1 in test), q4-q7 synthetic (q4 in test). Each item's gold is doc d<i>.
ITEMS = [{"item_id": f"q{i}", "query": f"What is fact number {i}?", "gold_doc_ids": [f"d{i}"],
          "reference_answer": f"Fact {i} is true.", "question_type": "single_fact",
          "source": "human" if i < 4 else "synthetic", "split": "test" if i in (0, 1, 4) else "dev"}
         for i in range(8)]


def cli(*args: object, stack: LiveStack) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", *map(str, args), "--server", stack.url],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=child_env("unused"))


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def traces(hits: set[int]) -> list[dict]:
    """Only item ids, answers and retrieved documents: the item's gold doc retrieved first for `hits`, else a miss."""
    return [{"item_id": f"q{i}", "answer": f"Fact {i} is true.",
             "retrieved_docs": [{"id": f"d{i}" if i in hits else "other", "text": f"Fact {i} is true."}]}
            for i in range(8)]


def run(client: httpx.Client, name: str, version: int, hits: set[int]) -> dict:
    posted = client.post("/v1/batches", json={"traces": traces(hits), "dataset": {"name": name, "version": version},
                                              "options": {"judge": "local", "k": [1, 5]}})
    assert posted.status_code == 202, posted.text
    return wait_for_job(client, posted.json()["job_id"])


def test_push_run_report_and_gate(stack: LiveStack, client: httpx.Client, tmp_path: Path) -> None:
    name = f"faq-{uuid.uuid4().hex[:8]}"
    pushed = cli("dataset", "push", name, jsonl(tmp_path / "v1.jsonl", ITEMS), stack=stack)
    assert pushed.returncode == 0, pushed.stderr
    assert f"dataset {name} version 1 published" in pushed.stdout
    assert "8 items: 8 answerable, 0 unanswerable" in pushed.stdout and "by split: dev 5, test 3" in pushed.stdout

    job = run(client, name, 1, hits={0, 2, 4, 5, 6})
    assert job["status"] == "finished", job
    assert job["dataset"]["name"] == name and job["dataset"]["version"] == 1
    assert job["dataset"]["splits"] == {"test": 3, "dev": 5} and job["dataset"]["items"] == 8
    report = client.get(f"/v1/jobs/{job['job_id']}/report").json()
    assert report["dataset"]["content_hash"] == json.loads(
        client.get(f"/v1/datasets/{name}/versions/1").text)["version"]["content_hash"]
    # recall@5 per trace is 1 for a hit, 0 for a miss. Human q0-q3: hits q0, q2 -> 2/4. Test split q0, q1, q4: hits
    # q0, q4 -> 2/3. Whole run: 5 hits of 8.
    assert report["subsets"]["human"]["n"] == 4 and report["subsets"]["human"]["retrieval"]["recall@5"]["mean"] == 0.5
    assert report["subsets"]["test"]["n"] == 3
    assert report["subsets"]["test"]["retrieval"]["recall@5"]["mean"] == pytest.approx(2 / 3)
    assert report["retrieval"]["recall@5"]["mean"] == pytest.approx(5 / 8)
    assert set(report["by_split"]) == {"dev", "test"}
    page = client.get(f"/v1/jobs/{job['job_id']}/report.html").text
    assert "Human-written subset and test split" in page and name in page
    shown = cli("report", job["job_id"], stack=stack)
    assert "HUMAN-WRITTEN SUBSET AND TEST SPLIT" in shown.stdout and f"dataset {name} version 1" in shown.stdout

    changed = [*ITEMS[:7], {**ITEMS[7], "gold_doc_ids": ["d7", "extra"]}]
    assert cli("dataset", "push", name, jsonl(tmp_path / "v2.jsonl", changed), stack=stack).returncode == 0
    second = run(client, name, 2, hits={0, 2, 4, 5, 6})
    comparison = client.get(f"/v1/jobs/{second['job_id']}/compare", params={"baseline": job["job_id"]}).json()
    mismatch = comparison["dataset_mismatch"]
    assert f"dataset {name} version 1" in mismatch and f"dataset {name} version 2" in mismatch
    assert "8 items matched" in mismatch and comparison["warnings"][0].startswith("DATASET MISMATCH")
    refused = client.get(f"/v1/jobs/{second['job_id']}/compare",
                         params={"baseline": job["job_id"], "on_mismatch": "refuse"})
    assert refused.status_code == 409 and refused.json()["errors"][0]["path"] == "query.baseline"

    candidate = jsonl(tmp_path / "candidate.jsonl", traces({0, 2, 4, 5, 6}))
    allowed = tmp_path / "allowed.toml"
    allowed.write_text("allow_heuristic = true\n")          # the test stack judges with the offline heuristic
    gate = cli("gate", candidate, "--dataset", f"{name}:2", "--baseline", job["job_id"], "--config", allowed,
               stack=stack)
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert f"{name} version 1" in gate.stderr and f"{name} version 2" in gate.stderr
    warn = tmp_path / "gate.toml"
    warn.write_text('allow_heuristic = true\n[options]\njudge = "local"\nk = [1, 5]\n[thresholds."recall@5"]\nmin = 0.1\n'
                    '[baseline]\ndataset_mismatch = "warn"\n')
    warned = cli("gate", candidate, "--dataset", f"{name}:2", "--baseline", job["job_id"], "--config", warn,
                 stack=stack)
    assert warned.returncode == 0, warned.stdout + warned.stderr
    assert "WARNING, dataset mismatch" in warned.stderr and "MISMATCH (warned, not refused)" in warned.stdout
    same = cli("gate", candidate, "--dataset", f"{name}:1", "--baseline", job["job_id"], "--config", warn,
               stack=stack)
    assert same.returncode == 0 and "mismatch" not in (same.stdout + same.stderr).lower(), same.stderr


def test_binding_errors_name_their_paths(client: httpx.Client) -> None:
    name = f"bind-{uuid.uuid4().hex[:8]}"
    assert client.post(f"/v1/datasets/{name}/versions", json={"items": ITEMS}).status_code == 201
    ref = {"name": name, "version": 1}

    def post(batch_traces: list[dict], dataset: dict | None = ref) -> httpx.Response:
        return client.post("/v1/batches", json={"traces": batch_traces, "options": {"judge": "none"},
                                                **({"dataset": dataset} if dataset else {})})

    cases = [
        (post([{"item_id": "q0"}], {"name": name, "version": 9}), "$.dataset"),
        (post([{"item_id": "q0"}, {"item_id": "nope"}]), "$.traces[1].item_id"),
        (post([{"item_id": "q0"}, {"item_id": "q1", "gold_doc_ids": ["d9"]}]), "$.traces[1].gold_doc_ids"),
        (post([{"item_id": "q0", "split": "dev"}]), "$.traces[0].split"),
        (post([{"item_id": "q0", "query": "Something else?"}]), "$.traces[0].query"),
        (post([{"answer": "no item, no query"}]), "$.traces[0].query"),
        (post([{"query": "q", "item_id": "q0"}], None), "$.traces[0].item_id"),
    ]
    for response, path in cases:
        assert response.status_code == 422, response.text
        assert path in [e["path"] for e in response.json()["errors"]], (path, response.text)
    agreeing = post([{"item_id": "q1", "query": " What is fact  number 1? ", "relevance": {"d1": 1}, "split": "test"}])
    assert agreeing.status_code == 202, agreeing.text
    production = f"prod-{uuid.uuid4().hex[:8]}"   # items from production queries: still a batch, judged whole
    assert client.post(f"/v1/datasets/{production}/versions",
                       json={"items": [{**ITEMS[0], "source": "production"}]}).status_code == 201
    job = post([{"item_id": "q0"}], {"name": production, "version": 1}).json()
    assert client.get(f"/v1/jobs/{job['job_id']}").json()["queue"] == "batch"
    dry = client.post("/v1/batches", params={"dry_run": "true"},
                      json={"traces": [{"item_id": "q2"}], "dataset": ref, "options": {"judge": "local"}})
    assert dry.status_code == 200 and dry.json()["trace_count"] == 1
    with httpx.Client(base_url=str(client.base_url), timeout=30) as http:   # the online path takes no items
        online = http.post("/v1/traces", json={"traces": [{"query": "q", "item_id": "q0"}]})
        assert online.status_code == 422 and online.json()["errors"][0]["path"] == "$.traces[0].item_id"


def test_items_the_retrieval_filter_set_aside_are_not_judged(client: httpx.Client) -> None:
    name = f"filtered-{uuid.uuid4().hex[:8]}"
    flagged = [{**item, "retrieval_answerable": int(item["item_id"][1:]) not in (3, 7)} for item in ITEMS]
    assert client.post(f"/v1/datasets/{name}/versions", json={"items": flagged}).status_code == 201
    job = run(client, name, 1, hits={0, 1, 2, 4, 5, 6})
    assert job["dataset"]["retrieval_unanswerable"] == 2
    results = {r["item_id"]: r for r in client.get(f"/v1/jobs/{job['job_id']}/results").json()["items"]}
    assert results["q3"]["generation"] is None and results["q3"]["sample_reason"] == "set_aside:retrieval_unanswerable"
    assert results["q3"]["retrieval"]["recall@5"] == 0.0                      # kept and counted: retrieval only
    assert results["q0"]["generation"] is not None and results["q0"]["sampled"] is True
    report = client.get(f"/v1/jobs/{job['job_id']}/report").json()
    assert report["generation"]["n_judged"] == 6 and report["counts"]["total"] == 8
    wrong = client.post("/v1/batches", json={"traces": [{"item_id": "q3", "retrieval_answerable": True}],
                                             "dataset": {"name": name, "version": 1}, "options": {"judge": "none"}})
    assert wrong.status_code == 422 and wrong.json()["errors"][0]["path"] == "$.traces[0].retrieval_answerable"


def test_the_cli_deletes_a_version_then_the_dataset(stack: LiveStack, client: httpx.Client, tmp_path: Path) -> None:
    name = f"gone-{uuid.uuid4().hex[:8]}"
    for rows in (ITEMS, ITEMS[:5]):
        assert cli("dataset", "push", name, jsonl(tmp_path / "items.jsonl", rows), stack=stack).returncode == 0
    one = cli("dataset", "delete", f"{name}:1", stack=stack)
    assert one.returncode == 0, one.stderr
    assert f"deleted version 1 of dataset {name}: versions 1, 8 items freed" in one.stdout
    assert [v["version"] for v in client.get(f"/v1/datasets/{name}/versions").json()["items"]] == [2]
    again = cli("dataset", "delete", f"{name}:1", stack=stack)
    assert again.returncode == 1 and "404" in again.stderr                     # nothing to delete: an error, named
    whole = cli("dataset", "delete", name, stack=stack)
    assert whole.returncode == 0 and f"deleted dataset {name}: versions 2, 5 items freed" in whole.stdout
    assert client.get(f"/v1/datasets/{name}/versions").status_code == 404
    bad = cli("dataset", "delete", f"{name}:zero", stack=stack)
    assert bad.returncode == 2 and "NAME or NAME:VERSION" in bad.stderr
