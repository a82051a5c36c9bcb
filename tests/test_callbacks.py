"""Completion callbacks: signed, retried with backoff, and only to allowlisted destinations."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragpulse.reporting.callbacks import check_addresses, matching_entry, sign, verify
from ragpulse.exceptions import CallbackRejected
from tests.fake_anthropic import FakeAnthropic
from tests.support import wait_for_job

SECRET = "s3cret"


class Receiver:
    """A loopback HTTP server answering scripted statuses and keeping what it received."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.received: list[tuple[bytes, dict[str, str]]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.received.append((body, dict(self.headers)))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver([500])                                        # the first delivery fails, the retry succeeds
    yield r
    r.server.shutdown()


def test_signatures_verify_and_expire() -> None:
    body = b'{"job_id": "x"}'
    header = sign(SECRET, body)
    assert verify(SECRET, body, header)
    assert not verify("other", body, header) and not verify(SECRET, body + b" ", header)
    assert not verify(SECRET, body, sign(SECRET, body, int(time.time()) - 3600))


def test_allowlist_and_ssrf_guards() -> None:
    allow = ["hooks.example.com", "*.corp.example", "127.0.0.1:9000"]
    assert matching_entry("https://hooks.example.com/x", allow, False) == "hooks.example.com"
    assert matching_entry("https://a.corp.example/x", allow, False) == "*.corp.example"
    for url in ["http://hooks.example.com/x", "https://evil.com/", "https://127.0.0.1:9001/",
                "https://user:pw@hooks.example.com/", "file:///etc/passwd", "https://hooks.example.com.evil.com/"]:
        with pytest.raises(CallbackRejected):
            matching_entry(url, allow, False)
    with pytest.raises(CallbackRejected, match="non-public"):
        check_addresses("https://localhost/x", "localhost")     # a name allowlisted, but resolving to loopback
    check_addresses("http://127.0.0.1:9000/x", "127.0.0.1:9000")  # an explicit IP entry is the operator's choice


@pytest.mark.integration
def test_job_end_is_posted_signed_after_a_retry(cluster_factory, receiver: Receiver) -> None:
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_CALLBACK_SECRET=SECRET, RAGPULSE_CALLBACK_ALLOW_HTTP="1",
                                  RAGPULSE_CALLBACK_ALLOWLIST=f"127.0.0.1:{receiver.port}",
                                  RAGPULSE_CALLBACK_RETRY_SECONDS="1,1,1")
        url = f"http://127.0.0.1:{receiver.port}/hook"
        job_id = cluster.post([{"query": "q", "answer": "A.", "retrieved_docs": [{"id": "d", "text": "A."}]}],
                              callback_url=url)
        wait_for_job(cluster.http, job_id)
        deadline = time.monotonic() + 30
        while (cluster.http.get(f"/v1/jobs/{job_id}").json()["callback"] or {}).get("status") != "delivered":
            assert time.monotonic() < deadline, cluster.http.get(f"/v1/jobs/{job_id}").json()
            time.sleep(0.2)
        job = cluster.http.get(f"/v1/jobs/{job_id}").json()
        assert job["callback"]["attempts"] == 2 and len(receiver.received) == 2
        body, headers = receiver.received[-1]
        assert verify(SECRET, body, headers["X-Ragpulse-Signature"])
        assert json.loads(body)["job_id"] == job_id and json.loads(body)["status"] == "finished"
        refused = cluster.http.post("/v1/batches", json={"traces": [{"query": "q"}],
                                                         "options": {"callback_url": "http://10.0.0.1/x"}})
        assert refused.status_code == 422 and refused.json()["errors"][0]["path"] == "$.options.callback_url"


def test_callbacks_are_refused_when_not_configured(client) -> None:
    response = client.post("/v1/batches", json={"traces": [{"query": "q"}],
                                                 "options": {"callback_url": f"https://x{uuid.uuid4().hex}.com/"}})
    assert response.status_code == 422 and "not configured" in response.json()["errors"][0]["message"]
