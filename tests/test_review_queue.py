"""The review design and queue: inclusion probabilities are what they claim (a fixed-seed statistical check), and end
to end on real Redis, the API and a worker: the queue serves exactly the design's picks in hash order, uniform first,
hides the judge's claim verdicts from the claim list, leaves out what a reviewer labelled, and the labels reach
GET /v1/apps/{app}/agreement and the judge-agreement gauges on /metrics."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

import httpx
import pytest

from ragpulse.labels.design import ReviewDesign, draw
from tests.support import api_and_workers, wait_for_job
from tests.test_labels import label, online, post_online
from tests.test_online import metric

Q = 0.3


def test_inclusion_probabilities_are_exact_whatever_the_content() -> None:
    """20,000 traces, half judged hallucinations, fixed seed: each stratum is picked at its stated pi, the uniform
    pool at q in both halves, and 1 / pi weights recover the number of hallucinations (Horvitz-Thompson)."""
    rng = random.Random(20240601)
    design = ReviewDesign(q=0.1)
    traces = [(f"t{rng.getrandbits(64):x}", rng.random() < 0.5) for _ in range(20_000)]
    for hallucinated in (False, True):
        group = [t for t, h in traces if h == hallucinated]
        placed = [design.place(draw("acme", "shop", t), design.stratum(False, hallucinated, False)) for t in group]
        pi = design.probability("hallucinated" if hallucinated else None)          # 0.55 or 0.1
        picked = sum(p.sample != "ad_hoc" for p in placed) / len(group)
        uniform = sum(p.sample == "uniform" for p in placed) / len(group)
        sd_pi, sd_q = (pi * (1 - pi) / len(group)) ** 0.5, (0.1 * 0.9 / len(group)) ** 0.5
        assert abs(picked - pi) < 4 * sd_pi and abs(uniform - 0.1) < 4 * sd_q
        assert all(p.inclusion_probability == pi for p in placed if p.sample != "ad_hoc")
    estimates = []
    for tenant in (f"tenant{n}" for n in range(200)):               # 200 designs: the draw is salted by tenant
        picks = [(h, design.place(draw(tenant, "shop", t), design.stratum(False, h, False))) for t, h in traces[:2000]]
        estimates.append(sum(h / p.inclusion_probability for h, p in picks if p.inclusion_probability))
    true = sum(h for _, h in traces[:2000])
    assert abs(sum(estimates) / len(estimates) - true) < 0.01 * true


def test_targeted_rates_follow_the_strata_and_precedence() -> None:
    design = ReviewDesign(q=0.1)
    assert design.stratum(True, True, True) == "disagreement" and design.probability("disagreement") == 1.0
    assert design.stratum(False, True, True) == "hallucinated" and design.probability("hallucinated") == 0.55
    assert design.stratum(False, False, True) == "near_threshold"
    assert design.probability("near_threshold") == pytest.approx(0.19) and design.probability(None) == 0.1
    assert design.place(0.05, None).sample == "uniform" and design.place(0.5, "hallucinated").reason == "hallucinated"
    assert design.place(0.6, "hallucinated").sample == "ad_hoc"


@pytest.fixture(scope="module")
def api(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    tmp = tmp_path_factory.mktemp("review")
    env = {"RAGPULSE_QUEUE": f"review-{uuid.uuid4().hex[:8]}", "RAGPULSE_REVIEW_SAMPLE_RATE": str(Q),
           "RAGPULSE_APPS": "rq", "RAGPULSE_JUDGE": "local", "RAGPULSE_JUDGE_MAX_ANSWER_CHARS": "300"}
    with api_and_workers(redis_url, tmp, env, name="review") as client:
        yield client


def expected_picks(client: httpx.Client, app: str, ids: list[str], job_id: str | None = None) -> dict[str, tuple]:
    """trace id -> (draw, reason, pi) of the traces the design picks, from each trace's judged verdict."""
    design, picks = ReviewDesign(q=Q), {}
    for trace_id in ids:
        if job_id is None:
            result = client.get(f"/v1/traces/{trace_id}").json()["result"]
        else:
            result = next(r for r in client.get(f"/v1/jobs/{job_id}/results").json()["items"]
                          if r["trace_id"] == trace_id)
        u = result["review_draw"]                   # stamped when judged: the draw of its content, and the share
        assert u == draw("default", app, result["content_key"]) and result["review_share"] == Q
        placed = design.place(u, design.stratum(False, result["generation"]["hallucinated"], False))
        if placed.sample != "ad_hoc":
            picks[trace_id] = (u, placed.reason, placed.inclusion_probability)
    return picks


@pytest.mark.integration
def test_the_queue_serves_the_designs_picks_uniform_first_in_hash_order(api: httpx.Client) -> None:
    app, tag = f"rq{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:6]
    ids = post_online(api, online(tag, 30, app=app) + online(f"{tag}h", 20, app=app, hallucinate=True))
    batch = online(f"{tag}b", 10, app=app)
    job_id = api.post("/v1/batches", json={"traces": batch, "options": {"judge": "local"}}).json()["job_id"]
    wait_for_job(api, job_id)
    picks = expected_picks(api, app, ids) | expected_picks(api, app, [t["trace_id"] for t in batch], job_id)
    queue = api.get(f"/v1/apps/{app}/review", params={"n": 50}).json()
    items = queue["items"]
    assert {i["trace_id"]: (i["reason"], i["inclusion_probability"]) for i in items} == \
        {t: (reason, pi) for t, (_, reason, pi) in picks.items()}
    uniform = [i for i in items if i["reason"] == "uniform"]
    assert items[:len(uniform)] == uniform, "below 30 uniform labels the uniform sample comes first"
    assert [picks[i["trace_id"]][0] for i in uniform] == sorted(picks[i["trace_id"]][0] for i in uniform)
    assert queue["estimation"] == {"pool": len(uniform), "labelled": 0, "needed": 30}
    batch_items = [i for i in items if i["job_id"] == job_id]
    assert all(i["trace_id"].startswith(f"{tag}b-") and i["documents"][0]["text"] for i in batch_items)
    item = items[0]
    assert set(item["claims"][0]) == {"index", "text"}, "claim verdicts stay in `judge`, for after the answer"
    assert item["judge"]["judge"] == "heuristic" and item["judge"]["claims"][0]["verdict"]
    assert item["query"] and item["answer"] and item["labels"] == 0


@pytest.mark.integration
def test_labelled_items_leave_the_queue_and_reach_the_gauges(api: httpx.Client) -> None:
    app, tag = "rq", uuid.uuid4().hex[:6]
    post_online(api, online(tag, 20, app=app) + online(f"{tag}h", 10, app=app, hallucinate=True))
    first = api.get(f"/v1/apps/{app}/review", params={"n": 5}).json()["items"]
    assert len(first) == 5
    for item in first[:3]:
        assert label(api, item["trace_id"], "ann", not item["judge"]["hallucinated"]).status_code == 201
    seen = {i["trace_id"] for i in first[:3]}
    for_ann = {i["trace_id"] for i in api.get(f"/v1/apps/{app}/review", params={"n": 50, "reviewer": "ann"}
                                              ).json()["items"]}
    for_bob = {i["trace_id"] for i in api.get(f"/v1/apps/{app}/review", params={"n": 50, "reviewer": "bob"}
                                              ).json()["items"]}
    anyone = {i["trace_id"] for i in api.get(f"/v1/apps/{app}/review", params={"n": 50}).json()["items"]}
    assert not seen & for_ann and seen <= for_bob and not seen & anyone
    agreement = api.get(f"/v1/apps/{app}/agreement").json()
    [local] = [j for j in agreement["judges"] if j["judge"] == "heuristic" and j["current"]]
    stats = local["agreement"]
    uniform = sum(i["reason"] == "uniform" for i in first[:3])
    assert local["traces"] >= 3 and local["disputed"] == 0 and local["ad_hoc"] == 0
    assert stats["labels"] >= 3 and stats["estimation_labels"] >= uniform
    assert stats["counts"]["human_hallucinated_judge_hallucinated"] == 0          # every label contradicts the judge
    assert stats["counts"]["human_faithful_judge_faithful"] == 0
    assert "30 are needed" in stats["warning"] and local["newest_label_at"] >= local["oldest_label_at"]
    assert agreement["window_days"] == 30
    text = api.get("/metrics").text
    assert metric(text, "ragpulse_judge_agreement_labels", app="rq", judge="heuristic") >= 3
    disagreeing = metric(text, "ragpulse_judge_agreement_labels", app="rq", human="hallucinated",
                         judge_verdict="faithful") + metric(text, "ragpulse_judge_agreement_labels", app="rq",
                                                            human="faithful", judge_verdict="hallucinated")
    assert disagreeing >= 3
    assert metric(text, "ragpulse_judge_labels_last_timestamp_seconds", app="rq", judge="heuristic") > 1.7e9
    assert metric(text, "ragpulse_judge_current_prompt", judge="heuristic") == 1


@pytest.mark.integration
def test_answers_are_cut_like_the_judges_input_and_n_is_bounded(api: httpx.Client) -> None:
    app = f"rq{uuid.uuid4().hex[:6]}"
    long = [{"trace_id": f"long-{app}-{i}", "app": app, "query": f"q{i}?", "answer": "Fact holds. " * 100,
             "retrieved_docs": [{"id": "d", "text": "Fact holds."}]} for i in range(40)]   # none picked: 0.7^40
    post_online(api, long)
    items = api.get(f"/v1/apps/{app}/review", params={"n": 50}).json()["items"]
    assert items and all(len(i["answer"]) <= 300 for i in items)
    for bad in (0, 51, "x"):
        assert api.get(f"/v1/apps/{app}/review", params={"n": bad}).status_code == 400
    assert api.get("/v1/apps/bad app/review").status_code in {400, 404}
