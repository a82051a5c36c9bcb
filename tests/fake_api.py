"""A scripted stand-in for ragpulse's job API on loopback (POST /v1/batches, GET /v1/jobs/{id}, its report and its
results): the edge `ragpulse eval` and `ragpulse gate` talk to, broken on purpose.

Each request takes its route's next scripted answer (`push("job", Answer(503))`), else the route's good one: the
posted traces make one finished job whose every trace retrieved its one relevant document (recall@5 = 1)."""

from __future__ import annotations

import json
import re
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import msgspec

from ragpulse.metrics.registry import retrieval_scores
from ragpulse.model.results import JobView, Progress, ResultsPage, TraceResult
from ragpulse.model.trace import BatchOptions
from ragpulse.reporting.build import build_report
from tests.loopback import LoopbackServer

JOB_ID = "0" * 32
HTML = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
"""What a wrong base URL, or a proxy in front of the service, answers with 200."""
_ROUTES = {"submit": r"/v1/batches/?", "job": r"/v1/jobs/\w+", "report": r"/v1/jobs/\w+/report",
           "results": r"/v1/jobs/\w+/results", "compare": r"/v1/jobs/\w+/compare",
           "page": r"/v1/jobs/\w+/report\.html"}


@dataclass
class Answer:
    """One scripted answer: its status, headers and raw body (JSON by default, `HTML` for a proxy's page)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


class FakeApi(LoopbackServer):
    """`with FakeApi() as api:` then run `ragpulse eval --server api.url`; `api.seen` lists (route, when) received."""

    def __init__(self) -> None:
        super().__init__(_handler(self))
        self.script: dict[str, deque[Answer]] = {route: deque() for route in _ROUTES}
        self.seen: list[tuple[str, float]] = []
        self.traces = 0

    def push(self, route: str, *answers: Answer) -> None:
        with self.lock:
            self.script[route].extend(answers)

    def times(self, route: str) -> list[float]:
        """When each request to `route` arrived (monotonic seconds), in order."""
        with self.lock:
            return [at for seen, at in self.seen if seen == route]

    def answer(self, method: str, target: str, body: bytes) -> Answer:
        path, query = urlsplit(target).path, parse_qs(urlsplit(target).query)
        route = next((name for name, pattern in _ROUTES.items() if re.fullmatch(pattern, path)), None)
        if route is None or (method == "POST") != (route == "submit"):
            return Answer(404, b'{"title": "Not found", "detail": "no such route"}')
        with self.lock:
            self.seen.append((route, time.monotonic()))
            scripted = self.script[route].popleft() if self.script[route] else None
        return scripted or self._good(route, body, dry_run="dry_run" in query)

    def _good(self, route: str, body: bytes, dry_run: bool) -> Answer:
        if route == "compare":   # only ever scripted
            return Answer(404, b'{"title": "Not found", "detail": "no comparison scripted"}')
        if route == "page":
            return Answer(200, b"<!doctype html><html><body>the report page</body></html>", content_type="text/html")
        if route == "submit":
            self.traces = len(json.loads(body)["traces"])
            if dry_run:
                return Answer(200, json.dumps({"dry_run": True, "trace_count": self.traces, "estimate": {}}).encode())
            return Answer(202, json.dumps({"job_id": JOB_ID, "status_url": f"/v1/jobs/{JOB_ID}",
                                           "trace_count": self.traces, "warnings": []}).encode())
        results = [TraceResult(trace_id=f"t{i}", index=i, status="ok", app="a", labels="labelled",
                               retrieval=retrieval_scores(["d"], {"d": 1}, [1, 3, 5, 10])) for i in range(self.traces)]
        good = {
            "job": JobView(job_id=JOB_ID, status="finished", progress=Progress(total=self.traces, done=self.traces,
                                                                               failed=0),
                           created_at="2025-01-01T00:00:00Z", started_at=None, finished_at=None, warnings=[],
                           error=None),
            "report": build_report(JOB_ID, BatchOptions(), results),
            "results": ResultsPage(items=results, next_cursor=None),
        }
        return Answer(200, msgspec.json.encode(good[route]))


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes: see tests.loopback.json_handler

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._reply(api.answer("GET", self.path, b""))

        def do_POST(self) -> None:  # noqa: N802
            self._reply(api.answer("POST", self.path, self.rfile.read(int(self.headers.get("content-length", 0)))))

        def _reply(self, answer: Answer) -> None:
            self.send_response(answer.status)
            for name, value in {"content-type": answer.content_type, **answer.headers}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler
