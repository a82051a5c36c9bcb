"""The SDK's synchronous helpers for evaluation jobs and online trace records; answers are plain dicts, typed by
ragpulse.sdk.types."""

from __future__ import annotations

import time
from typing import Any

import httpx

from ragpulse.exceptions import RagpulseSDKError
from ragpulse.sdk.transport import Transport, problem
from ragpulse.sdk.types import Comparison, Job, Report, Session, TraceRecord

TERMINAL = frozenset({"finished", "finished_with_errors", "failed"})
"""Job statuses that no longer change (the service's own list, repeated to keep the SDK's imports light)."""

PAGE = 1000
"""Results asked for per page: the service's largest."""


class Helpers:
    """Job and trace calls of `RagpulseClient`; they run in the caller's thread, beside the sender, on their own
    connection pool. Each raises RagpulseSDKError for an error answer (after retrying 429, 5xx and no answer)."""

    _api: Transport

    def submit_batch(self, traces: list[dict[str, Any]], **options: Any) -> str:
        """POST /v1/batches with these traces and batch options (`k`, `judge`, `run`, ...); returns the job id.

        Only a failure to connect is retried after the request may have been sent (never a duplicate job)."""
        return self._json("POST", "/v1/batches", json={"traces": traces, "options": options},
                          resend_after_write=False)["job_id"]

    def job(self, job_id: str) -> Job:
        """GET /v1/jobs/{id}: `status`, `progress`, `spend`, ..."""
        return self._json("GET", f"/v1/jobs/{job_id}")  # type: ignore[return-value]

    def wait(self, job_id: str, timeout: float = 300.0, poll: float = 0.5) -> Job:
        """Poll the job until its status is terminal; returns that view. TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (view := self.job(job_id))["status"] not in TERMINAL:
            if time.monotonic() + poll > deadline:
                raise TimeoutError(f"job {job_id} still {view['status']} after {timeout} s")
            time.sleep(poll)
        return view

    def results(self, job_id: str) -> list[dict[str, Any]]:
        """Every per-trace result of the job, in trace order (follows `next_cursor` across pages)."""
        items: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = self._json("GET", f"/v1/jobs/{job_id}/results", params={"limit": PAGE, "cursor": cursor})
            items += page["items"]
            if not page.get("next_cursor"):
                return items
            cursor = page["next_cursor"]

    def report(self, job_id: str) -> Report:
        """GET /v1/jobs/{id}/report; RagpulseSDKError with status 202 while the job is still running."""
        return self._json("GET", f"/v1/jobs/{job_id}/report", ok=200)  # type: ignore[return-value]

    def compare(self, candidate: str, baseline: str, threshold: float | None = None,
                metrics: list[str] | None = None, correction: str | None = None) -> Comparison:
        """GET /v1/jobs/{candidate}/compare?baseline=...: the paired comparison of two finished jobs; `metrics` is
        the family tested for a change (the server's default when None), `correction` `holm` or `none`."""
        params: dict[str, Any] = {"baseline": baseline}
        if threshold is not None:
            params["threshold"] = threshold
        if metrics is not None:
            params["metrics"] = ",".join(metrics)
        if correction is not None:
            params["correction"] = correction
        return self._json("GET", f"/v1/jobs/{candidate}/compare", params=params)  # type: ignore[return-value]

    def trace(self, trace_id: str) -> TraceRecord:
        """GET /v1/traces/{id}: a sampled online trace's record (`status` pending, done or failed; `result`)."""
        return self._json("GET", f"/v1/traces/{trace_id}")  # type: ignore[return-value]

    def session(self, session_id: str) -> Session:
        """GET /v1/sessions/{id}: a conversation's sampled turns, ordered by turn, each with its trace record."""
        return self._json("GET", f"/v1/sessions/{session_id}")  # type: ignore[return-value]

    def _json(self, method: str, path: str, ok: int | None = None, **kwargs: Any) -> dict[str, Any]:
        response = self._api.send(method, path, **kwargs)
        if response.status_code >= 300:
            raise problem(response)
        if ok is not None and response.status_code != ok:
            raise _pending(response)
        return response.json()


def _pending(response: httpx.Response) -> RagpulseSDKError:
    return RagpulseSDKError(f"HTTP {response.status_code}: the report is not ready yet", response.status_code)
