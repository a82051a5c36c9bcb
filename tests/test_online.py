"""The online path end to end, on real Redis, a real API and real worker processes: POST /v1/traces, the stream's
consumer group, GET /v1/traces/{trace_id}, and what is counted and kept."""

from __future__ import annotations

import os
import signal
import time
import uuid

import httpx
import pytest
import redis

from ragpulse.config import keys
from ragpulse.store.scripts import ACK_POSTS
from tests.fake_anthropic import FakeAnthropic
from tests.support import children_of

pytestmark = pytest.mark.integration


def traces(n: int, tag: str, app: str = "shop") -> list[dict]:
    return [{"trace_id": f"{tag}-{i}", "app": app, "query": f"{tag} question {i}?", "answer": f"Fact {i} holds.",
             "source": "production", "gold_doc_ids": ["d"],
             "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds. Nothing else."}]} for i in range(n)]


def wait_until(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s"
        time.sleep(0.1)


def stream_of(queue: str) -> str:
    return keys.online_stream(f"{queue}-online")


def metric(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        series, value = line.rsplit(" ", 1)
        if all(f'{k}="{v}"' in series for k, v in labels.items()):
            total += float(value)
    return total


def test_posted_traces_are_counted_and_sampled_ones_read_back(cluster_factory, redis_client: redis.Redis) -> None:
    from ragpulse.store.clock import utcday  # noqa: PLC0415

    spend_key = keys.tenant_spend("default", utcday())
    calls_before = int(redis_client.hget(spend_key, "judge_calls") or 0)
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS="shop", RAGPULSE_JUDGE="anthropic")
        http = cluster.http
        assert http.put("/v1/apps/shop/policy", json={"sample_rate": 0.5}).status_code == 200
        posted = [*traces(30, "ok"), {"query": "an id is given", "app": "shop", "answer": "Fact 0 holds.",
                                      "retrieved_docs": [{"id": "d", "text": "Fact 0 holds."}]}]
        response = http.post("/v1/traces", json={"traces": posted})
        assert response.status_code == 202, response.text
        body = response.json()
        assert body["accepted"] == 31 and len(body["trace_ids"]) == 31
        assert body["trace_ids"][:30] == [t["trace_id"] for t in posted[:30]] and body["trace_ids"][30]
        sampled = set(body["sampled_trace_ids"])
        assert 0 < len(sampled) < 31, "a 0.5 sample of 31 traces takes some and leaves some"
        assert "job_id" not in body

        def done() -> bool:
            return all(http.get(f"/v1/traces/{tid}").json()["status"] == "done" for tid in sampled)
        wait_until(done, what="every sampled trace processed")
        for tid in sampled:
            record = http.get(f"/v1/traces/{tid}").json()
            assert record["sampled"] is True and record["sample_reason"] == "sampled"
            assert record["result"]["generation"]["faithfulness"] == 1.0
            assert record["result"]["claims"] and record["result"]["judge"] == "anthropic"
            assert record["processed_at"] >= record["received_at"]
        for tid in set(body["trace_ids"]) - sampled:
            missing = http.get(f"/v1/traces/{tid}")
            assert missing.status_code == 404 and "only counted" in missing.json()["detail"]
        assert len(fake.requests) == len(sampled)
        # Every judge call is charged to the tenant's day (online calls belong to no job).
        wait_until(lambda: int(redis_client.hget(spend_key, "judge_calls") or 0) - calls_before == len(sampled),
                   what="the judge calls charged to the tenant")

        view = http.get("/v1/monitor/shop", params={"window": "5m"}).json()
        assert view["traces_received"] == 31 and view["traces_processed"] == 31
        assert view["sampled"] == len(sampled) and view["not_sampled"] == 31 - len(sampled)
        text = http.get("/metrics").text
        assert metric(text, "ragpulse_traces_received_total", app="shop") == 31
        assert metric(text, "ragpulse_traces_sampled_total", app="shop") == len(sampled)
        assert metric(text, "ragpulse_traces_not_sampled_total", app="shop") == 31 - len(sampled)
        assert metric(text, "ragpulse_online_backlog") == 0 and metric(text, "ragpulse_online_lag_seconds") == 0


def test_unsampled_traces_leave_no_per_trace_key(cluster_factory, redis_client: redis.Redis) -> None:
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_SAMPLE_RATE="0")
        tag = uuid.uuid4().hex[:8]
        before = set(redis_client.scan_iter(match="ragpulse:*", count=1000))
        for n in range(5):
            response = cluster.http.post("/v1/traces", json={"traces": traces(20, f"{tag}{n}", app=f"app{tag}")})
            assert response.status_code == 202 and response.json()["sampled_trace_ids"] == []
        stream = stream_of(cluster.env["RAGPULSE_QUEUE"])
        wait_until(lambda: cluster.http.get(f"/v1/monitor/app{tag}", params={"window": "5m"}).json()
                   ["traces_processed"] == 100, what="100 traces processed")
        wait_until(lambda: redis_client.xlen(stream) == 0, what="the stream emptied")
        new = {key.decode() for key in set(redis_client.scan_iter(match="ragpulse:*", count=1000)) - before}
        # Redis is shared with the tests before: this worker's janitor may poll another test's provider batches and
        # write its jobs' keys meanwhile. Online traces make no job, so a job key is ours only if its job is new.
        earlier_jobs = {key.decode().split(":")[2] for key in before if key.startswith(b"ragpulse:job:")}
        new = {key for key in new if not (key.startswith("ragpulse:job:") and key.split(":")[2] in earlier_jobs)}
        assert not any(key.startswith("ragpulse:trace:") for key in new), new
        # Only counters: the app's minute bucket(s), the tenant's ingest bucket, the metrics hash, the stream itself.
        allowed = (f"ragpulse:monitor:default:app{tag}:", "ragpulse:ingest:", "ragpulse:metrics", stream)
        assert all(key.startswith(allowed) for key in new), sorted(new)
        assert all(redis_client.ttl(key) > 0 for key in new if key != stream)
        assert len(fake.requests) == 0


def test_another_tenants_trace_is_404(api_factory) -> None:
    url = api_factory({"RAGPULSE_API_KEYS": "acme:key-a,globex:key-b", "RAGPULSE_QUEUE": f"t-{uuid.uuid4().hex[:8]}"})
    acme = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-a"})
    globex = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-b"})
    response = acme.post("/v1/traces", json={"traces": traces(1, f"own-{uuid.uuid4().hex[:6]}")})
    assert response.status_code == 202
    (trace_id,) = response.json()["sampled_trace_ids"]           # the default sample rate is 1
    assert acme.get(f"/v1/traces/{trace_id}").json()["status"] == "pending"   # no worker runs
    assert globex.get(f"/v1/traces/{trace_id}").status_code == 404
    assert httpx.get(f"{url}/v1/traces/{trace_id}").status_code == 401


BAD_BODIES = {
    "not json": (b"{", 400),
    "no traces": (b'{"traces": []}', 422),
    "schema errors": (b'{"traces": [{"query": ""}, {"query": "q", "gold_docs": []}]}', 422),
    "duplicate ids": (b'{"traces": [{"query": "q", "trace_id": "a"}, {"query": "r", "trace_id": "a"}]}', 422),
    "repeated key": (b'{"traces": [{"query": "q", "query": "r"}]}', 422),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_bodies_get_the_same_errors_as_batches(client: httpx.Client, name: str) -> None:
    body, status = BAD_BODIES[name]
    headers = {"Content-Type": "application/json"}
    online = client.post("/v1/traces", content=body, headers=headers)
    batch = client.post("/v1/batches", content=body, headers=headers)
    assert online.status_code == batch.status_code == status, (online.text, batch.text)
    assert online.json().get("errors") == batch.json().get("errors")
    assert client.post("/v1/traces", content=body).status_code == 415


def test_limits_answer_413(api_factory) -> None:
    url = api_factory({"RAGPULSE_MAX_BODY_BYTES": "200000", "RAGPULSE_QUEUE": f"t-{uuid.uuid4().hex[:8]}"})
    too_many = httpx.post(f"{url}/v1/traces", json={"traces": [{"query": f"q{i}"} for i in range(1001)]})
    assert too_many.status_code == 413 and too_many.json()["errors"][0]["path"] == "$.traces"
    too_big = httpx.post(f"{url}/v1/traces", json={"traces": [{"query": "q", "answer": "x" * 300_000}]})
    assert too_big.status_code == 413


def test_a_full_stream_pushes_back_with_503(api_factory, redis_client: redis.Redis) -> None:
    queue = f"t-{uuid.uuid4().hex[:8]}"
    url = api_factory({"RAGPULSE_ONLINE_MAX_BACKLOG": "2", "RAGPULSE_QUEUE": queue})   # and no worker
    for n in range(2):
        assert httpx.post(f"{url}/v1/traces", json={"traces": traces(1, f"full{n}")}).status_code == 202
    refused = httpx.post(f"{url}/v1/traces", json={"traces": traces(1, "full-x")})
    assert refused.status_code == 503 and refused.headers["Retry-After"]
    assert "RAGPULSE_ONLINE_MAX_BACKLOG" in refused.json()["detail"]
    assert redis_client.xlen(stream_of(queue)) == 2                # nothing of the refused post was written
    assert redis_client.get(keys.online_trace("default", "full-x-0")) is None


def test_one_tenants_backlog_does_not_refuse_another_tenants_posts(api_factory, redis_client: redis.Redis) -> None:
    """Two tenants, a stream of 4 and no worker: a tenant gets 2 places; once one of its posts is processed, it posts
    again. Without shares tenant a took all 4 places and b's first post was refused."""
    queue = f"t-{uuid.uuid4().hex[:8]}"
    url = api_factory({"RAGPULSE_ONLINE_MAX_BACKLOG": "4", "RAGPULSE_QUEUE": queue,
                       "RAGPULSE_API_KEYS": "a:key-a,b:key-b"})
    as_a, as_b = ({"Authorization": f"Bearer key-{t}"} for t in "ab")

    def post(headers: dict[str, str], tag: str) -> httpx.Response:
        return httpx.post(f"{url}/v1/traces", json={"traces": traces(1, tag)}, headers=headers)

    assert [post(as_a, f"a{n}").status_code for n in range(2)] == [202, 202]
    over = post(as_a, "a-over")
    assert over.status_code == 503 and over.headers["Retry-After"], over.text
    assert "'a' holds 2 unprocessed online posts, its share" in over.json()["detail"]
    assert [post(as_b, f"b{n}").status_code for n in range(2)] == [202, 202]
    full = post(as_b, "b-over")
    assert full.status_code == 503 and "RAGPULSE_ONLINE_MAX_BACKLOG=4" in full.json()["detail"]
    stream = stream_of(queue)
    assert redis_client.xlen(stream) == 4
    assert redis_client.hgetall(keys.online_backlog_shares(stream)) == {b"a": b"2", b"b": b"2"}

    redis_client.xgroup_create(stream, keys.ONLINE_GROUP, id="0")            # a worker processes a's first post
    (entry_id, fields), = redis_client.xreadgroup(keys.ONLINE_GROUP, "w", {stream: ">"}, count=1)[0][1]
    assert fields[b"t"] == b"a"
    ack = redis_client.register_script(ACK_POSTS)
    ack(keys=[stream, keys.online_backlog_shares(stream), keys.online_ack(stream, "n")],
        args=[keys.ONLINE_GROUP, b"", 60, entry_id, b"a", b""])
    assert post(as_a, "a-again").status_code == 202
    assert post(as_b, "b-over").status_code == 503                            # b holds its 2


def test_a_sigkilled_worker_loses_no_post_and_counts_none_twice(cluster_factory, redis_client: redis.Redis,
                                                                tmp_path) -> None:
    with FakeAnthropic(latency=0.4) as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS="kill", RAGPULSE_JUDGE="anthropic",
                                  RAGPULSE_ONLINE_CLAIM_IDLE_SECONDS="2", RAGPULSE_JUDGE_CONCURRENCY="2")
        stream = stream_of(cluster.env["RAGPULSE_QUEUE"])
        ids = []
        for n in range(40):
            response = cluster.http.post("/v1/traces", json={"traces": traces(1, f"kill{n}", app="kill")})
            ids += response.json()["sampled_trace_ids"]
        assert len(ids) == 40
        def pending() -> int:
            try:
                return redis_client.xpending(stream, keys.ONLINE_GROUP)["pending"]
            except redis.ResponseError:   # the worker's consumer has not created its group yet
                return 0
        wait_until(lambda: pending() >= 5, what="the worker holding posts")
        victim = cluster.workers[0]
        for pid in [victim.process.pid, *children_of(victim.process.pid)]:
            os.kill(pid, signal.SIGKILL)
        victim.process.wait()
        held = pending()
        assert held > 0, "the killed worker held posts it had not acknowledged"
        cluster.workers.append(cluster.add_worker())

        wait_until(lambda: redis_client.xlen(stream) == 0, timeout=90, what="every post processed")
        assert not redis_client.exists(keys.online_backlog_shares(stream)), "every post gave its tenant's place back"
        for trace_id in ids:
            record = cluster.http.get(f"/v1/traces/{trace_id}").json()
            assert record["status"] == "done", record
        text = cluster.http.get("/metrics").text
        assert metric(text, "ragpulse_traces_sampled_total", app="kill") == 40
        assert metric(text, "ragpulse_traces_judged_total", app="kill") == 40
        view = cluster.http.get("/v1/monitor/kill", params={"window": "5m"}).json()
        assert view["traces_received"] == 40 and view["traces_processed"] == 40 and view["judged"] == 40
        assert pending() == 0


def test_the_online_path_rides_out_a_redis_restart(tmp_path) -> None:
    """A Redis that keeps its data goes away for 5 s while workers judge online posts: every post is processed
    once it is back, each trace counted once, and no process exits."""
    import sys  # noqa: PLC0415

    from ragpulse.ops.redis_server import PrivateRedis, free_port  # noqa: PLC0415
    from tests.support import child_env, spawn, wait_for_line  # noqa: PLC0415

    app = f"onout{uuid.uuid4().hex[:6]}"
    server = PrivateRedis(appendonly=True).start()
    up = None
    try:
        with FakeAnthropic(latency=0.2) as fake:
            port = free_port()
            env = child_env(server.url, {"TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "k", "RAGPULSE_APPS": app,
                                         "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_JUDGE_CONCURRENCY": "2"})
            up = spawn([sys.executable, "-m", "ragpulse.ops.cli", "up", "--port", str(port), "--workers", "2"], env,
                       tmp_path / "up.log")
            wait_for_line(up, "ragpulse is up", timeout=60)
            http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False)
            ids = []
            for n in range(60):
                response = http.post("/v1/traces", json={"traces": traces(1, f"{app}-{n}", app=app)})
                assert response.status_code == 202, response.text
                ids += response.json()["sampled_trace_ids"]
            assert len(ids) == 60
            wait_until(lambda: len(fake.requests) >= 5, what="judging under way")
            server.halt()
            time.sleep(5)
            server.start()

            def processed() -> int:
                view = http.get(f"/v1/monitor/{app}", params={"window": "5m"})
                return view.json()["traces_processed"] if view.status_code == 200 else -1
            wait_until(lambda: processed() == 60, timeout=120, what="every post processed after the restart")
            assert all(http.get(f"/v1/traces/{trace_id}").json()["status"] == "done" for trace_id in ids)
            text = http.get("/metrics").text
            assert metric(text, "ragpulse_traces_judged_total", app=app) == 60
            assert metric(text, "ragpulse_traces_received_total", app=app) == 60
            assert up.process.poll() is None, up.output()
    finally:
        if up is not None:
            up.stop()
        server.stop()
