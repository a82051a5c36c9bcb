"""A small HTTP client for a running ragpulse service, used by `ragpulse eval`, and its trace-file reader."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import msgspec

from ragpulse.qualification.model import QualificationJob, QualificationPriced
from ragpulse.config import defaults
from ragpulse.exceptions import BadAnswer, ClientError, ServerUnreachable, TraceFileError, TracesRejected
from ragpulse.model.compare import Comparison
from ragpulse.model.dataset import DatasetDeleted, DatasetList, DatasetVersion
from ragpulse.model.pairwise import PairwisePending
from ragpulse.reporting.report import Report
from ragpulse.model.results import TERMINAL, Accepted, JobView, ResultsPage, TraceResult
from ragpulse.sdk.transport import Backoff, retry_after

REJECTED = {400, 413, 422}
"""Statuses of POST /v1/batches that reject the traces themselves (malformed, over a limit, schema violations)."""

T = TypeVar("T")


@dataclass
class TraceFile:
    """The traces of a file, in file order, and for JSONL the line each came from."""

    path: Path
    traces: list[dict[str, Any]]
    lines: list[int] | None = None
    options: dict[str, Any] | None = None
    """A JSON file's own batch `options` (`{"traces": [...], "options": {...}}`), as POST /v1/batches takes them."""
    dataset: dict[str, Any] | None = None
    """The dataset version the traces name items of (`{"name": ..., "version": ...}`): a JSON file's own `dataset`,
    or `--dataset NAME:VERSION`; posted with every batch of the file."""

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
    if isinstance(data, dict) and "traces" not in data and "query" in data:
        raise TraceFileError(f"{path}: this is one trace: wrap it as {{\"traces\": [ ... ]}}, or give a list of "
                             "traces, or name the file *.jsonl with one trace per line")
    if not isinstance(traces, list):
        raise TraceFileError(f"{path}: expected a list of traces or an object with a \"traces\" list, "
                             f"got {_kind(data if not isinstance(data, dict) else traces)}")
    if not traces:
        raise TraceFileError(f"{path} holds an empty list: no traces to evaluate")
    for index, trace in enumerate(traces):
        if not isinstance(trace, dict):
            raise TraceFileError(f"{path}, trace {index + 1}: expected a JSON object, got {_kind(trace)}")
    options = data.get("options") if isinstance(data, dict) else None
    if options is not None and not isinstance(options, dict):
        raise TraceFileError(f"{path}: \"options\" must be an object of batch options, got {_kind(options)}")
    dataset = data.get("dataset") if isinstance(data, dict) else None
    return TraceFile(path, traces, options=options, dataset=dataset)


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
    """Posts batches, polls jobs, reads reports and results; every answer is typed at this boundary, so a page that
    is not the API's JSON fails here as BadAnswer, and what may pass is retried (a 429; for reads, a 5xx too)."""

    def __init__(self, server: str, api_key: str | None = None, timeout: float = 60.0,
                 backoff: Backoff | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=timeout)
        self.backoff = backoff or Backoff(defaults.CLIENT_RETRIES, defaults.CLIENT_BACKOFF_SECONDS,
                                          defaults.CLIENT_BACKOFF_CAP_SECONDS)

    def url(self, path: str) -> str:
        """The absolute URL of `path` on the service (what a user can open or curl)."""
        return f"{self.http.base_url}".rstrip("/") + path

    def submit(self, traces: list[dict[str, Any]], options: dict[str, Any],
               dataset: dict[str, Any] | None = None) -> Accepted:
        """POST a batch (bound to `dataset` when given); returns the 202 answer.

        Raises TracesRejected when the service rejects the traces themselves (400, 413, 422).
        """
        return self._decode(self._post_batch(traces, options, {}, dataset), Accepted)

    def check(self, traces: list[dict[str, Any]], options: dict[str, Any],
              dataset: dict[str, Any] | None = None) -> None:
        """POST a batch with `?dry_run=true`: the service checks it and queues nothing. Raises as `submit` does."""
        self._decode(self._post_batch(traces, options, {"dry_run": "true"}, dataset), dict[str, Any])

    def _post_batch(self, traces: list[dict[str, Any]], options: dict[str, Any], params: dict[str, str],
                    dataset: dict[str, Any] | None = None) -> httpx.Response:
        body: dict[str, Any] = {"traces": traces, "options": options, **({"dataset": dataset} if dataset else {})}
        response = self._request("POST", "/v1/batches", json=body, params=params)
        if response.status_code in REJECTED:
            raise TracesRejected(_describe(response, with_errors=False), response.status_code,
                                 _problem(response).errors)
        return response

    def wait(self, job_id: str, on_progress: Callable[[JobView], None], poll: float = 0.5) -> JobView:
        """Poll the job until it reaches a terminal status; returns the final job view."""
        return self.wait_all([job_id], lambda jobs: on_progress(jobs[0]), poll)[0]

    def wait_all(self, job_ids: list[str], on_progress: Callable[[list[JobView]], None],
                 poll: float = 0.5) -> list[JobView]:
        """Poll every job until all reach a terminal status; returns the final job views, in order."""
        jobs: dict[str, JobView] = {}
        while True:
            for job_id in job_ids:
                if job_id not in jobs or jobs[job_id].status not in TERMINAL:
                    jobs[job_id] = self.job(job_id)
            views = [jobs[job_id] for job_id in job_ids]
            on_progress(views)
            if all(view.status in TERMINAL for view in views):
                return views
            time.sleep(poll)

    def report(self, job_id: str) -> Report:
        """The job's report."""
        return self._decode(self._request("GET", f"/v1/jobs/{job_id}/report"), Report)

    def report_page(self, job_id: str) -> str:
        """The job's report page as the service renders it (GET /v1/jobs/{job_id}/report.html): ClientError when the
        job has no report (202 while it runs, 409 when it ended without one) or another error."""
        response = self._request("GET", f"/v1/jobs/{job_id}/report.html")
        if response.status_code >= 400:
            raise ClientError(_describe(response), response.status_code)
        if response.status_code != 200:
            raise ClientError(f"GET /v1/jobs/{job_id}/report.html answered HTTP {response.status_code}: no report "
                              "page", response.status_code)
        return response.text

    def results(self, job_id: str) -> list[TraceResult]:
        """Every per-trace result of the job, in trace order (all pages)."""
        items: list[TraceResult] = []
        params: dict[str, Any] = {"limit": defaults.RESULTS_PAGE_MAX}
        while True:
            page = self._decode(self._request("GET", f"/v1/jobs/{job_id}/results", params=params), ResultsPage)
            items += page.items
            if page.next_cursor is None:
                return items
            params["cursor"] = page.next_cursor

    def compare(self, candidate: str, baseline: str, threshold: float, family: list[str] | None = None,
                correction: str = "holm", on_judge_mismatch: str = "refuse") -> Comparison:
        """GET /v1/jobs/{candidate}/compare?baseline=...: the paired comparison, testing `family` (the server's
        default family when None) with `correction`; `on_judge_mismatch` warn answers a comparison the service
        would refuse for its judging, for the caller to rule on."""
        params: dict[str, Any] = {"baseline": baseline, "threshold": threshold, "correction": correction,
                                  "on_judge_mismatch": on_judge_mismatch}
        if family is not None:
            params["metrics"] = ",".join(family)
        return self._decode(self._request("GET", f"/v1/jobs/{candidate}/compare", params=params), Comparison)

    def compare_pairwise(self, candidate: str, baseline: str, judge: str | None,
                         on_progress: Callable[[PairwisePending], None], poll: float = 1.0) -> Comparison:
        """GET /v1/jobs/{candidate}/compare?baseline=...&pairwise=true until its pairwise run has ended (202 while it
        runs): the comparison with its `pairwise` section."""
        params: dict[str, Any] = {"baseline": baseline, "pairwise": "true", **({"judge": judge} if judge else {})}
        while True:
            response = self._request("GET", f"/v1/jobs/{candidate}/compare", params=params)
            if response.status_code != 202:
                return self._decode(response, Comparison)
            on_progress(self._decode(response, PairwisePending))
            time.sleep(poll)

    def push_dataset(self, name: str, items: list[dict[str, Any]], description: str | None) -> tuple[DatasetVersion, bool]:
        """POST /v1/datasets/{name}/versions: the version, and whether it is new (False: the latest had these items).
        Raises TracesRejected (with every failing path, `$.items[i]...`) when the service rejects the items."""
        body: dict[str, Any] = {"items": items, **({"description": description} if description else {})}
        response = self._request("POST", f"/v1/datasets/{name}/versions", json=body)
        if response.status_code in REJECTED:
            raise TracesRejected(_describe(response, with_errors=False), response.status_code,
                                 _problem(response).errors)
        return self._decode(response, DatasetVersion), response.status_code == 201

    def datasets(self) -> DatasetList:
        """GET /v1/datasets: the tenant's datasets with their latest versions."""
        return self._decode(self._request("GET", "/v1/datasets"), DatasetList)

    def delete_dataset(self, name: str, version: int | None = None) -> DatasetDeleted:
        """DELETE /v1/datasets/{name}, or one version of it: what was removed (ClientError 404 when there is no such
        dataset or version)."""
        path = f"/v1/datasets/{name}" + (f"/versions/{version}" if version is not None else "")
        return self._decode(self._request("DELETE", path), DatasetDeleted)

    def qualify(self, body: dict[str, Any]) -> QualificationPriced:
        """POST /v1/judges/qualify: the run's estimate and, unless a dry run, its job id."""
        return self._decode(self._request("POST", "/v1/judges/qualify", json=body), QualificationPriced)

    def qualification(self, job_id: str) -> QualificationJob:
        """GET /v1/judges/qualify/{job_id}: the run's status and, once finished, its result."""
        return self._decode(self._request("GET", f"/v1/judges/qualify/{job_id}"), QualificationJob)

    def job(self, job_id: str) -> JobView:
        """The job's status view."""
        return self._decode(self._request("GET", f"/v1/jobs/{job_id}"), JobView)

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The first answer not worth another try, or the last one once `backoff.max_retries` retries are spent.

        A 429 is retried for any request (the service refuses it before writing anything); a 5xx or no answer only
        for a read, since a POST answered so may have been committed. Retry-After is honoured up to the cap."""
        read, attempt = method == "GET", 0
        while True:
            try:
                response = self.http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if not read or attempt >= self.backoff.max_retries:
                    raise ServerUnreachable(f"cannot reach {self.http.base_url}: {exc}") from None
                why, hint = f"no answer ({type(exc).__name__})", None
            else:
                if not _worth_retrying(response.status_code, read) or attempt >= self.backoff.max_retries:
                    return response
                why, hint = f"HTTP {response.status_code}", retry_after(response)
            delay = self.backoff.delay(attempt, None if hint is None else min(hint, self.backoff.cap))
            print(f"\n{method} {path}: {why}; retry {attempt + 1} of {self.backoff.max_retries} in {delay:.1f} s",
                  file=sys.stderr)
            time.sleep(delay)
            attempt += 1

    @staticmethod
    def _decode(response: httpx.Response, shape: type[T]) -> T:
        """The answer as `shape`; ClientError for an error status, BadAnswer for a body that is not that JSON."""
        if response.status_code >= 400:
            raise ClientError(_describe(response), response.status_code)
        try:
            return msgspec.json.decode(response.content, type=shape)
        except msgspec.DecodeError as exc:  # ValidationError included: JSON of another shape
            kind = response.headers.get("content-type", "no content type")
            raise BadAnswer(f"{response.request.method} {response.request.url.path} answered HTTP "
                            f"{response.status_code} ({kind}) with a body that is not the API's JSON: {exc}; is "
                            f"--server the ragpulse API, not a proxy or a web page?", response.status_code) from None


def _worth_retrying(status: int, read: bool) -> bool:
    return status == 429 or (read and status >= 500)


def service_fault(exc: ClientError) -> bool:
    """True when the service, not the request, failed: no answer, a 5xx, a 429 still there after the retries, or an
    answer that is not the API's JSON. False for a 4xx that names something wrong with what was asked."""
    if isinstance(exc, ServerUnreachable | BadAnswer) or exc.status is None:
        return True
    return exc.status == 429 or exc.status >= 500


class _Problem(msgspec.Struct):
    """The parts of a problem-details body the client prints; anything else an error answer holds is ignored."""

    title: str = ""
    detail: str = ""
    errors: list[dict[str, Any]] = []


def _problem(response: httpx.Response) -> _Problem:
    """The problem details of an error answer; empty when its body is not one (a proxy's page, say)."""
    try:
        return msgspec.json.decode(response.content, type=_Problem)
    except msgspec.DecodeError:
        return _Problem()


def _describe(response: httpx.Response, with_errors: bool = True) -> str:
    if response.status_code == 401:
        return _unauthorized(response)
    body = _problem(response)
    if not (body.title or body.detail):
        return f"HTTP {response.status_code}: {response.text[:500]}"
    lines = [f"HTTP {response.status_code} {body.title}: {body.detail}"]
    if with_errors:
        lines += [f"  {e.get('path', '$')}: {e.get('message', '')}" for e in body.errors[:50]]
    return "\n".join(lines)


def _unauthorized(response: httpx.Response) -> str:
    """A 401 as the CLI's user fixes it: the key goes in --api-key or RAGPULSE_API_KEY (the service's own words,
    `send Authorization: Bearer`, are for HTTP clients)."""
    if "authorization" in response.request.headers:
        return ("HTTP 401: the service did not accept the API key sent (from --api-key, else RAGPULSE_API_KEY); "
                "pass one of its keys (RAGPULSE_API_KEYS on the service) with --api-key KEY or RAGPULSE_API_KEY")
    return ("HTTP 401: the service needs an API key: pass --api-key KEY or set RAGPULSE_API_KEY (one of the keys in "
            "the service's RAGPULSE_API_KEYS)")
