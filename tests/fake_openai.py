"""A fake OpenAI-compatible chat completions server on loopback, that the real openai SDK talks to via base_url.

It judges as tests/fake_anthropic.py does (the same literal-minded verdicts from the same user message), answering
with a forced record_verdicts tool call, or with the JSON as content when the request asks for response_format
json_schema. `supports_tools=False` makes it answer a request with tools as a server without tool support does (400
naming tools). Tests script faults with `push(...)`: 429 with retry-after, 500, 401, truncation (finish_reason
"length"), invalid tool arguments. Tokens are characters / 4.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_anthropic import literal_verdicts, parse_user_message

ERROR_TYPES = {401: "invalid_api_key", 403: "permission_denied", 429: "rate_limit_exceeded", 500: "server_error",
               400: "invalid_request_error"}
TOOLS_UNSUPPORTED = "tools are not supported by this server: start it with --enable-auto-tool-choice"


@dataclass
class Fault:
    """What the next request gets instead of a normal answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    tool_input: dict[str, Any] | None = None
    arguments: str | None = None
    """Raw text of the structured output, sent as is (e.g. JSON cut short); overrides tool_input."""
    finish_reason: str = "stop"


class _Server(ThreadingHTTPServer):
    request_queue_size = 512
    daemon_threads = True


class FakeOpenAI:
    """Start with `with FakeOpenAI() as fake:`; point the SDK at `fake.base_url` (`.../v1`)."""

    def __init__(self, model: str = "qwen2.5:14b", supports_tools: bool = True) -> None:
        self.model = model
        self.supports_tools = supports_tools
        self.faults: deque[Fault] = deque()
        self.faults_by_question: dict[str, deque[Fault]] = {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Every request body received so far, in order."""
        with self.lock:
            return [entry["body"] for entry in self.requests]

    def push(self, *faults: Fault) -> None:
        """Queue faults for the next requests, in order."""
        with self.lock:
            self.faults.extend(faults)

    def push_for(self, question: str, *faults: Fault) -> None:
        """Queue faults for the next requests judging the trace whose query is `question`."""
        with self.lock:
            self.faults_by_question.setdefault(question, deque()).extend(faults)

    def _next_fault(self, question: str | None) -> Fault:
        with self.lock:
            own = self.faults_by_question.get(question or "")
            if own:
                return own.popleft()
            return self.faults.popleft() if self.faults else Fault()

    def respond(self, path: str, body: dict[str, Any], headers: dict[str, str]
                ) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Status, headers and JSON body for one chat completions request."""
        with self.lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
        request_id = f"req_{uuid.uuid4().hex[:20]}"
        if path != "/v1/chat/completions":
            return 404, {"x-request-id": request_id}, {"error": {"message": f"no route {path}"}}
        if "tools" in body and not self.supports_tools:
            return 400, {"x-request-id": request_id}, _error(400, TOOLS_UNSUPPORTED, param="tools")
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        fault = self._next_fault(parse_user_message(first).get("question"))
        if fault.status != 200:
            return fault.status, {"x-request-id": request_id, **fault.headers}, _error(fault.status)
        tool_input = fault.tool_input if fault.tool_input is not None else literal_verdicts(parse_user_message(first))
        text = fault.arguments if fault.arguments is not None else json.dumps(tool_input)
        message: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": None}
        if "tools" in body:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{uuid.uuid4().hex[:20]}", "type": "function",
                "function": {"name": body["tool_choice"]["function"]["name"], "arguments": text}}]}
        completion = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:20]}", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": fault.finish_reason}],
            "usage": {"prompt_tokens": len(json.dumps(body)) // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": (len(json.dumps(body)) + len(text)) // 4},
        }
        return 200, {"x-request-id": request_id}, completion

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # TCP_NODELAY: no ~40 ms delayed-ACK stall between headers and body

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                status, headers, payload = fake.respond(self.path, body,
                                                        {k.lower(): v for k, v in self.headers.items()})
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def _error(status: int, message: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message or f"scripted {status}", "type": ERROR_TYPES.get(status, "server_error"),
                      "param": param, "code": None}}
