"""A small HTTP client for a running ragpulse service, used by `ragpulse eval`, and its trace-file reader."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec

from ragpulse.config import defaults
from ragpulse.exceptions import ClientError, ServerUnreachable, TraceFileError, TracesRejected
from ragpulse.model.results import TERMINAL, ResultsPage, TraceResult

REJECTED = {400, 413, 422}
"""Statuses of POST /v1/batches that reject the traces themselves (malformed, over a limit, schema violations)."""


@dataclass
class TraceFile:
    """The traces of a file, in file order, and for JSONL the line each came from."""

    path: Path
    traces: list[dict[str, Any]]
    lines: list[int] | None = None

    def where(self, index: int) -> str:
        """`trace 3 (line 5)`: a trace by its 1-based position in the file, and its line in a JSONL file."""
        line = f" (line {self.lines[index]})" if self.lines and 0 <= index < len(self.lines) else ""
        return f"trace {index + 1}{line}"


def read_traces(path: Path) -> TraceFile:
    """Traces from a JSON file (a list, or an object with `traces`) or a JSONL file (one trace per line).

    Raises TraceFileError naming the file's own line (not the JSON parser's line within one JSONL record) when the
    file cannot be read or parsed, when a trace is not a JSON object, and when the file holds no trace at all.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFileError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise TraceFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        what = "holds only blank lines" if text else "is empty"
        raise TraceFileError(f"{path} {what}: no traces to evaluate")
    if path.suffix == ".jsonl":
        return _read_jsonl(path, text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (a file with one trace per line must be named *.jsonl)" if exc.msg == "Extra data" else ""
        raise TraceFileError(f"{path}, line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}{hint}") \
            from None
    traces = data.get("traces") if isinstance(data, dict) else data
    if not isinstance(traces, list):
        raise TraceFileError(f"{path}: expected a list of traces or an object with a \"traces\" list, "
                             f"got {_kind(data if not isinstance(data, dict) else traces)}")
    if not traces:
        raise TraceFileError(f"{path} holds an empty list: no traces to evaluate")
    for index, trace in enumerate(traces):
        if not isinstance(trace, dict):
            raise TraceFileError(f"{path}, trace {index + 1}: expected a JSON object, got {_kind(trace)}")
    return TraceFile(path, traces)


def _read_jsonl(path: Path, text: str) -> TraceFile:
    traces, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            trace = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceFileError(f"{path}, line {number}, column {exc.colno}: not valid JSON: {exc.msg}") from None
        if not isinstance(trace, dict):
            raise TraceFileError(f"{path}, line {number}: expected a JSON object (one trace per line), "
                                 f"got {_kind(trace)}")
        traces.append(trace)
        lines.append(number)
    if not traces:
        raise TraceFileError(f"{path} holds only blank lines: no traces to evaluate")
    return TraceFile(path, traces, lines)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "true or false", int: "a number", float: "a number", str: "a string", list: "a list",
             dict: "an object"}
    return names.get(type(value), type(value).__name__)


def batches(traces: list[dict[str, Any]], size: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(offset, slice) for consecutive slices of at most `size` traces."""
    for start in range(0, len(traces), size):
        yield start, traces[start:start + size]


class Client:
    """Posts batches, polls jobs, reads reports and results."""

    def __init__(self, server: str, api_key: str | None = None, timeout: float = 60.0) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=timeout)

    def submit(self, traces: list[dict[str, Any]], options: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """POST a batch; returns the 202 body (with `dry_run`, the 200 estimate: the batch is checked, not queued).

        Raises TracesRejected when the service rejects the traces themselves (400, 413, 422).
        """
        response = self._request("POST", "/v1/batches", json={"traces": traces, "options": options},
                                 params={"dry_run": "true"} if dry_run else None)
        if response.status_code in REJECTED:
            body = _problem(response)
            raise TracesRejected(_describe(response, with_errors=False), response.status_code,
                                 body.get("errors") or [])
        return self._json(response)

    def wait(self, job_id: str, on_progress: Callable[[dict[str, Any]], None], poll: float = 0.5) -> dict[str, Any]:
        """Poll the job until it reaches a terminal status; returns the final job view."""
        return self.wait_all([job_id], lambda jobs: on_progress(jobs[0]), poll)[0]

    def wait_all(self, job_ids: list[str], on_progress: Callable[[list[dict[str, Any]]], None],
                 poll: float = 0.5) -> list[dict[str, Any]]:
        """Poll every job until all reach a terminal status; returns the final job views, in order."""
        jobs: dict[str, dict[str, Any]] = {}
        while True:
            for job_id in job_ids:
                if job_id not in jobs or jobs[job_id]["status"] not in TERMINAL:
                    jobs[job_id] = self._json(self._request("GET", f"/v1/jobs/{job_id}"))
            views = [jobs[job_id] for job_id in job_ids]
            on_progress(views)
            if all(view["status"] in TERMINAL for view in views):
                return views
            time.sleep(poll)

    def report(self, job_id: str) -> dict[str, Any]:
        """The job's report."""
        return self._json(self._request("GET", f"/v1/jobs/{job_id}/report"))

    def results(self, job_id: str) -> list[TraceResult]:
        """Every per-trace result of the job, in trace order (all pages)."""
        items: list[TraceResult] = []
        cursor = ""
        while True:
            response = self._request("GET", f"/v1/jobs/{job_id}/results",
                                     params={"limit": defaults.RESULTS_PAGE_MAX, "cursor": cursor})
            self._json(response)  # raises ClientError on an error status
            page = msgspec.json.decode(response.content, type=ResultsPage)
            items += page.items
            if page.next_cursor is None:
                return items
            cursor = page.next_cursor

    def compare(self, candidate: str, baseline: str, threshold: float, family: list[str] | None = None,
                correction: str = "holm") -> dict[str, Any]:
        """GET /v1/jobs/{candidate}/compare?baseline=...: the paired comparison, testing `family` (the server's
        default family when None) with `correction`."""
        params: dict[str, Any] = {"baseline": baseline, "threshold": threshold, "correction": correction}
        if family is not None:
            params["metrics"] = ",".join(family)
        return self._json(self._request("GET", f"/v1/jobs/{candidate}/compare", params=params))

    def job(self, job_id: str) -> dict[str, Any]:
        """The job's status view."""
        return self._json(self._request("GET", f"/v1/jobs/{job_id}"))

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"cannot reach {self.http.base_url}: {exc}") from None

    @staticmethod
    def _json(response: httpx.Response) -> dict[str, Any]:
        if response.status_code >= 400:
            raise ClientError(_describe(response), response.status_code)
        return response.json()


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _describe(response: httpx.Response, with_errors: bool = True) -> str:
    body = _problem(response)
    if not body:
        return f"HTTP {response.status_code}: {response.text[:500]}"
    lines = [f"HTTP {response.status_code} {body.get('title', '')}: {body.get('detail', '')}"]
    if with_errors:
        lines += [f"  {e['path']}: {e['message']}" for e in body.get("errors", [])[:50]]
    return "\n".join(lines)
