"""A fake OpenAI-compatible server with OpenAI's Batch API, on loopback, for the real openai SDK (via base_url).

Chat completions are FakeOpenAI's. Files: POST /v1/files (multipart, purpose batch) keeps the JSONL, GET
/v1/files/{id}/content gives it back. Batches: POST /v1/batches starts one on an uploaded file, `in_progress` until
the test calls `release()`; GET /v1/batches/{id} gives its status and request_counts; once `completed` its
output_file_id holds the succeeded lines and error_file_id the failed ones; a request about a question in `expire`
is left out of both and the batch ends `expired` (as OpenAI ends a batch its window ran out on); POST
/v1/batches/{id}/cancel ends it `cancelled` with nothing processed; GET /v1/batches lists them (with their metadata),
newest first.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_anthropic import parse_user_message
from tests.fake_openai import FakeOpenAI
from tests.loopback import routed_handler


class FakeOpenAIBatches(FakeOpenAI):
    """Start with `with FakeOpenAIBatches() as fake:`; point the SDK at `fake.base_url`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.server.RequestHandlerClass = _handler(self)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.expire: set[str] = set()
        self.interactive = 0
        self.batch_lock = threading.Lock()
        self.create_answer: tuple[int, dict[str, str], Any] | None = None
        """When set, what every batch create answers (status, headers, payload) instead of starting one."""
        self.extra_lines: list[str] = []
        """Lines added to the end of every output file (garbage, or results of requests never sent)."""

    def batched_requests(self) -> int:
        with self.batch_lock:
            return sum(len(b["requests"]) for b in self.batches.values())

    def release(self) -> None:
        """Process every in-progress batch now."""
        with self.batch_lock:
            for batch in self.batches.values():
                if batch["status"] == "in_progress":
                    self._process(batch)

    def _process(self, batch: dict[str, Any]) -> None:
        output, errors, expired = [], [], False
        for request in batch["requests"]:
            body = request["body"]
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            if parse_user_message(user).get("question") in self.expire:
                expired = True
                continue
            status, _, answer = self.respond(request["url"], body, {})
            line = {"id": f"batch_req_{uuid.uuid4().hex[:12]}", "custom_id": request["custom_id"],
                    "response": {"status_code": status, "request_id": "r", "body": answer}, "error": None}
            (output if status == 200 else errors).append(line)
        batch["output_file_id"] = self._keep(output, self.extra_lines)
        batch["error_file_id"] = self._keep(errors)
        batch["status"] = "expired" if expired else "completed"
        batch["counts"] = {"total": len(batch["requests"]), "completed": len(output), "failed": len(errors)}

    def _keep(self, lines: list[dict[str, Any]], extra: list[str] = ()) -> str | None:  # type: ignore[assignment]
        if not lines and not extra:
            return None
        file_id = f"file-{uuid.uuid4().hex[:12]}"
        self.files[file_id] = "".join([*(json.dumps(line) + "\n" for line in lines), *(x + "\n" for x in extra)]
                                      ).encode()
        return file_id

    def _view(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {"id": batch["id"], "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                "input_file_id": batch["input_file_id"], "completion_window": "24h", "status": batch["status"],
                "output_file_id": batch.get("output_file_id"), "error_file_id": batch.get("error_file_id"),
                "created_at": batch["created_at"], "request_counts": batch["counts"],
                "metadata": batch.get("metadata")}

    def route(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, dict[str, str], Any]:
        parts = path.split("?")[0].strip("/").split("/")
        if method == "POST" and parts == ["v1", "chat", "completions"]:
            with self.lock:
                self.interactive += 1
            return self.respond(path, json.loads(raw), {})
        if method == "POST" and parts == ["v1", "files"]:
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + headers["content-type"].encode() + b"\r\n\r\n" + raw)
            data = next(p.get_payload(decode=True) for p in message.iter_parts() if p.get_filename())
            file_id = f"file-{uuid.uuid4().hex[:12]}"
            self.files[file_id] = data
            return 200, {}, {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                             "filename": "requests.jsonl", "purpose": "batch", "status": "processed"}
        if method == "GET" and parts[:2] == ["v1", "files"] and parts[3:] == ["content"]:
            return 200, {"content-type": "application/octet-stream"}, self.files[parts[2]]
        if method == "POST" and parts == ["v1", "batches"] and self.create_answer is not None:
            return self.create_answer
        if method == "POST" and parts == ["v1", "batches"]:
            body = json.loads(raw)
            requests = [json.loads(line) for line in self.files[body["input_file_id"]].decode().splitlines()]
            batch = {"id": f"batch_{uuid.uuid4().hex[:12]}", "input_file_id": body["input_file_id"],
                     "requests": requests, "status": "in_progress", "created_at": int(time.time()),
                     "metadata": body.get("metadata"),
                     "counts": {"total": len(requests), "completed": 0, "failed": 0}}
            with self.batch_lock:
                self.batches[batch["id"]] = batch
            return 200, {}, self._view(batch)
        if method == "GET" and parts == ["v1", "batches"]:   # the list, newest first, on one page
            with self.batch_lock:
                views = [self._view(b) for b in reversed(list(self.batches.values()))]
            ends = {"first_id": views[0]["id"], "last_id": views[-1]["id"]} if views else {}
            return 200, {}, {"object": "list", "data": views, "has_more": False, **ends}
        batch = self.batches.get(parts[2]) if len(parts) >= 3 and parts[:2] == ["v1", "batches"] else None
        if batch is None:
            return 404, {}, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}
        with self.batch_lock:
            if method == "POST" and parts[3:] == ["cancel"] and batch["status"] == "in_progress":
                batch["status"] = "cancelled"
            return 200, {}, self._view(batch)


def _handler(fake: FakeOpenAIBatches) -> type[BaseHTTPRequestHandler]:
    return routed_handler(fake.route, "x-request-id")
