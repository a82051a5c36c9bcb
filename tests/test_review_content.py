"""A label belongs to the content that was judged, not to a job: the examples file evaluated six times is one review
slot per distinct trace, served once, whose label every re-run reads, and agreement counts distinct traces (saying
how many appearances they stand for). And the review share is the app's policy, kept per content as first judged:
raising it later leaves earlier inclusion probabilities as they were."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator

import httpx
import pytest
import redis

from ragpulse.config.settings import Settings
from ragpulse.labels.design import draw
from ragpulse.labels.lookup import Judged
from ragpulse.labels.placing import place_judged
from ragpulse.labels.sources import TraceRef, judge_view, queue_reviewable
from ragpulse.metrics.correction import corrected_rate
from ragpulse.model.agreement import LabelledPair
from ragpulse.model.results import TraceResult
from ragpulse.model.scores import GenerationScores
from tests.support import ROOT, api_and_workers, finished_job

RUNS = 6


@pytest.fixture(scope="module")
def api(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    env = {"RAGPULSE_QUEUE": f"content-{uuid.uuid4().hex[:8]}", "RAGPULSE_REVIEW_SAMPLE_RATE": "1.0",
           "RAGPULSE_JUDGE": "local"}
    with api_and_workers(redis_url, tmp_path_factory.mktemp("content"), env, name="content") as client:
        yield client


@pytest.mark.integration
def test_the_examples_file_evaluated_six_times_is_one_review_slot_per_trace(api: httpx.Client) -> None:
    app = f"nimbus{uuid.uuid4().hex[:6]}"
    lines = (ROOT / "examples" / "acme_support_traces.jsonl").read_text().splitlines()
    traces = [json.loads(line) | {"app": app} for line in lines if line.strip()]
    jobs = [finished_job(api, {"traces": traces, "options": {"judge": "local"}}) for _ in range(RUNS)]
    judged = {r["trace_id"] for r in api.get(f"/v1/jobs/{jobs[0]}/results", params={"limit": 1000}).json()["items"]
              if r.get("generation")}
    assert len(judged) > 50

    served: list[dict] = []
    while items := api.get(f"/v1/apps/{app}/review", params={"n": 50}).json()["items"]:
        served += items
        for item in items:          # every item labelled: the judge's own call, so nothing is disputed
            body = {"trace_id": item["trace_id"], "job_id": item["job_id"], "reviewer": "ann",
                    "hallucinated": item["judge"]["hallucinated"], "abstained": False}
            assert api.post("/v1/labels", json=body).status_code == 201
        assert len(served) <= len(judged), "the queue served some content twice"
    ids = [item["trace_id"] for item in served]
    assert sorted(ids) == sorted(judged)                      # q = 1: every distinct trace, each once
    assert len({item["content_key"] for item in served}) == len(served)
    assert all(item["appearances"] == RUNS and item["reason"] == "uniform" for item in served)

    agreement = api.get(f"/v1/apps/{app}/agreement").json()
    [local] = [j for j in agreement["judges"] if j["judge"] == "heuristic"]
    assert local["traces"] == local["labels"] == len(judged) and local["appearances"] == RUNS * len(judged)
    assert local["agreement"]["labels"] == local["agreement"]["estimation_labels"] == len(judged)
    assert local["agreement"]["appearances"] == RUNS * len(judged)

    some = ids[0]                                             # the label reads the same from every re-run
    for job_id in jobs:
        listed = api.get("/v1/labels", params={"trace_id": some, "job_id": job_id}).json()
        assert [lab["reviewer"] for lab in listed["labels"]] == ["ann"]


def _scores(hallucinated: bool) -> GenerationScores:
    return GenerationScores(faithfulness=0.0 if hallucinated else 1.0, hallucinated=hallucinated, abstained=False,
                            answer_relevance=3, context_relevance=None, correctness=None,
                            answerable_from_context=True, unanswerable=False, unanswerable_hallucination=None,
                            claims=1, supported=0 if hallucinated else 1, unsupported=int(hallucinated),
                            contradicted=0, cited=0, cited_not_retrieved=[], cited_without_support=[])


def _judged(tenant: str, app: str, content: str, share: float, job: str) -> TraceResult:
    result = TraceResult(trace_id=content, index=0, status="ok", app=app, labels="unlabelled", retrieval=None,
                         judge="local", generation=_scores(False), content_key=content, review_share=share,
                         review_draw=draw(tenant, app, content))
    return result


def test_raising_the_share_leaves_earlier_inclusion_probabilities_alone(redis_client: redis.Redis) -> None:
    tenant, app, settings = f"share{uuid.uuid4().hex[:6]}", "shop", Settings(review_sample_rate=0.1)
    early = [f"early{n}" for n in range(400)]
    late = [c for c in (f"late{n}" for n in range(100)) if 0.1 <= draw(tenant, app, c) < 0.5][:5]
    with redis_client.pipeline() as pipe:
        for content in early:
            queue_reviewable(pipe, settings, tenant, TraceRef(content, "job1", 0), _judged(tenant, app, content, 0.1,
                                                                                            "job1"))
        pipe.execute()
    with redis_client.pipeline() as pipe:       # the share raised to 0.5; the same contents re-run, and new ones
        for content in [*early, *late]:
            queue_reviewable(pipe, settings, tenant, TraceRef(content, "job2", 0), _judged(tenant, app, content, 0.5,
                                                                                            "job2"))
        pipe.execute()

    def placed(content: str, share: float) -> tuple[str, float | None]:
        result = _judged(tenant, app, content, share, "job2")
        judged = Judged(TraceRef(content, "job2", 0), app, judge_view(result), False, content=content, share=share)
        placement = place_judged(redis_client, 0.5, tenant, judged, judge_view(result), near=False)
        return placement.sample, placement.inclusion_probability

    for content in early:
        u = draw(tenant, app, content)
        assert placed(content, 0.5) == (("uniform", 0.1) if u < 0.1 else ("ad_hoc", None))
    assert late and all(placed(content, 0.5) == ("uniform", 0.5) for content in late)   # judged after: the new q


def test_a_share_changed_midway_still_corrects_to_the_truth() -> None:
    """5,000 contents, 20% truly hallucinated; the judge flags 90% of those and 15% of the faithful ones. The share is
    0.02 for the first half and 0.1 for the second: labels weighted by the share each content was judged under give
    a corrected rate whose interval holds the truth (one uniform weight, 1 / 0.1, would not: the early half is
    under-weighted only if its mix differs, so the check is on the truth itself)."""
    rng = random.Random(7)
    contents = [(rng.random() < 0.2, rng.random()) for _ in range(5000)]
    judge = [(truth and rng.random() < 0.9) or (not truth and rng.random() < 0.15) for truth, _ in contents]
    pairs = []
    for n, ((truth, u), flagged) in enumerate(zip(contents, judge, strict=True)):
        q = 0.02 if n < 2500 else 0.1
        if u < q:
            pairs.append(LabelledPair(judge=flagged, human=truth, weight=1 / q, uniform=True))
    true_rate = sum(t for t, _ in contents) / len(contents)
    rate = corrected_rate(sum(judge), len(judge), pairs)
    assert rate.status == "ok" and rate.ci95 is not None
    assert rate.ci95[0] <= true_rate <= rate.ci95[1]
