"""Connections bounded in time and memory: a head deadline, caps on open connections, a budget of body bytes."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest

from ragpulse.exceptions import BodiesInFlight, OverBodyBudget
from service.body_budget import BodyBudget, body_budget
from tests.test_api_limits import KEY, MiB, Api, assert_problem, closed_by_server, read_answer, request_head

KEYED = {"RAGPULSE_API_KEYS": f"acme:{KEY}"}


def start(api_factory, **env: str) -> Api:
    url = api_factory({**KEYED, **env})
    return Api(url, api_factory.procs[url])


def healthz_kept_alive(sock: socket.socket) -> int:
    """GET /healthz on an open connection, kept open; the status."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return read_answer(sock).status


# ---------------------------------------------------------------------------------------------------------------------
# the head deadline (RAGPULSE_HEAD_TIMEOUT_SECONDS)

@pytest.mark.integration
def test_silent_connections_and_slow_heads_are_closed_after_the_head_timeout(api_factory) -> None:
    """20 connections that send nothing are closed unanswered; 20 that send a header line every 0.2 s and never the
    blank line are answered 408 and closed; so is a kept-alive connection that starts its next head and stalls. The
    default would hold all of them for good (uvicorn times out only idle connections after a response)."""
    api = start(api_factory, RAGPULSE_HEAD_TIMEOUT_SECONDS="1")
    silent = [socket.create_connection(api.address, timeout=20) for _ in range(20)]
    slow = [socket.create_connection(api.address, timeout=20) for _ in range(20)]
    kept = socket.create_connection(api.address, timeout=20)
    stop = threading.Event()

    def trickle(sock: socket.socket) -> None:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while not stop.wait(0.2):
                sock.sendall(b"X-Pad: 1\r\n")
        except OSError:   # the server answered and closed
            pass

    threads = [threading.Thread(target=trickle, args=(sock,), daemon=True) for sock in slow]
    try:
        for thread in threads:
            thread.start()
        assert healthz_kept_alive(kept) == 200
        kept.sendall(b"GET /healthz HTTP/1.1\r\n")
        for sock in silent:
            assert closed_by_server(sock), "a silent connection was answered"
        for sock in [*slow, kept]:
            answer = read_answer(sock)
            assert_problem(answer, 408)
            assert "RAGPULSE_HEAD_TIMEOUT_SECONDS" in answer.body["detail"]
            assert closed_by_server(sock)
    finally:
        stop.set()
        for sock in [*silent, *slow, kept]:
            sock.close()
    assert httpx.get(api.url + "/healthz").status_code == 200


@pytest.mark.integration
def test_the_head_deadline_spares_bodies_and_kept_alive_connections(api_factory) -> None:
    """The deadline ends with the head: a body sent after it (within the body deadline) is read; a connection kept
    alive across several requests, each head sent at once, lives longer than the deadline."""
    api = start(api_factory, RAGPULSE_HEAD_TIMEOUT_SECONDS="1")
    body = json.dumps({"traces": [{"query": "q"}], "options": {"judge": "none"}}).encode()
    with socket.create_connection(api.address, timeout=20) as sock:
        sock.sendall(request_head(length=len(body), key=KEY))
        time.sleep(1.5)      # past the head deadline, within the body's
        sock.sendall(body)
        assert read_answer(sock).status == 202
        for _ in range(3):
            time.sleep(0.6)  # 2.4 s on one connection: the deadline counts from each response, not from the opening
            assert healthz_kept_alive(sock) == 200


# ---------------------------------------------------------------------------------------------------------------------
# caps on open connections (RAGPULSE_MAX_CONNECTIONS, RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS)

@pytest.mark.integration
@pytest.mark.parametrize("setting", ["RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS", "RAGPULSE_MAX_CONNECTIONS"])
def test_connections_past_a_cap_are_answered_503_and_closed(api_factory, setting: str) -> None:
    """With a cap of 20, 20 connections are served; 5 more are answered 503 with Retry-After at once, unread, and
    closed; once one of the 20 closes, a new connection is served again."""
    api = start(api_factory, **{setting: "20"})
    held = [socket.create_connection(api.address, timeout=20) for _ in range(20)]
    try:
        for sock in held:
            assert healthz_kept_alive(sock) == 200          # each counted by the server, not only in its backlog
        for _ in range(5):
            with socket.create_connection(api.address, timeout=20) as extra:
                answer = read_answer(extra)
                assert_problem(answer, 503)
                assert int(answer.headers["retry-after"]) >= 1
                assert setting + ")" in answer.body["detail"]
                assert closed_by_server(extra)
        held.pop().close()
        deadline = time.monotonic() + 20
        while True:                                         # the server sees the close a moment later
            with socket.create_connection(api.address, timeout=20) as again:
                status = healthz_kept_alive(again)
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 200
    finally:
        for sock in held:
            sock.close()


# ---------------------------------------------------------------------------------------------------------------------
# the budget of body bytes in flight (RAGPULSE_MAX_INFLIGHT_BODY_BYTES)

def generate_body(size: int) -> bytes:
    """A generation request of about `size` bytes whose every chunk is valid: the API reads and decodes it whole."""
    chunks = 2000
    text = "a" * (size // chunks - 60)
    body = {"chunks": [{"doc_id": f"d{i}", "chunk_id": f"c{i}", "text": text} for i in range(chunks)],
            "mix": {"single_fact": 1}}
    return json.dumps(body).encode()


@pytest.mark.integration
def test_concurrent_large_bodies_past_the_budget_are_503_and_memory_stays_bounded(api_factory) -> None:
    """8 connections post a 32 MB body each at once under a 64 MiB budget: at most two are read at a time, the others
    are answered 503 with Retry-After unread, and the API's RSS stays under 600 MiB (unbounded, the eight took about
    80 MiB each: bench/README.md)."""
    api = start(api_factory, RAGPULSE_MAX_INFLIGHT_BODY_BYTES=str(64 * MiB))
    body = generate_body(32_000_000)
    httpx.get(api.url + "/healthz")
    before = api.rss_bytes()
    socks = [socket.create_connection(api.address, timeout=60) for _ in range(8)]
    answers: list = [None] * len(socks)

    def post(index: int) -> None:
        sock = socks[index]
        try:
            sock.sendall(request_head("/v1/datasets/big/generate", length=len(body), key=KEY) + body)
        except OSError:      # refused and closed while the body was still going out: the answer was sent first
            pass
        answers[index] = read_answer(sock)

    threads = [threading.Thread(target=post, args=(i,), daemon=True) for i in range(len(socks))]
    peak = before
    try:
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            peak = max(peak, api.rss_bytes())
            time.sleep(0.01)
    finally:
        for sock in socks:
            sock.close()
    statuses = sorted(answer.status for answer in answers)
    print(f"API RSS {before / MiB:.0f} MiB before, {peak / MiB:.0f} MiB at peak; statuses {statuses}")
    assert set(statuses) <= {422, 503} and 503 in statuses, statuses   # 422: read whole, refused for its judge
    for answer in answers:
        if answer.status == 503:
            assert_problem(answer, 503)
            assert "RAGPULSE_MAX_INFLIGHT_BODY_BYTES" in answer.body["detail"] and answer.headers["retry-after"]
    assert peak < 600 * MiB, f"API RSS reached {peak / MiB:.0f} MiB"
    assert peak - before < 320 * MiB, f"API RSS grew {(peak - before) / MiB:.0f} MiB"    # two bodies' worth, not eight
    alone = httpx.post(api.url + "/v1/datasets/big/generate", content=body, timeout=60,
                       headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    assert alone.status_code == 422, alone.text                # the budget is released: one body alone is read


# the budget's arithmetic, in process: a tiny ASGI app reading its body through the middleware

def run_reading(budget: BodyBudget, headers: list[tuple[bytes, bytes]], chunks: list[bytes],
                during: list[int] | None = None) -> None:
    """Pass one request whose body arrives as `chunks` through the middleware; `during` gets the bytes held while
    the app runs, after it has read the body."""

    async def app(scope, receive, send) -> None:  # noqa: ANN001 - an ASGI app
        while (await receive()).get("more_body"):
            pass
        if during is not None:
            during.append(budget.held)

    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive() -> dict:
        return messages.pop(0)

    async def send(_: dict) -> None:
        pass

    asyncio.run(body_budget(budget)(app)({"type": "http", "headers": headers}, receive, send))


def test_a_declared_body_claims_its_length_until_the_response_and_releases_it() -> None:
    budget, during = BodyBudget(100), []
    run_reading(budget, [(b"content-length", b"60")], [b"x" * 60], during)
    assert during == [60] and budget.held == 0


def test_a_declared_body_past_the_budget_is_refused_before_it_is_read() -> None:
    budget = BodyBudget(100)
    budget.held = 50                                            # another body in flight
    with pytest.raises(BodiesInFlight):
        run_reading(budget, [(b"content-length", b"60")], [b"x" * 60])
    with pytest.raises(OverBodyBudget):
        run_reading(BodyBudget(100), [(b"content-length", b"101")], [b"x" * 101])
    assert budget.held == 50                                    # a refused body holds nothing


def test_a_chunked_body_claims_as_it_arrives_and_is_cut_where_it_no_longer_fits() -> None:
    budget, during = BodyBudget(100), []
    run_reading(budget, [], [b"x" * 30, b"x" * 30], during)
    assert during == [60] and budget.held == 0
    budget.held = 50
    with pytest.raises(BodiesInFlight):                          # 30 fit beside the 50 held, 60 do not
        run_reading(budget, [], [b"x" * 30, b"x" * 30])
    assert budget.held == 50
    with pytest.raises(OverBodyBudget):
        run_reading(BodyBudget(100), [], [b"x" * 60, b"x" * 60])
