"""Completion callbacks: signed, retried with backoff, and only to allowlisted destinations."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragpulse.config.settings import Settings
from ragpulse.reporting import callbacks
from ragpulse.reporting.callbacks import check_addresses, deliver, matching_entry, sign, verify
from ragpulse.exceptions import CallbackRejected, ConfigError, DeliveryFailed
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

        class Server(ThreadingHTTPServer):
            def verify_request(self, request: object, client_address: object) -> bool:
                receiver.connections += 1                      # every TCP connection, whatever it then sends
                return True

        self.connections = 0
        self.server = Server(("127.0.0.1", 0), Handler)
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
        assert json.loads(body)["tenant"] == "default"        # the allowlist and secret are shared: say whose job
        refused = cluster.http.post("/v1/batches", json={"traces": [{"query": "q"}],
                                                         "options": {"callback_url": "http://10.0.0.1/x"}})
        assert refused.status_code == 422 and refused.json()["errors"][0]["path"] == "$.options.callback_url"


def test_callbacks_are_refused_when_not_configured(client) -> None:
    response = client.post("/v1/batches", json={"traces": [{"query": "q"}],
                                                 "options": {"callback_url": f"https://x{uuid.uuid4().hex}.com/"}})
    assert response.status_code == 422 and "not configured" in response.json()["errors"][0]["message"]


ADMITS = [
    # (allowlist entry, callback URL, admitted) -- http allowed throughout; the scheme check has its own test
    ("example.org:443", "https://example.org/hook", True),          # the scheme's default port applies
    ("example.org:443", "https://example.org:443/hook", True),
    ("example.org:443", "http://example.org/hook", False),          # http defaults to 80
    ("example.org:80", "http://example.org/hook", True),
    ("example.org:443", "https://example.org:8443/hook", False),
    ("example.org", "https://example.org:8443/hook", True),         # no port in the entry: any port
    ("Example.ORG", "https://example.org./hook", True),             # case and the root dot do not matter
    ("example.org", "https://example.org.evil.com/", False),
    ("example.org", "https://evilexample.org/", False),
    ("*.example.org", "https://a.b.example.org/x", True),
    ("*.example.org", "https://example.org/x", False),
    ("*.example.org:443", "https://a.example.org/x", True),
    ("*.example.org:443", "https://a.example.org:444/x", False),
    ("[::1]:8080", "http://[::1]:8080/hook", True),                 # IPv6 entries, brackets included
    ("[::1]:8080", "http://[0:0::1]:8080/hook", True),              # compared as addresses, not as text
    ("[::1]:8080", "http://[::1]:8081/hook", False),
    ("[::1]:8080", "http://[::2]:8080/hook", False),
    ("[::1]", "https://[::1]:9/hook", True),
    ("::1", "https://[::1]/hook", True),
    ("[2001:db8::5]:443", "https://[2001:db8::5]/hook", True),
    ("[::1]:8080", "http://127.0.0.1:8080/hook", False),
    ("127.0.0.1:9000", "http://127.0.0.1:9000/x", True),
    ("127.0.0.1:9000", "http://127.0.0.1:9001/x", False),
    ("127.0.0.1", "http://127.0.0.1:9001/x", True),
    ("127.0.0.1", "http://localhost/x", False),                     # an IP entry admits that IP, not a name
    ("localhost", "http://127.0.0.1/x", False),                     # nor a name entry an IP
    ("example.org:443", "https://example.org:abc/x", False),        # an invalid port is refused, not a crash
    ("example.org", "https://example.org:/x", False),
    ("example.org", "https://[example.org]/x", False),
    ("[::1", "http://[::1]/x", False),                              # a malformed entry admits nothing
]


@pytest.mark.parametrize(("entry", "url", "admitted"), ADMITS)
def test_allowlist_entries_against_urls(entry: str, url: str, admitted: bool) -> None:
    if admitted:
        assert matching_entry(url, [entry], True) == entry
    else:
        with pytest.raises(CallbackRejected):
            matching_entry(url, [entry], True)


def test_a_malformed_allowlist_entry_stops_the_service_at_start_up() -> None:
    assert Settings.from_env({"RAGPULSE_CALLBACK_ALLOWLIST": "[::1]:8080,*.example.org:443"}).callback_allowlist \
        == ("[::1]:8080", "*.example.org:443")
    for bad in ["[::1:8080", "example.org:", "example.org:https", "https://example.org", "[example.org]:443"]:
        with pytest.raises(ConfigError, match="RAGPULSE_CALLBACK_ALLOWLIST"):
            Settings.from_env({"RAGPULSE_CALLBACK_ALLOWLIST": bad})


PUBLIC = "93.184.215.14"
"""A public address the stub resolver hands out; no packet ever goes there (connections to it are intercepted)."""


class Network:
    """Stubs `socket.getaddrinfo` for one host name (scripted answers, one per lookup) and records every TCP connect
    attempt; a connection to PUBLIC goes to `public_port` on loopback when set, and is refused otherwise."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, host: str, answers: list[str],
                 public_port: int | None = None) -> None:
        self.lookups: list[str] = []
        self.connects: list[tuple[str, int]] = []
        real_getaddrinfo, real_connect = socket.getaddrinfo, socket.create_connection

        def getaddrinfo(name, port, *args, **kwargs):  # noqa: ANN001, ANN202 - socket's signature
            if name != host:
                return real_getaddrinfo(name, port, *args, **kwargs)
            self.lookups.append(name)
            address = answers.pop(0) if len(answers) > 1 else answers[0]
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port or 0))]

        def create_connection(address, *args, **kwargs):  # noqa: ANN001, ANN202
            self.connects.append(address)
            if address[0] == PUBLIC:
                if public_port is None:
                    raise ConnectionRefusedError(f"no route to {PUBLIC} in tests")
                return real_connect(("127.0.0.1", public_port), *args, **kwargs)
            return real_connect(address, *args, **kwargs)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(socket, "create_connection", create_connection)


def test_dns_rebinding_never_reaches_the_address_of_a_second_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host resolves to a public address when checked and to loopback afterwards: the delivery must connect to
    the address that was checked, never look the host up again, and so never reach the loopback server."""
    target = Receiver([])
    try:
        network = Network(monkeypatch, "hooks.rebind.test", [PUBLIC, "127.0.0.1"])
        url = f"http://hooks.rebind.test:{target.port}/hook"
        with pytest.raises(DeliveryFailed):
            deliver(url, b"{}", SECRET, [f"hooks.rebind.test:{target.port}"], allow_http=True)
        assert target.connections == 0 and target.received == []
        assert network.lookups == ["hooks.rebind.test"]
        assert all(host == PUBLIC for host, _ in network.connects), network.connects
    finally:
        target.server.shutdown()


def test_delivery_connects_to_the_checked_address_naming_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    target = Receiver([])
    try:
        network = Network(monkeypatch, "hooks.example.test", [PUBLIC], public_port=target.port)
        url = f"http://hooks.example.test:{target.port}/hook?x=1"
        assert deliver(url, b'{"a": 1}', SECRET, ["*.example.test"], allow_http=True) == 200
        assert network.connects == [(PUBLIC, target.port)] and network.lookups == ["hooks.example.test"]
        body, headers = target.received[0]
        headers = {name.lower(): value for name, value in headers.items()}
        assert body == b'{"a": 1}' and headers["host"] == f"hooks.example.test:{target.port}"
        assert verify(SECRET, body, headers["x-ragpulse-signature"])
    finally:
        target.server.shutdown()


def test_a_name_resolving_to_any_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    Network(monkeypatch, "mixed.example.test", ["10.0.0.7"])
    with pytest.raises(CallbackRejected, match="non-public address 10.0.0.7"):
        deliver("https://mixed.example.test/x", b"{}", SECRET, ["mixed.example.test"], allow_http=False)
    Network(monkeypatch, "mapped.example.test", ["::ffff:127.0.0.1"])
    with pytest.raises(CallbackRejected, match="non-public"):
        check_addresses("https://mapped.example.test/x", "mapped.example.test")


@pytest.mark.parametrize("address", ["2002:7f00:1::1", "::127.0.0.1", "64:ff9b:1::7f00:1", "::ffff:0:7f00:1",
                                     "192.0.0.8", "64:ff9b::a00:1", "fd00::1", "::"])
def test_addresses_that_carry_or_reach_an_internal_one_are_not_public(address: str) -> None:
    """6to4, IPv4-compatible, local NAT64 and SIIT forms of 127.0.0.1 read as public on Python 3.11 before."""
    import ipaddress  # noqa: PLC0415

    assert not callbacks._is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"])
def test_public_addresses_stay_public(address: str) -> None:
    import ipaddress  # noqa: PLC0415

    assert callbacks._is_public(ipaddress.ip_address(address))


def test_tls_delivery_sends_the_host_name_as_sni(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Connecting to the checked IP must not lose the name: TLS SNI (and certificate checking) use the host."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=hooks.example.test", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"openssl cannot make a test certificate: {exc}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda _sock, name, _ctx: names.append(name)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            context.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            pass                                             # the client does not trust the self-signed cert
        finally:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    Network(monkeypatch, "hooks.example.test", [PUBLIC], public_port=port)
    monkeypatch.setattr(callbacks, "TIMEOUT_SECONDS", 5.0)
    try:
        with pytest.raises(DeliveryFailed):                  # certificate verification fails: not a trusted CA
            deliver(f"https://hooks.example.test:{port}/hook", b"{}", SECRET, ["hooks.example.test"], False)
        thread.join(10)
        assert names == ["hooks.example.test"]
    finally:
        listener.close()
