"""Human labels end to end on real Redis, a real API and real workers (the offline `local` judge): POST and GET
/v1/labels on online and batch traces, tenant scoping, replacement, inter-annotator kappa, calibration labels,
expiry of every key."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import redis

from ragpulse.config import keys
from tests.support import start_api, start_worker, wait_for_job

pytestmark = pytest.mark.integration


@dataclass
class Review:
    """The API (two tenants) and one worker, every judged trace in the review design's uniform pool (q = 1)."""

    acme: httpx.Client
    globex: httpx.Client
    url: str


@pytest.fixture(scope="module")
def review(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Review]:
    tmp = tmp_path_factory.mktemp("labels")
    env = {"RAGPULSE_QUEUE": f"labels-{uuid.uuid4().hex[:8]}", "RAGPULSE_API_KEYS": "acme:key-a,globex:key-b",
           "RAGPULSE_REVIEW_SAMPLE_RATE": "1", "RAGPULSE_APPS": "labelled-shop", "RAGPULSE_JUDGE": "local"}
    url, api = start_api(redis_url, tmp, env)
    worker = start_worker(redis_url, tmp, env, name="labels")
    with (httpx.Client(base_url=url, timeout=30, headers={"Authorization": "Bearer key-a"}) as acme,
          httpx.Client(base_url=url, timeout=30, headers={"Authorization": "Bearer key-b"}) as globex):
        yield Review(acme, globex, url)
    for proc in (api, worker):
        proc.stop()


def online(tag: str, n: int, app: str = "labelled-shop", hallucinate: bool = False) -> list[dict]:
    """Traces the local judge finds supported (or, with `hallucinate`, unsupported), of an app no other test module
    uses (the metrics hash is shared: test_online counts app `shop`). The tag is in the query: traces of two tags are
    distinct contents, each with its own review slot and labels."""
    answer = "The moon is made of green cheese and costs 12 euros." if hallucinate else "Fact {i} holds."
    return [{"trace_id": f"{tag}-{i}", "app": app, "query": f"What about fact {i} ({tag})?", "answer": answer.format(i=i),
             "retrieved_docs": [{"id": f"d{i}", "text": f"Fact {i} holds. Nothing else is known."}]}
            for i in range(n)]


def post_online(client: httpx.Client, traces: list[dict]) -> list[str]:
    response = client.post("/v1/traces", json={"traces": traces})
    assert response.status_code == 202, response.text
    ids = response.json()["sampled_trace_ids"]
    deadline = time.monotonic() + 60
    while any(client.get(f"/v1/traces/{t}").json()["status"] == "pending" for t in ids):
        assert time.monotonic() < deadline, "online traces not processed"
        time.sleep(0.1)
    return ids


def label(client: httpx.Client, trace_id: str, reviewer: str, hallucinated: bool, **extra: object) -> httpx.Response:
    return client.post("/v1/labels", json={"trace_id": trace_id, "reviewer": reviewer, "hallucinated": hallucinated,
                                           "abstained": False, **extra})


def test_an_online_label_is_stored_beside_the_judges_call_and_replaced_by_its_reviewer(review: Review) -> None:
    tag = uuid.uuid4().hex[:8]
    [trace_id] = post_online(review.acme, online(tag, 1))
    first = label(review.acme, trace_id, "ann@example.com", True, note="the judge missed it",
                  claims=[{"index": 0, "verdict": "unsupported"}])
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["trace_id"] == trace_id and body["job_id"] is None and body["app"] == "labelled-shop"
    assert body["judge"] == "heuristic" and len(body["prompt_version"]) == 12
    assert body["judge_hallucinated"] is False and body["hallucinated"] is True and body["replaced"] is False
    assert body["sample"] == "uniform" and body["inclusion_probability"] == 1.0 and body["reason"] == "uniform"
    assert body["labelled_at"].endswith("Z") and body["claims"] == [{"index": 0, "verdict": "unsupported"}]
    assert body["answered"] is True                     # the judged answer made claims: the rate's population

    nowhere = label(review.acme, trace_id, "bob", True, claims=[{"index": 0, "verdict": "supported"},
                                                              {"index": 0, "verdict": "unsupported"},
                                                              {"index": 70, "verdict": "supported"}])
    assert nowhere.status_code == 422                                 # a verdict on no claim would be lost
    assert [e["path"] for e in nowhere.json()["errors"]] == ["$.claims[1].index", "$.claims[2].index"]
    assert nowhere.json()["detail"] == ("1 claim verdict(s) name no claim and 1 claim verdict(s) repeat a claim "
                                        f"index of trace {trace_id}")

    again = label(review.acme, trace_id, "ann@example.com", False)
    assert again.status_code == 201 and again.json()["replaced"] is True
    listed = review.acme.get("/v1/labels", params={"trace_id": trace_id}).json()
    assert [(x["reviewer"], x["hallucinated"]) for x in listed["labels"]] == [("ann@example.com", False)]
    assert listed["majority"] is False and listed["agreement"]["method"] is None


def test_another_tenants_trace_or_job_is_404(review: Review) -> None:
    tag = uuid.uuid4().hex[:8]
    [trace_id] = post_online(review.acme, online(tag, 1))
    response = label(review.globex, trace_id, "bob", True)
    assert response.status_code == 404 and response.json()["title"] == "Trace not found"
    assert review.globex.get("/v1/labels", params={"trace_id": trace_id}).status_code == 404
    job_id = review.acme.post("/v1/batches", json={"traces": online(tag, 2), "options": {"judge": "local"}}
                              ).json()["job_id"]
    wait_for_job(review.acme, job_id)
    response = label(review.globex, f"{tag}-0", "bob", True, job_id=job_id)
    assert response.status_code == 404 and response.json()["title"] == "Job not found"
    assert label(review.acme, f"{tag}-9", "bob", True, job_id=job_id).status_code == 404
    assert label(review.acme, "never-posted", "bob", True).status_code == 404


def test_an_unjudged_trace_is_422_naming_the_trace_id(review: Review) -> None:
    trace = {"trace_id": f"noanswer-{uuid.uuid4().hex[:8]}", "app": "labelled-shop", "query": "q?",
             "retrieved_docs": [{"id": "d", "text": "D."}]}
    [trace_id] = post_online(review.acme, [trace])
    response = label(review.acme, trace_id, "ann", True)
    assert response.status_code == 422, response.text
    [error] = response.json()["errors"]
    assert error["path"] == "$.trace_id" and "no judge verdict" in error["message"]


@pytest.mark.parametrize(("body", "path"), [
    ({"trace_id": "t", "reviewer": "", "hallucinated": True, "abstained": False}, "$.reviewer"),
    ({"trace_id": "t", "reviewer": "a b", "hallucinated": True, "abstained": False}, "$.reviewer"),
    ({"trace_id": "t", "reviewer": "calibration", "hallucinated": True, "abstained": False}, "$"),
    ({"trace_id": "t", "reviewer": "a", "hallucinated": "yes", "abstained": False}, "$.hallucinated"),
    ({"trace_id": "t", "reviewer": "a", "hallucinated": True}, "$"),
    ({"trace_id": "t", "reviewer": "a", "hallucinated": True, "abstained": False, "note": "x" * 4001}, "$.note"),
    ({"trace_id": "t", "reviewer": "a", "hallucinated": True, "abstained": False,
      "claims": [{"index": -1, "verdict": "supported"}]}, "$.claims[0].index"),
])
def test_bad_fields_are_422_naming_the_path(review: Review, body: dict, path: str) -> None:
    response = review.acme.post("/v1/labels", json=body)
    assert response.status_code == 422, response.text
    assert path in [e["path"] for e in response.json()["errors"]]


def test_two_reviewers_give_cohens_kappa_and_three_fleiss(review: Review) -> None:
    app = f"iaa{uuid.uuid4().hex[:6]}"
    ids = post_online(review.acme, online("iaa" + app, 4, app=app))
    calls = {"ann": [True, True, False, False], "bob": [True, False, False, False], "cy": [True, True, True, False]}
    for reviewer in ("ann", "bob"):
        for trace_id, call in zip(ids, calls[reviewer], strict=True):
            assert label(review.acme, trace_id, reviewer, call).status_code == 201
    two = review.acme.get("/v1/labels", params={"trace_id": ids[0]}).json()["agreement"]
    # ann vs bob over 4 traces: p_o = 3/4; ann says yes 2/4, bob 1/4: p_e = 2/4*1/4 + 2/4*3/4 = 1/2;
    # kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2.
    assert two["method"] == "cohen" and two["kappa"] == pytest.approx(0.5) and two["traces"] == 4
    for trace_id, call in zip(ids, calls["cy"], strict=True):
        assert label(review.acme, trace_id, "cy", call).status_code == 201
    three = review.acme.get("/v1/labels", params={"trace_id": ids[0]}).json()
    # yes/no counts per trace: [3,0], [2,1], [1,2], [0,3]; P_i = 1, 1/3, 1/3, 1 -> P_bar = 2/3;
    # p_yes = 6/12: P_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    assert three["agreement"]["method"] == "fleiss" and three["agreement"]["kappa"] == pytest.approx(1 / 3)
    assert three["majority"] is True and len(three["labels"]) == 3


def test_batch_traces_and_calibrations_are_labelled(review: Review) -> None:
    tag = uuid.uuid4().hex[:8]
    traces = online(tag, 3) + online(f"{tag}h", 2, hallucinate=True)
    job_id = review.acme.post("/v1/batches", json={"traces": traces, "options": {"judge": "local"}}).json()["job_id"]
    wait_for_job(review.acme, job_id)
    stored = label(review.acme, f"{tag}h-0", "ann", True, job_id=job_id)
    assert stored.status_code == 201, stored.text
    assert stored.json()["job_id"] == job_id and stored.json()["judge_hallucinated"] is True
    labels = [{"trace_id": t["trace_id"], "faithful": True} for t in traces]
    assert review.acme.post("/v1/calibrations", json={"job_id": job_id, "labels": labels}).status_code == 201
    listed = review.acme.get("/v1/labels", params={"trace_id": f"{tag}h-0", "job_id": job_id}).json()
    by_reviewer = {x["reviewer"]: x for x in listed["labels"]}
    assert set(by_reviewer) == {"ann", "calibration"}
    assert by_reviewer["calibration"]["hallucinated"] is False and by_reviewer["calibration"]["abstained"] is None
    assert listed["majority"] is None                     # one each way: a tie is disputed


def test_every_label_and_review_key_expires(review: Review, redis_client: redis.Redis) -> None:
    tag = uuid.uuid4().hex[:8]
    [trace_id] = post_online(review.acme, online(tag, 1))
    response = label(review.acme, trace_id, "ann", False)
    assert response.status_code == 201
    app, content = "labelled-shop", response.json()["content_key"]
    written = [keys.content_labels("acme", content), keys.labelled_content("acme", None, trace_id),
               keys.app_labels("acme", app), keys.labelled_apps(), keys.review_pool("acme", app),
               keys.review_copy("acme", trace_id), keys.review_content("acme", app, content),
               keys.review_refs("acme", app, content)]
    ttls = {key: redis_client.ttl(key) for key in written}
    assert all(ttl > 0 for ttl in ttls.values()), ttls
    assert ttls[keys.content_labels("acme", content)] > 89 * 86400            # RAGPULSE_LABEL_TTL_DAYS=90
    assert 6 * 86400 < ttls[keys.review_copy("acme", trace_id)] <= 7 * 86400      # RAGPULSE_REVIEW_TEXT_TTL_SECONDS
    leftovers = [k.decode() for k in redis_client.scan_iter(match="ragpulse:labels:*", count=1000)]
    leftovers += [k.decode() for k in redis_client.scan_iter(match="ragpulse:review:*", count=1000)]
    assert all(redis_client.ttl(k) > 0 for k in leftovers)


def test_an_apps_labels_and_review_index_are_capped(redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the cap the traces labelled longest ago lose their labels; the review index keeps its lowest draws."""
    from ragpulse.config import defaults  # noqa: PLC0415
    from ragpulse.config.settings import Settings  # noqa: PLC0415
    from ragpulse.labels.design import draw  # noqa: PLC0415
    from ragpulse.labels.sources import TraceRef, queue_reviewable  # noqa: PLC0415
    from ragpulse.labels.store import LabelStore  # noqa: PLC0415
    from ragpulse.model.scores import GenerationScores  # noqa: PLC0415
    from ragpulse.model.labels import Label  # noqa: PLC0415
    from ragpulse.model.results import TraceResult  # noqa: PLC0415

    monkeypatch.setattr(defaults, "LABELLED_TRACES_PER_APP", 3)
    monkeypatch.setattr(defaults, "REVIEW_POOL_CAP", 3)
    tenant, app = f"cap{uuid.uuid4().hex[:6]}", "capped"
    store = LabelStore(redis_client, 3600)
    for n in range(5):
        store.put(tenant, Label(trace_id=f"t{n}", job_id=None, app=app, reviewer="ann", hallucinated=False,
                                abstained=False, labelled_at=f"2026-01-01T00:00:0{n}.000Z", judge="local",
                                prompt_version="v", judge_hallucinated=False, judge_abstained=False, sample="uniform",
                                inclusion_probability=1.0))
    assert [len(store.of_trace(tenant, None, f"t{n}")) for n in range(5)] == [0, 0, 1, 1, 1]
    assert redis_client.zcard(keys.app_labels(tenant, app)) == 3

    scores = GenerationScores(faithfulness=1.0, hallucinated=False, abstained=False, answer_relevance=3,
                              context_relevance=None, correctness=None, answerable_from_context=True,
                              unanswerable=False, unanswerable_hallucination=None, claims=1, supported=1,
                              unsupported=0, contradicted=0, cited=0, cited_not_retrieved=[], cited_without_support=[])
    settings = Settings(review_sample_rate=1.0)
    with redis_client.pipeline() as pipe:
        for n in range(10):
            result = TraceResult(trace_id=f"t{n}", index=n, status="ok", app=app, labels="unlabelled", retrieval=None,
                                 judge="local", generation=scores, content_key=f"c{n}")
            queue_reviewable(pipe, settings, tenant, TraceRef(f"t{n}", "job", n), result)
        pipe.execute()
    kept = [m.decode() for m in redis_client.zrange(keys.review_pool(tenant, app), 0, -1)]
    assert kept == sorted((f"c{n}" for n in range(10)), key=lambda c: draw(tenant, app, c))[:3]


def test_the_hallucination_rate_is_corrected_with_the_labels_of_its_own_population() -> None:
    """Labelled abstentions and claim-less answers are outside the hallucination rate (answers with claims) and are
    judge-faithful and human-faithful alike: counted, they inflated the specificity the correction divides by (30 of
    them moved a corrected 0.132 to 0.202)."""
    from ragpulse.labels.corrections import corrected_rates, population  # noqa: PLC0415
    from ragpulse.labels.traces import reduce  # noqa: PLC0415
    from ragpulse.model.labels import Label  # noqa: PLC0415

    def labelled(n: int, judge: bool, human: bool, answered: bool | None) -> list:
        return [reduce([Label(trace_id=f"t{n}-{i}", job_id=None, app="a", reviewer="ann", hallucinated=human,
                              abstained=not answered, labelled_at="2026-01-01T00:00:00.000Z", judge="anthropic",
                              prompt_version="v", judge_hallucinated=judge, judge_abstained=not answered,
                              sample="uniform", inclusion_probability=1.0, answered=answered)])
                for i in range(n)]

    answered = [*labelled(16, True, True, True), *labelled(4, False, True, True), *labelled(50, False, False, True),
                *labelled(10, True, False, True)]
    abstentions = labelled(30, False, False, False)
    assert population(answered + abstentions, "hallucination_rate") == answered
    assert population(labelled(2, False, False, None), "hallucination_rate") != []   # stored before the field
    counts = {"hallucination_rate": (250, 1000)}
    alone, mixed = (corrected_rates(counts, traces)["hallucination_rate"] for traces in (answered,
                                                                                          answered + abstentions))
    assert mixed.corrected == alone.corrected and mixed.ci95 == alone.ci95     # before: 0.202 against 0.132


def test_a_claim_index_given_twice_is_named_as_repeated_not_as_no_claim() -> None:
    from types import SimpleNamespace  # noqa: PLC0415

    import msgspec  # noqa: PLC0415

    from ragpulse.exceptions import InvalidBody  # noqa: PLC0415
    from ragpulse.labels.desk import check_claims  # noqa: PLC0415
    from ragpulse.model.labels import LabelRequest  # noqa: PLC0415

    request = msgspec.convert({"trace_id": "t1", "reviewer": "ann", "hallucinated": True, "abstained": False,
                               "claims": [{"index": 1, "verdict": "supported"},
                                          {"index": 1, "verdict": "unsupported"}]}, LabelRequest)
    with pytest.raises(InvalidBody) as caught:
        check_claims(request, SimpleNamespace(claims=["a", "b"]))   # type: ignore[arg-type] - only .claims is read
    assert caught.value.detail == "1 claim verdict(s) repeat a claim index of trace t1"
    [error] = caught.value.errors
    assert error["path"] == "$.claims[1].index"
    assert error["message"].startswith("claim 1 is labelled twice: already at $.claims[0]")
