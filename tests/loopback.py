"""What the loopback fakes (fake_anthropic, fake_openai, fake_ragpulse) share: a threaded HTTP server on 127.0.0.1,
run as a context manager, whose JSON answers go out with TCP_NODELAY, and the queues of faults tests script."""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

F = TypeVar("F")


class _Server(ThreadingHTTPServer):
    """A listen backlog large enough for many workers' concurrent connections (the default is 5)."""

    request_queue_size = 512
    daemon_threads = True


class LoopbackServer:
    """Serves `handler` on a free port from a daemon thread between `__enter__` and `__exit__`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):  # noqa: ANN204 - returns the subclass
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def json_handler(answer: Callable[[BaseHTTPRequestHandler, dict[str, Any]], tuple[int, Mapping[str, str], Any]],
                 ) -> type[BaseHTTPRequestHandler]:
    """A handler whose POSTs are JSON in, `answer(handler, body) -> (status, headers, payload)`, JSON out (a `bytes`
    payload goes out as is, under the content-type its headers give: a proxy's HTML page)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY: the headers and the body go out in two writes, and without it Nagle holds the body back until
        # the client's delayed ACK of the headers, ~40 ms on every call.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length", 0))
            status, headers, payload = answer(self, json.loads(self.rfile.read(length) or b"{}"))
            if status <= 0:  # the answer chose to drop the connection (fake_ragpulse.DROP)
                self.close_connection = True
                return
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in {"content-type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


Route = Callable[[str, str, Any, bytes], tuple[int, Mapping[str, str], Any]]
"""(method, path, headers, raw body) -> (status, headers, payload): a fake REST API's requests, GET and POST."""


def routed_handler(route: Route, request_id_header: str) -> type[BaseHTTPRequestHandler]:
    """A handler answering GETs and POSTs through `route`, JSON out (a `bytes` payload as is), every answer with a
    fresh request id under `request_id_header` as the provider sends it (the batch APIs' fakes)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True   # as json_handler: no ~40 ms Nagle wait per answer

        def _answer(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0))) if method == "POST" else b""
            status, headers, payload = route(method, self.path, self.headers, raw)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in {"content-type": "application/json", request_id_header: f"req_{uuid.uuid4().hex[:20]}",
                                **headers}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self._answer("POST")

        def do_GET(self) -> None:  # noqa: N802
            self._answer("GET")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class ScriptedFaults(Generic[F]):
    """Faults for the next requests, in order, or for the next requests about one question."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.faults: deque[F] = deque()
        self.by_question: dict[str, deque[F]] = {}

    def push(self, *faults: F) -> None:
        with self.lock:
            self.faults.extend(faults)

    def push_for(self, question: str, *faults: F) -> None:
        with self.lock:
            self.by_question.setdefault(question, deque()).extend(faults)

    def next(self, question: str | None) -> F | None:
        """The fault for this request: the question's own first, then the general queue; None when none waits."""
        with self.lock:
            own = self.by_question.get(question or "")
            if own:
                return own.popleft()
            return self.faults.popleft() if self.faults else None


class JudgeFake(LoopbackServer):
    """A fake judge provider: records every request and answers the faults tests script before its verdicts."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(handler)
        self.requests: list[dict[str, Any]] = []
        self.scripted: ScriptedFaults[Any] = ScriptedFaults(self.lock)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Every request body received so far, in order (the last one is `bodies[-1]`)."""
        with self.lock:
            return [entry["body"] for entry in self.requests]

    def push(self, *faults: Any) -> None:
        """Queue faults for the next requests, in order."""
        self.scripted.push(*faults)

    def push_for(self, question: str, *faults: Any) -> None:
        """Queue faults for the next requests judging the trace whose query is `question`."""
        self.scripted.push_for(question, *faults)
