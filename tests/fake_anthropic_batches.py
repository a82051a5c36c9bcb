"""A fake Anthropic API with Message Batches, on loopback, for the real anthropic SDK (via base_url).

Interactive calls (POST /v1/messages) are FakeAnthropic's. Batches: POST /v1/messages/batches creates one,
`in_progress` until the test calls `release()` (or at once, at its first retrieve, with `hold=False`); GET
/v1/messages/batches/{id} gives its processing_status and request_counts; GET .../results the JSONL of its requests'
outcomes once ended; GET /v1/messages/batches lists them, newest first; POST .../cancel moves it to `canceling`,
and the next retrieve ends it with every request `canceled`. A released request is judged by FakeAnthropic.respond
(scripted faults apply), except those about a question in `expire` (ended `expired`) or `error` (ended `errored`).
Tokens, cache reads and writes are counted as FakeAnthropic counts them.
"""

from __future__ import annotations

import datetime
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_anthropic import FakeAnthropic, parse_user_message
from tests.loopback import routed_handler


class FakeAnthropicBatches(FakeAnthropic):
    """Start with `with FakeAnthropicBatches() as fake:`; point the SDK at `fake.url`."""

    def __init__(self, hold: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.server.RequestHandlerClass = _handler(self)
        self.hold = hold
        self.batches: dict[str, dict[str, Any]] = {}
        self.expire: set[str] = set()
        self.error: set[str] = set()
        self.interactive = 0
        """Interactive Messages API calls received."""
        self.batch_lock = threading.Lock()
        self.create_answer: tuple[int, dict[str, str], Any] | None = None
        """When set, what every batch create answers (status, headers, payload) instead of creating one."""
        self.extra_lines: list[str] = []
        """Lines added to the end of every results JSONL (garbage, or results of requests never sent)."""

    def release(self) -> None:
        """Process every in-progress batch now: each ends with its requests' outcomes."""
        with self.batch_lock:
            for batch in self.batches.values():
                if batch["status"] == "in_progress":
                    self._process(batch)

    def batched_requests(self) -> int:
        """Requests received in all batches."""
        with self.batch_lock:
            return sum(len(b["requests"]) for b in self.batches.values())

    def _process(self, batch: dict[str, Any]) -> None:
        outcomes = []
        for request in batch["requests"]:
            params = request["params"]
            question = parse_user_message(params["messages"][0]["content"]).get("question")
            if question in self.expire:
                result: dict[str, Any] = {"type": "expired"}
            elif question in self.error:
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "scripted batch error"}}}
            else:
                status, _, body = self.respond(params, {})
                result = {"type": "succeeded", "message": body} if status == 200 else {
                    "type": "errored", "error": {"type": "error", "error": body.get("error")}}
            outcomes.append({"custom_id": request["custom_id"], "result": result})
        self._end(batch, outcomes)

    def _end(self, batch: dict[str, Any], outcomes: list[dict[str, Any]]) -> None:
        batch.update(status="ended", outcomes=outcomes, ended_at=_now())

    def _view(self, batch: dict[str, Any]) -> dict[str, Any]:
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if batch["status"] == "ended":
            for outcome in batch["outcomes"]:
                counts[outcome["result"]["type"]] += 1
        else:
            counts["processing"] = len(batch["requests"])
        ended = batch["status"] == "ended"
        return {"id": batch["id"], "type": "message_batch", "processing_status": batch["status"],
                "request_counts": counts, "created_at": batch["created_at"], "expires_at": batch["created_at"],
                "ended_at": batch.get("ended_at"), "cancel_initiated_at": batch.get("cancel_initiated_at"),
                "archived_at": None,
                "results_url": f"{self.url}/v1/messages/batches/{batch['id']}/results" if ended else None}

    def route(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
        """Status, headers and payload (JSON, or bytes as is) of one request."""
        parts = path.split("?")[0].strip("/").split("/")
        if method == "POST" and parts == ["v1", "messages"]:
            with self.lock:
                self.interactive += 1
            return self.respond(body, {})
        if method == "POST" and parts == ["v1", "messages", "batches"] and self.create_answer is not None:
            return self.create_answer
        if method == "POST" and parts == ["v1", "messages", "batches"]:
            batch = {"id": f"msgbatch_{uuid.uuid4().hex[:20]}", "requests": body["requests"],
                     "status": "in_progress", "created_at": _now()}
            with self.batch_lock:
                self.batches[batch["id"]] = batch
            return 200, {}, self._view(batch)
        if method == "GET" and parts == ["v1", "messages", "batches"]:   # the list, newest first, on one page
            with self.batch_lock:
                views = [self._view(b) for b in reversed(list(self.batches.values()))]
            return 200, {}, {"data": views, "has_more": False, "first_id": views[0]["id"] if views else None,
                             "last_id": views[-1]["id"] if views else None}
        batch = self.batches.get(parts[3]) if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"] else None
        if batch is None:
            return 404, {}, {"type": "error", "error": {"type": "not_found_error", "message": path}}
        with self.batch_lock:
            if method == "POST" and parts[4:] == ["cancel"]:
                if batch["status"] == "in_progress":
                    batch.update(status="canceling", cancel_initiated_at=_now())
                return 200, {}, self._view(batch)
            if batch["status"] == "canceling":
                self._end(batch, [{"custom_id": r["custom_id"], "result": {"type": "canceled"}}
                                  for r in batch["requests"]])
            elif batch["status"] == "in_progress" and not self.hold:
                self._process(batch)
            if parts[4:] == ["results"] and batch["status"] == "ended":
                lines = "".join(json.dumps(o) + "\n" for o in batch["outcomes"]) + "".join(
                    line + "\n" for line in self.extra_lines)
                return 200, {"content-type": "application/x-jsonl"}, lines.encode()
            return 200, {}, self._view(batch)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")


def _handler(fake: FakeAnthropicBatches) -> type[BaseHTTPRequestHandler]:
    def route(method: str, path: str, _headers: Any, raw: bytes) -> tuple[int, dict[str, str], Any]:
        return fake.route(method, path, json.loads(raw or b"{}") if method == "POST" else None)

    return routed_handler(route, "request-id")
