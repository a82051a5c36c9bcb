"""A scripted stand-in for ragpulse's POST /v1/traces on loopback: the SDK's edge, faulted on purpose.

Each post takes the next scripted step (`push`), or `default` once the script is used up: an answer with a status
and headers, `DROP` (the connection closes with no answer), with an optional stall first. Only posts answered 2xx
count as delivered."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DROP = 0
"""A step's status meaning: close the connection without answering."""


@dataclass
class Step:
    """How the fake answers one post."""

    status: int = 202
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None
    stall: float = 0.0


@dataclass
class Attempt:
    """One post as received: when, its trace ids in order, and the status it got (DROP for none)."""

    at: float
    trace_ids: list[str]
    status: int
    authorization: str | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class FakeIngest:
    """`with FakeIngest() as fake:` then point the SDK at `fake.url`."""

    def __init__(self, default: Step | None = None) -> None:
        self.default = default or Step()
        self.script: deque[Step] = deque()
        self.attempts: list[Attempt] = []
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeIngest:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def push(self, *steps: Step) -> None:
        with self.lock:
            self.script.extend(steps)

    def delivered(self) -> list[str]:
        """Trace ids of every post answered 2xx, in the order received."""
        return [tid for a in self.attempts if 200 <= a.status < 300 for tid in a.trace_ids]

    def _next(self, trace_ids: list[str], authorization: str | None) -> Step:
        with self.lock:
            step = self.script.popleft() if self.script else self.default
            self.attempts.append(Attempt(time.monotonic(), trace_ids, step.status, authorization))
        return step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY on accepted sockets: headers and body go out in two writes, and without it Nagle holds the
            # body back until the client's delayed ACK (~40 ms a post), as in tests/fake_anthropic.py.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                step = fake._next([t["trace_id"] for t in body["traces"]], self.headers.get("authorization"))
                time.sleep(step.stall)
                if step.status == DROP:
                    self.close_connection = True
                    return
                data = json.dumps(step.body or {"accepted": len(body["traces"])}).encode()
                self.send_response(step.status)
                for name, value in {"content-type": "application/json", **step.headers}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
