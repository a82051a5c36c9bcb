"""A small HTTP client for a running ragpulse service, used by `ragpulse eval`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from ragpulse.exceptions import ClientError
from ragpulse.model.results import TERMINAL


def read_traces(path: Path) -> list[dict[str, Any]]:
    """Traces from a JSON file (a list, or an object with `traces`) or a JSONL file (one trace per line)."""
    text = path.read_text()
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    return data["traces"] if isinstance(data, dict) else data


def batches(traces: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """Consecutive slices of at most `size` traces."""
    for start in range(0, len(traces), size):
        yield traces[start:start + size]


class Client:
    """Posts batches and polls jobs."""

    def __init__(self, server: str, api_key: str | None = None, timeout: float = 60.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=timeout)

    def submit(self, traces: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        """POST a batch; returns the 202 body."""
        return self._call("POST", "/v1/batches", json={"traces": traces, "options": options})

    def wait(self, job_id: str, on_progress: Callable[[dict[str, Any]], None], poll: float = 0.5) -> dict[str, Any]:
        """Poll the job until it reaches a terminal status; returns the final job view."""
        while True:
            job = self._call("GET", f"/v1/jobs/{job_id}")
            on_progress(job)
            if job["status"] in TERMINAL:
                return job
            time.sleep(poll)

    def report(self, job_id: str) -> dict[str, Any]:
        """The job's report."""
        return self._call("GET", f"/v1/jobs/{job_id}/report")

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach {self.http.base_url}: {exc}") from None
        if response.status_code >= 400:
            raise ClientError(_describe(response))
        return response.json()


def _describe(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:500]}"
    lines = [f"HTTP {response.status_code} {body.get('title', '')}: {body.get('detail', '')}"]
    lines += [f"  {e['path']}: {e['message']}" for e in body.get("errors", [])[:50]]
    return "\n".join(lines)
