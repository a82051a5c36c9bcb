"""Untrusted input: keys, content types and sizes are checked before a body is read, and odd input is a 4xx."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.odd_inputs import ODD_INPUT, RAW, Odd, otlp_export
from tests.support import Proc, start_api
from tests.test_otlp import read_back

pytestmark = pytest.mark.integration

KEY = "key-acme"
MiB = 1024 * 1024
ATTACK_BODY = 30 * MiB
"""What each keyless connection declares and tries to send: under the 32 MiB default limit, so only the key stops it."""


@dataclass
class Api:
    url: str
    proc: Proc

    @property
    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        return parts.hostname or "127.0.0.1", parts.port or 80

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.proc.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def keyed_api(redis_url: str, session_tmp: Path, stack) -> Iterator[Api]:
    """An API with API keys and the default body limit (32 MiB)."""
    url, proc = start_api(redis_url, session_tmp, {**stack.env, "RAGPULSE_API_KEYS": f"acme:{KEY}"})
    try:
        yield Api(url, proc)
    finally:
        proc.stop()


def request_head(path: str = "/v1/batches", length: int | None = ATTACK_BODY, key: str | None = None,
                 chunked: bool = False) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: test", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    if key is not None:
        lines.append(f"Authorization: Bearer {key}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: dict


def read_answer(sock: socket.socket) -> Answer:
    """One HTTP/1.1 response with a Content-Length body, read off a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (h.partition(":") for h in header_lines)}
    while len(rest) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside the response body"
        rest += chunk
    return Answer(int(status_line.split()[1]), headers, json.loads(rest))


def closed_by_server(sock: socket.socket) -> bool:
    """True when the server closed the connection (EOF or reset) after its answer."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def assert_problem(answer: Answer, status: int) -> None:
    assert answer.status == status, answer
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.body["status"] == status
    assert answer.headers["connection"] == "close"


@pytest.mark.parametrize("key", [None, "nope"])
def test_a_keyless_body_is_refused_with_401_before_it_is_read(keyed_api: Api, key: str | None) -> None:
    with socket.create_connection(keyed_api.address, timeout=10) as sock:
        sock.sendall(request_head(key=key) + b'{"traces": [')       # 12 of the 31,457,280 bytes declared
        answer = read_answer(sock)
        assert_problem(answer, 401)
        assert answer.headers["www-authenticate"] == "Bearer"
        assert closed_by_server(sock)


def test_a_keyless_chunked_body_is_refused_with_401_before_it_is_read(keyed_api: Api) -> None:
    with socket.create_connection(keyed_api.address, timeout=10) as sock:
        sock.sendall(request_head(length=None, chunked=True) + b"c\r\n{\"traces\": [\r\n")
        assert_problem(read_answer(sock), 401)
        assert closed_by_server(sock)


def test_public_paths_stay_public_and_keyed_paths_keyed(keyed_api: Api) -> None:
    for path in ["/healthz", "/readyz", "/metrics", "/schema/openapi.json"]:
        assert httpx.get(keyed_api.url + path).status_code == 200, path
    for method, path in [("GET", f"/v1/jobs/{'0' * 32}"), ("GET", "/v1/monitor/default"),
                         ("PUT", "/v1/apps/default/policy"), ("POST", "/v1/calibrations")]:
        assert httpx.request(method, keyed_api.url + path).status_code == 401, path
    accepted = httpx.post(keyed_api.url + "/v1/batches", json={"traces": [{"query": "q"}]},
                          headers={"Authorization": f"Bearer {KEY}"})
    assert accepted.status_code == 202, accepted.text


def test_a_declared_length_over_the_limit_is_413_before_the_body_is_read(keyed_api: Api) -> None:
    with socket.create_connection(keyed_api.address, timeout=10) as sock:
        sock.sendall(request_head(length=32 * MiB + 1, key=KEY) + b'{"traces": [')
        answer = read_answer(sock)
        assert_problem(answer, 413)
        assert answer.body["errors"][0]["path"] == "header.content-length"
        assert closed_by_server(sock)


@dataclass
class Sender:
    """Pushes up to `total` bytes of body on its own thread until the server stops taking them."""

    sock: socket.socket
    total: int
    chunked: bool = False
    sent: int = 0
    error: BaseException | None = None
    thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        piece = b" " * (64 * 1024)
        frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if self.chunked else piece
        try:
            while self.sent + len(piece) <= self.total:
                self.sock.sendall(frame)
                self.sent += len(piece)
        except OSError as exc:          # the server answered and closed: the rest is refused, as it should be
            self.error = exc


def test_a_chunked_body_is_cut_off_at_the_limit_while_it_streams(keyed_api: Api) -> None:
    with socket.create_connection(keyed_api.address, timeout=30) as sock:
        sock.sendall(request_head(length=None, key=KEY, chunked=True) + b'4\r\n{"a"\r\n')
        sender = Sender(sock, total=64 * MiB, chunked=True)     # never finished: no terminating chunk
        answer = read_answer(sock)
        assert_problem(answer, 413)
        sender.thread.join(30)
        assert not sender.thread.is_alive() and sender.error is not None
        assert sender.sent < 40 * MiB     # stopped near the 32 MiB limit, not at the end of the body


def test_keyless_connections_cannot_fill_the_api_memory(keyed_api: Api) -> None:
    """10 keyless connections each pushing a 30 MiB body: the API answers 401 and closes, its RSS stays flat."""
    httpx.get(keyed_api.url + "/healthz")
    before = keyed_api.rss_bytes()
    socks = [socket.create_connection(keyed_api.address, timeout=30) for _ in range(10)]
    try:
        for sock in socks:
            sock.sendall(request_head())
        senders = [Sender(sock, total=ATTACK_BODY - 1024) for sock in socks]   # never finished
        peak = before
        deadline = time.monotonic() + 60
        while any(s.thread.is_alive() for s in senders) and time.monotonic() < deadline:
            peak = max(peak, keyed_api.rss_bytes())
            time.sleep(0.02)
        time.sleep(0.5)
        peak = max(peak, keyed_api.rss_bytes())
        print(f"API RSS {before / MiB:.1f} MiB before, {peak / MiB:.1f} MiB at peak")
        assert peak - before < 20 * MiB, f"API RSS grew {(peak - before) / MiB:.0f} MiB"
        for sender in senders:
            assert sender.error is not None and sender.sent < ATTACK_BODY - 1024, "the server read the whole body"
    finally:
        for sock in socks:
            sock.close()
    assert httpx.get(keyed_api.url + "/healthz").status_code == 200


def test_endless_headers_are_cut_off_at_the_head_cap_before_any_key_is_checked(keyed_api: Api) -> None:
    """10 keyless connections each streaming one header value without end: each is answered 431 once its head passes
    RAGPULSE_MAX_HEADER_BYTES (64 KiB) and closed; the API's RSS stays flat (httptools alone buffered any size)."""
    httpx.get(keyed_api.url + "/healthz")
    before = keyed_api.rss_bytes()
    socks = [socket.create_connection(keyed_api.address, timeout=30) for _ in range(10)]
    try:
        for sock in socks:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Pad: ")
        senders = [Sender(sock, total=32 * MiB) for sock in socks]
        for sock in socks:
            answer = read_answer(sock)
            assert answer.status == 431 and answer.body["errors"][0]["path"] == "header", answer
            assert answer.headers["content-type"].startswith("application/problem+json")
        for sender in senders:
            sender.thread.join(30)
            assert sender.error is not None and sender.sent < 16 * MiB, "the server read the whole head"
        grown = keyed_api.rss_bytes() - before
        assert grown < 20 * MiB, f"API RSS grew {grown / MiB:.0f} MiB"
    finally:
        for sock in socks:
            sock.close()
    assert httpx.get(keyed_api.url + "/healthz").status_code == 200


# ---------------------------------------------------------------------------------------------------------------------
# odd input (the table is tests/odd_inputs.py): each case gets its exact status, a 4xx is a problem naming the path at
# fault, never a 5xx nor a traceback; after the table the API is healthy and still processes traces

SENT_TO_HANDOVER: dict[str, tuple[str, str, str]] = {}
"""Case id -> (trace id, status and app the hand-over must record) of each OTLP export the table had taken with 200."""


@pytest.fixture(scope="module")
def finished_job(stack) -> str:
    """A finished job of the session's tenant, for the cases that read or compare one."""
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        job_id = http.post("/v1/batches", json={"traces": [{"query": "q"}], "options": {"judge": "none"}}).json()["job_id"]
        deadline = time.monotonic() + 60
        while http.get(f"/v1/jobs/{job_id}").json()["status"] not in ("finished", "finished_with_errors"):
            assert time.monotonic() < deadline, "the job did not finish"
            time.sleep(0.1)
    return job_id


@pytest.fixture(scope="module")
def odd_client(stack) -> Iterator[httpx.Client]:
    """One client for the whole table: a client per case cost more than the case."""
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        yield http


@dataclass
class Sent:
    """An answer read off a socket, with what the table's assertions read of an httpx.Response."""

    status_code: int
    headers: dict[str, str]
    text: str

    def json(self) -> dict:
        return json.loads(self.text)


def send(client: httpx.Client, case: Odd, job_id: str) -> httpx.Response | Sent:
    if case.request == RAW:
        address = urlsplit(str(client.base_url))
        with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
            sock.sendall(case.body or b"")
            answer = read_answer(sock)
        return Sent(answer.status, answer.headers, json.dumps(answer.body))
    method, target = case.request.split(" ", 1)
    headers = {"content-type": case.content_type} if case.content_type else {}
    headers.update(case.headers)
    body = case.body.replace(b"{job}", job_id.encode()) if case.body else case.body
    return client.request(method, target.replace("{job}", job_id), content=body, headers=headers)


@pytest.mark.parametrize("case", ODD_INPUT, ids=[case.id for case in ODD_INPUT])
def test_odd_input_is_a_4xx_problem_naming_its_path(odd_client: httpx.Client, finished_job: str, case: Odd) -> None:
    if case.before is not None:
        assert send(odd_client, case.before, finished_job).status_code == case.before.status
    response = send(odd_client, case, finished_job)
    assert response.status_code == case.status, response.text[:2000]
    assert "Traceback" not in response.text
    if case.status >= 400:
        assert response.headers["content-type"].startswith("application/problem+json"), response.headers
        problem = response.json()
        assert problem["status"] == case.status and problem["detail"], problem
        if case.path is not None:
            assert case.path in [e["path"] for e in problem.get("errors", [])], problem
    if case.check is not None:
        case.check(response.json())
    if case.handed_over is not None:
        SENT_TO_HANDOVER[case.id] = case.handed_over


def test_after_the_odd_inputs_the_api_is_healthy_and_still_processes_traces(client: httpx.Client) -> None:
    """Runs after the table (file order): the OTLP exports it sent are recorded as expected (poison `invalid` with a
    reason), and a good online trace and a good OTLP export posted now are processed."""
    assert client.get("/healthz").status_code == 200 and client.get("/readyz").status_code == 200
    online = client.post("/v1/traces", json={"traces": [{"query": "How do I reset my router?", "answer": "Hold it.",
                                                         "retrieved_docs": [{"id": "d", "text": "Hold it."}]}]})
    assert online.status_code == 202, online.text
    good_otlp = uuid.uuid4().hex
    assert client.post("/v1/otlp/v1/traces", json=otlp_export(good_otlp)).status_code == 200
    assert read_back(client, online.json()["trace_ids"][0], until=("done",), timeout=60)["status"] == "done"
    assert read_back(client, good_otlp, until=("done",), timeout=60)["app"] == "odd-otlp"
    for case_id, (trace_id, status, app) in SENT_TO_HANDOVER.items():
        record = read_back(client, trace_id, until=(status,), timeout=30)
        assert record["app"] == app and (status != "invalid" or record["error"]), (case_id, record)


def test_bodies_trickled_in_past_the_read_deadline_are_408_and_dropped(api_factory) -> None:
    """10 authenticated connections each declare 30 MiB, send 1 MiB and then a byte now and then: each is answered
    408 once RAGPULSE_BODY_READ_TIMEOUT_SECONDS has passed and closed, so none holds its buffer any longer."""
    # A budget for all ten bodies: the deadline is what ends them here (tests/test_connection_bounds.py: the budget).
    url = api_factory({"RAGPULSE_API_KEYS": f"acme:{KEY}", "RAGPULSE_BODY_READ_TIMEOUT_SECONDS": "1",
                       "RAGPULSE_MAX_INFLIGHT_BODY_BYTES": str(512 * MiB)})
    api = Api(url, api_factory.procs[url])
    socks = [socket.create_connection(api.address, timeout=30) for _ in range(10)]
    stop = threading.Event()

    def trickle(sock: socket.socket) -> None:
        try:
            sock.sendall(request_head(key=KEY) + b'{"traces": [' + b" " * MiB)
            while not stop.wait(0.2):
                sock.sendall(b" ")
        except OSError:   # the server answered and closed
            pass

    senders = [threading.Thread(target=trickle, args=(sock,), daemon=True) for sock in socks]
    try:
        for sender in senders:
            sender.start()
        for sock in socks:
            answer = read_answer(sock)
            assert_problem(answer, 408)
            assert "RAGPULSE_BODY_READ_TIMEOUT_SECONDS" in answer.body["detail"]
            assert closed_by_server(sock)
    finally:
        stop.set()
        for sock in socks:
            sock.close()
    prompt = httpx.post(url + "/v1/batches", json={"traces": [{"query": "q"}]},
                        headers={"Authorization": f"Bearer {KEY}"})
    assert prompt.status_code == 202, prompt.text            # a body sent at once is not affected
