"""HTTP for the SDK: one httpx client per thread of use, retried with exponential backoff and full jitter."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ragpulse import __version__
from ragpulse.exceptions import RagpulseSDKError

HINTED = frozenset({429, 503})
"""Statuses whose `Retry-After` (in seconds) is honoured up to the backoff cap: no retry comes sooner."""

IDEMPOTENCY_KEY = "Idempotency-Key"
"""The header naming one POST: the same value on each of its retries, so a service that committed a post but
answered 503 (or whose answer was lost) replays that answer instead of counting the post twice."""


@dataclass(frozen=True)
class Backoff:
    """Bounded retries: attempt n waits uniform(0, min(cap, base * 2**n)) seconds, or Retry-After when longer, but
    never more than `cap`: a server asking for a day (`Retry-After: 86400`) must not freeze delivery until close."""

    max_retries: int = 5
    base: float = 0.25
    cap: float = 30.0

    def delay(self, attempt: int, hint: float | None) -> float:
        """Seconds before retry number `attempt` (0-based): full jitter, never below the server's hint up to `cap`."""
        jitter = random.uniform(0, min(self.cap, self.base * 2 ** attempt))
        return jitter if hint is None else max(min(hint, self.cap), jitter)


def retryable(status: int) -> bool:
    """429 (over the ingest rate) and 5xx are worth another try; other 4xx will fail the same way again."""
    return status == 429 or status >= 500


def retry_after(response: httpx.Response) -> float | None:
    """The `Retry-After` seconds of a 429 or 503; None when absent, negative or an HTTP date."""
    value = response.headers.get("retry-after")
    if response.status_code not in HINTED or value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


class Transport:
    """Sends requests to one ragpulse service, retrying what may succeed later; `abort` cuts the waiting short."""

    def __init__(self, url: str, api_key: str | None, timeout: float, backoff: Backoff,
                 abort: threading.Event) -> None:
        headers = {"user-agent": f"ragpulse-sdk/{__version__}"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)
        self.backoff = backoff
        self.abort = abort

    def send(self, method: str, path: str, *, on_retry: Callable[[], None] = lambda: None,
             resend_after_write: bool = True, **kwargs: Any) -> httpx.Response:
        """The first answer that is not worth retrying, or the last one once retries run out or `abort` is set.

        Raises RagpulseSDKError (status None) when the last try got no answer at all. With `resend_after_write`
        False, only failures to connect are retried (the request may have been processed otherwise).

        A POST carries an `Idempotency-Key` (random, made here once, sent again on each retry) unless given one."""
        if method == "POST":
            kwargs["headers"] = {IDEMPOTENCY_KEY: uuid.uuid4().hex, **kwargs.get("headers", {})}
        attempt = 0
        while True:
            try:
                response = self.http.request(method, path, **kwargs)
                if not retryable(response.status_code):
                    return response
                failure: httpx.Response | Exception = response
                hint = retry_after(response)
            except httpx.TransportError as exc:
                if not (resend_after_write or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)):
                    raise _unreachable(self.http, exc) from None
                failure, hint = exc, None
            if attempt >= self.backoff.max_retries or self.abort.wait(self.backoff.delay(attempt, hint)):
                if isinstance(failure, Exception):
                    raise _unreachable(self.http, failure) from None
                return failure
            attempt += 1
            on_retry()

    def close(self) -> None:
        self.http.close()


def _unreachable(http: httpx.Client, exc: Exception) -> RagpulseSDKError:
    return RagpulseSDKError(f"no answer from {http.base_url}: {type(exc).__name__}: {exc}")


def problem(response: httpx.Response) -> RagpulseSDKError:
    """The error for an error answer, with the problem details' `detail` and `errors` when it sent them."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return RagpulseSDKError(f"HTTP {response.status_code}: {response.text[:300]}", response.status_code)
    detail = f"HTTP {response.status_code} {body.get('title', '')}: {body.get('detail', '')}".strip()
    errors = body.get("errors") if isinstance(body.get("errors"), list) else []
    return RagpulseSDKError(detail, response.status_code, errors)
