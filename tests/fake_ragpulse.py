"""A scripted stand-in for ragpulse's POST /v1/traces on loopback: the SDK's edge, faulted on purpose.

Each post (to any path: /v1/traces, or /v1/batches for the helpers) takes the next scripted step (`push`), or `default` once the script is used up: an answer with a status
and headers, `DROP` (the connection closes with no answer), with an optional stall first. Only posts answered 2xx
count as delivered. With `max_bytes`, a post whose body is larger is answered 413 as the service does, before
and without taking a step."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback import LoopbackServer, json_handler

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
    """One post as received: when, its path, trace ids in order, the status it got (DROP for none) and headers."""

    at: float
    path: str
    trace_ids: list[str]
    status: int
    authorization: str | None
    idempotency_key: str | None


class FakeIngest(LoopbackServer):
    """`with FakeIngest() as fake:` then point the SDK at `fake.url`."""

    def __init__(self, default: Step | None = None, max_bytes: int | None = None) -> None:
        super().__init__(json_handler(lambda handler, body: self._answer(handler, body)))
        self.default = default or Step()
        self.max_bytes = max_bytes
        self.script: deque[Step] = deque()
        self.attempts: list[Attempt] = []

    def push(self, *steps: Step) -> None:
        with self.lock:
            self.script.extend(steps)

    def delivered(self) -> list[str]:
        """Trace ids of every post answered 2xx, in the order received."""
        return [tid for a in self.attempts if 200 <= a.status < 300 for tid in a.trace_ids]

    def _next(self, handler: BaseHTTPRequestHandler, trace_ids: list[str]) -> Step:
        size = int(handler.headers.get("content-length", 0))
        with self.lock:
            if self.max_bytes is not None and size > self.max_bytes:
                step = _too_large(size, self.max_bytes)
            else:
                step = self.script.popleft() if self.script else self.default
            self.attempts.append(Attempt(time.monotonic(), handler.path, trace_ids, step.status,
                                         handler.headers.get("authorization"), handler.headers.get("idempotency-key")))
        return step

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict) -> tuple[int, dict[str, str], object]:
        step = self._next(handler, [t.get("trace_id") for t in body["traces"]])
        time.sleep(step.stall)
        return step.status, step.headers, step.body or {"accepted": len(body["traces"])}


def _too_large(size: int, limit: int) -> Step:
    """The service's answer to a body over RAGPULSE_MAX_BODY_BYTES (service/guard.py)."""
    return Step(413, {"connection": "close"}, {
        "title": "Payload too large", "detail": f"the body declares {size} bytes; the limit is {limit}",
        "errors": [{"path": "header.content-length", "message": f"at most {limit} bytes"}]})
