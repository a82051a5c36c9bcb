"""What an OTLP export costs the API, against posting the same trace to POST /v1/traces (the peer, same run).

Run: .venv/bin/python bench/otlp.py [--traces 2000]

A private redis-server and one real API process (no workers: the online stream just fills). The same trace content
(tests/test_otlp.py's instrumented app: a question, 2 short documents, an answer, token counts) is sent both ways
from one client thread, one trace per request, pre-encoded: as `POST /v1/traces` JSON, and as OTLP/HTTP protobuf
exports of its 3 OpenInference spans (CHAIN root, RETRIEVER, LLM) made by the real OpenTelemetry SDK. For OTLP the API's CPU is counted until every trace has been handed over to the online
stream (decode, buffer, the hand-over's assembly and staging; RAGPULSE_OTLP_SETTLE_SECONDS 0.05). The figure is API
CPU per OTLP trace ÷ API CPU per /v1/traces post. Target: at most 3 (an export carries three spans to decode,
buffer and assemble). Exits 0 on a missed target.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ingest import cpu_seconds, git_state, machine  # noqa: E402
from ragpulse.config import keys  # noqa: E402
from ragpulse.ops.redis_server import PrivateRedis  # noqa: E402
from tests.support import start_api  # noqa: E402
from tests.test_otlp import MANUAL, App  # noqa: E402 - the instrumented test app: real OpenTelemetry SDK spans

QUEUE = "bench-otlp"
ENV = {"RAGPULSE_QUEUE": QUEUE, "RAGPULSE_TENANT_TRACES_PER_SECOND": "0", "RAGPULSE_OTLP_SETTLE_SECONDS": "0.05",
       "RAGPULSE_ONLINE_MAX_BACKLOG": "1000000", "RAGPULSE_LOG_LEVEL": "WARNING"}
TARGET = 3.0


def otlp_bodies(n: int) -> list[bytes]:
    """n exports, one trace of 3 spans each, encoded once with the OpenTelemetry SDK's own encoder."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    app = App("bench-app")
    bodies = []
    for _ in range(n):
        app.answer("How do I reset my router?")
        bodies.append(encode_spans(app.take()).SerializeToString())
    return bodies


def same_trace(i: int) -> dict:
    """What the hand-over assembles from the app's spans, as a POST /v1/traces trace."""
    return {"trace_id": f"{i:032x}", "app": "bench-app", "source": "production", "query": "How do I reset my router?",
            "retrieved_docs": [{"id": "manual", "text": MANUAL, "score": 0.9},
                               {"id": "faq", "text": "Routers blink amber on error.", "score": 0.8}],
            "answer": "Hold the reset button for ten seconds.", "generator_model": "acme-llm-2026",
            "usage": {"prompt_tokens": 412, "completion_tokens": 23},
            "latency_ms": {"retrieval": 0.1, "generation": 0.1, "total": 0.3}}


def send(url: str, bodies: list[bytes], content_type: str, path: str) -> None:
    with httpx.Client(base_url=url, headers={"content-type": content_type}, timeout=30) as client:
        for body in bodies:
            assert client.post(path, content=body).status_code in (200, 202)


def stream_length(admin: redis.Redis) -> int:
    key = keys.online_stream(f"{QUEUE}-online")
    return admin.xlen(key) if admin.exists(key) else 0


def measure(url: str, pid: int, admin: redis.Redis, bodies: list[bytes], content_type: str, path: str) -> float:
    """API CPU seconds per trace, counted until the stream holds every trace sent."""
    start_len, start_cpu = stream_length(admin), cpu_seconds(pid)
    send(url, bodies, content_type, path)
    deadline = time.monotonic() + 120
    while stream_length(admin) < start_len + len(bodies) and time.monotonic() < deadline:
        time.sleep(0.05)
    return (cpu_seconds(pid) - start_cpu) / len(bodies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2000)
    args = parser.parse_args()
    traces = [msgspec.json.encode({"traces": [same_trace(i)]}) for i in range(args.traces)]
    exports = otlp_bodies(args.traces)
    print(f"bench/otlp.py — {time.strftime('%Y-%m-%d %H:%M')}; {machine()}; {git_state()}")
    server = PrivateRedis().start()
    admin = redis.Redis.from_url(server.url)
    with tempfile.TemporaryDirectory() as tmp:
        url, api = start_api(server.url, Path(tmp), ENV)
        try:
            send(url, traces[:200], "application/json", "/v1/traces")          # warm up both paths
            measure(url, api.process.pid, admin, otlp_bodies(200), "application/x-protobuf", "/v1/otlp/v1/traces")
            posted = measure(url, api.process.pid, admin, traces, "application/json", "/v1/traces")
            exported = measure(url, api.process.pid, admin, exports, "application/x-protobuf",
                               "/v1/otlp/v1/traces")
        finally:
            api.stop()
            server.stop()
    ratio = exported / posted
    print(f"POST /v1/traces: {posted * 1e3:.3f} ms of API CPU a trace; OTLP export (3 spans, protobuf) through the "
          f"hand-over: {exported * 1e3:.3f} ms")
    print(f"OTLP / traces = {ratio:.2f}  target <= {TARGET}: {'PASS' if ratio <= TARGET else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
