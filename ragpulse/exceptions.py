"""The one exception hierarchy of ragpulse.

    RagpulseError
    ├── ConfigError            settings are invalid or unsafe; the process must not start
    ├── InputError             the client sent something we cannot accept (4xx)
    │   ├── MalformedBody      the body is not JSON at all (400)
    │   ├── InvalidBody        the body is JSON but breaks the schema; carries every failing path (422)
    │   │   └── IdempotencyKeyReused  the Idempotency-Key was sent before with another body (422)
    │   ├── InvalidParameter   a query or path parameter is out of range (400)
    │   ├── Conflict           the request conflicts with the job's state, e.g. retrying a running job (409)
    │   ├── Unsupported        well formed, but asks for what this service cannot do: pairwise judging with a heuristic
    │   │                      judge, or with a judge not configured here (422)
    │   ├── TooLarge           the body or the batch exceeds a limit (413)
    │   │   └── OverBodyBudget a body alone larger than RAGPULSE_MAX_INFLIGHT_BODY_BYTES, refused unread (413)
    │   ├── TooManyQueued      the tenant holds its cap of queued generation jobs, or of their bytes (429)
    │   ├── BodyTimeout        the body did not arrive within RAGPULSE_BODY_READ_TIMEOUT_SECONDS (408)
    │   └── UnsupportedMediaType  a JSON endpoint was sent a body that does not say it is JSON (415)
    ├── Unauthorized           missing or unknown API key (401)
    │   └── LoginRequired      a review page without a live session cookie (303 to the login form)
    ├── Forbidden              a review-page form without its session's CSRF token, or posted from another origin (403)
    ├── RateLimited            the tenant is over its ingest rate; carries the seconds until it fits (429)
    ├── Backlogged             the online stream is full: workers are behind, the post is refused (503)
    │   └── OverBacklogShare   the tenant holds its share of the online stream: its post is refused (503)
    ├── BodiesInFlight         the API holds RAGPULSE_MAX_INFLIGHT_BODY_BYTES of bodies: this one is refused unread (503)
    ├── AlreadyAnswered        a post's Idempotency-Key was answered before: that answer is replayed, nothing written
    ├── TraceNotFound          no online trace record with this id for this tenant (404)
    ├── SessionNotFound        no sampled turn of this conversation for this tenant (404)
    ├── JobNotFound            no such job for this tenant (404)
    ├── DatasetNotFound        no such dataset, or no such version of it, for this tenant (404)
    ├── StoreUnavailable       Redis cannot be reached (503)
    │   └── StoreRefused       Redis answered but refused a write: out of memory, read-only replica (503)
    ├── JudgeError             judging one trace failed; the trace is kept with status judge_error
    │   ├── JudgeOutputInvalid the judge's tool output stayed invalid or truncated after one repair
    │   ├── JudgeUnavailable   the provider kept failing (429, 529, 5xx, timeout) after bounded retries
    │   ├── JudgeNotConfigured the judge has no credentials here: generation fails, retrieval metrics are kept
    │   ├── JudgeAuthError     the provider rejected our credentials: the whole job fails at once
    │   ├── BudgetSpent        a generation job's budget ran out before a call: the call is not sent
    │   └── JudgeResponseInvalid  the provider answered 2xx with something that is not its API's answer (a proxy page)
    ├── CallbackError          a job's completion callback cannot be delivered
    │   ├── CallbackRejected   the URL is not allowed (allowlist, scheme, internal address): never retried
    │   └── DeliveryFailed     the receiver is unreachable or did not answer 2xx: retried with backoff
    ├── ClientError            `ragpulse eval`: the service answered an error or could not be reached
    │   ├── TracesRejected     the service rejected the traces themselves (400, 413, 422), with every failing path
    │   ├── ServerUnreachable  no HTTP answer at all (connection refused, timeout, DNS)
    │   ├── BadAnswer          a 2xx whose body is not the API's JSON (a proxy's page, a wrong URL)
    │   └── RagpulseSDKError   `ragpulse.sdk`: a helper call failed; carries the status and problem-details `errors`
    ├── TraceFileError         `ragpulse eval`: the trace file cannot be read, is not JSON/JSONL, or holds no traces
    ├── GateConfigError        `ragpulse gate`: the gate config cannot be read or breaks its schema
    ├── OutputFileError        `--html` / `--junit`: the output file cannot be written (checked before any run)
    ├── DatasetMismatch        `ragpulse gate`: the candidate and the baseline ran different dataset versions or items
    ├── HeuristicEvidence      `ragpulse gate`: a judged metric rests on the unmeasured offline heuristic
    ├── JudgingRefused         `ragpulse gate`: the two sides were judged differently, or one judged too few traces
    ├── Interrupted            `ragpulse eval` / `gate`: Ctrl-C; carries the jobs created so far, which run on
    └── SpansInvalid           an OpenTelemetry trace's spans cannot make a ragpulse trace: it is recorded `invalid`
"""

from __future__ import annotations

from typing import Any


class RagpulseError(Exception):
    """Base of every error ragpulse raises on purpose."""


class ConfigError(RagpulseError):
    """Settings are invalid or unsafe; the process refuses to start."""


class InputError(RagpulseError):
    """The client sent something we cannot accept."""

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None, errors_truncated: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        self.errors_truncated = errors_truncated
        """True when `errors` was cut at its limit and more paths fail."""


class MalformedBody(InputError):
    """The request body is not valid JSON."""


class InvalidBody(InputError):
    """The body is JSON but violates the schema; `errors` lists every failing path (bounded, see `errors_truncated`)."""


class IdempotencyKeyReused(InvalidBody):
    """The post's Idempotency-Key was sent before with another body: a key names one post, not one per body."""

    def __init__(self) -> None:
        super().__init__(
            "this Idempotency-Key was sent before with a different body; use a new key for a new post",
            [{"path": "header.idempotency-key", "message": "already used with a different body"}])


class InvalidParameter(InputError):
    """A query or path parameter is out of range or unparseable."""


class TooManyQueued(InputError):
    """The tenant holds its cap of queued generation jobs, or of their requests' bytes; one must start first."""


class Conflict(InputError):
    """The request is well formed but conflicts with the current state of its target (retrying a running job)."""


class Unsupported(InputError):
    """The request is well formed but asks for something this service cannot do as asked (pairwise judging with the
    local heuristic, which cannot compare two answers); `errors` names the input to change."""


class TooLarge(InputError):
    """The body or the batch exceeds a configured limit."""


class OverBodyBudget(TooLarge):
    """A body larger on its own than all the bodies the API holds at once may be: it could never be read."""

    def __init__(self, size: int, budget: int) -> None:
        super().__init__(
            f"the body holds {size} bytes or more; the API holds at most {budget} bytes of bodies at once "
            "(RAGPULSE_MAX_INFLIGHT_BODY_BYTES)", [{"path": "body", "message": f"at most {budget} bytes"}])


class BodyTimeout(InputError):
    """The request's body did not arrive in full within its deadline: the client sends too slowly (or stalled)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the request body did not arrive within {seconds:g} s (RAGPULSE_BODY_READ_TIMEOUT_SECONDS); send it "
            "faster, or smaller", [{"path": "body", "message": f"not complete after {seconds:g} s"}])


class UnsupportedMediaType(InputError):
    """A JSON endpoint got a body whose Content-Type is not JSON (or none)."""


class Unauthorized(RagpulseError):
    """The request carries no API key, or one we do not know."""


class MisdirectedRequest(RagpulseError):
    """Open mode (no API keys, loopback only) got a request naming another host: a page of another site whose name
    now resolves to 127.0.0.1 (DNS rebinding) would otherwise act as tenant `default`."""


class LoginRequired(Unauthorized):
    """A review page was asked for without a live session cookie; `next_path` is where to return after login."""

    def __init__(self, next_path: str) -> None:
        super().__init__(f"log in at /review/login to open {next_path}")
        self.next_path = next_path


class Forbidden(RagpulseError):
    """A review-page form came without its session's CSRF token, or from another site: refused unread."""


class RateLimited(RagpulseError):
    """The tenant's ingest token bucket lacks the tokens for this batch; `retry_after` seconds until it has them."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"over the ingest rate limit; retry in {retry_after:.3f} s")
        self.retry_after = retry_after


class Backlogged(RagpulseError):
    """The online stream holds its cap of unprocessed posts: the workers are behind, the post is refused."""

    def __init__(self, held: int) -> None:
        super().__init__(f"the online stream holds {held} unprocessed posts, its limit")
        self.held = held


class OverBacklogShare(Backlogged):
    """The tenant holds its share of the online stream's unprocessed posts: its post is refused, other tenants' not."""

    def __init__(self, held: int, share: int) -> None:
        RagpulseError.__init__(self, f"this tenant holds {held} unprocessed posts of the online stream, its share")
        self.held = held
        self.share = share


class BodiesInFlight(RagpulseError):
    """The bodies being read and answered fill the process's budget: this one is refused before it is read."""

    def __init__(self, size: int, held: int, budget: int) -> None:
        super().__init__(f"the API holds {held} bytes of request bodies; {size} more would pass its budget of {budget} "
                         "(RAGPULSE_MAX_INFLIGHT_BODY_BYTES); retry shortly")


class AlreadyAnswered(RagpulseError):
    """A post's Idempotency-Key was answered before (its post committed): the answer kept, to replay; nothing written."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"this Idempotency-Key was answered {status} before")
        self.status = status
        self.body = body


class TraceNotFound(RagpulseError):
    """No online trace record with this id exists for the calling tenant."""


class SessionNotFound(RagpulseError):
    """No sampled turn of this session is kept for the calling tenant."""


class JobNotFound(RagpulseError):
    """No job with this id exists for the calling tenant; `path` and `role` say which input named it when a request
    names several jobs (`query.baseline`, the baseline)."""

    def __init__(self, job_id: str, path: str | None = None, role: str | None = None) -> None:
        super().__init__(job_id)
        self.path = path
        self.role = role


class DatasetNotFound(RagpulseError):
    """No dataset of this name (or no such version of it) exists for the calling tenant."""

    def __init__(self, name: str, version: int | None = None, path: str | None = None) -> None:
        super().__init__(f"no dataset {name!r}" if version is None else f"no version {version} of dataset {name!r}")
        self.name = name
        self.version = version
        self.path = path
        """The request input that named it (`path.name`), when the answer should name it."""


class StoreUnavailable(RagpulseError):
    """Redis cannot be reached."""


class StoreRefused(StoreUnavailable):
    """Redis answered but refused a write (out of memory, a read-only replica, ...); the message is Redis's."""


class JudgeError(RagpulseError):
    """Judging one trace failed; the trace is kept with status `judge_error` and this reason."""

    def __init__(self, reason: str, calls: list[Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.calls = calls or []
        """The judge calls made before the failure, kept for audit (JudgeCall records)."""


class JudgeOutputInvalid(JudgeError):
    """The judge's structured output stayed invalid or truncated after one repair attempt."""


class JudgeUnavailable(JudgeError):
    """The judge provider kept failing (rate limit, overload, server error, timeout) after bounded retries."""


class JudgeNotConfigured(JudgeError):
    """The judge cannot run on this worker (no API key or token configured); nothing was sent. Each trace it was
    asked to judge ends judge_error with this reason and keeps its retrieval metrics and labels."""


class JudgeAuthError(JudgeError):
    """The provider rejected our credentials or permissions; retrying cannot help, so the job fails."""


class BudgetSpent(JudgeError):
    """A generation job's budget, counting its calls in flight, ran out before a call: the call is not sent."""


class JudgeResponseInvalid(JudgeError):
    """The provider answered 2xx with a body that is not its API's response (a proxy's HTML page, a wrong base URL):
    the trace ends judge_error at once, since asking the same address again gets the same page."""


class CallbackError(RagpulseError):
    """A job's completion callback cannot be delivered; the job's callback status records why."""


class CallbackRejected(CallbackError):
    """The callback URL is not allowed (not allowlisted, wrong scheme, or resolves to an internal address)."""


class DeliveryFailed(CallbackError):
    """The receiver could not be reached or did not answer 2xx; the delivery will be retried."""


class ClientError(RagpulseError):
    """The service answered with an error, or could not be reached (the `ragpulse eval` client)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status the service answered with; None when there was no answer."""


class TracesRejected(ClientError):
    """The service rejected the posted traces (malformed, schema violations, over a limit): the file must change."""

    def __init__(self, message: str, status: int, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.errors = errors or []
        """The problem details' `errors`: `{path, message}` with paths such as `$.traces[3].query`."""


class ServerUnreachable(ClientError):
    """No HTTP answer from the service at all: connection refused, timeout, name resolution."""


class BadAnswer(ClientError):
    """The service answered without an error status, but not with the JSON its API promises for the call (an HTML
    page from a proxy or a wrong base URL, or an object of another shape): nothing it said can be trusted."""


class RagpulseSDKError(ClientError):
    """A `ragpulse.sdk` helper call failed: an error status (after retries), or no answer at all (`status` None).

    Defined here, in the one hierarchy, because this module imports nothing heavy; `ragpulse.sdk` re-exports it."""

    def __init__(self, message: str, status: int | None = None, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message, status)
        self.errors = errors or []
        """The problem details' `errors`: `{path, message}`, e.g. `$.traces[3].query`; empty when none were sent."""


class TraceFileError(RagpulseError):
    """`ragpulse eval`'s trace file cannot be read, is not valid JSON/JSONL, or holds no traces."""


class GateConfigError(RagpulseError):
    """`ragpulse gate`'s config cannot be read, is not TOML, or breaks the gate config's schema."""


class OutputFileError(RagpulseError):
    """A command's output file (`eval --html`, `report --html`, `gate --junit`) cannot be written; the message names
    the option and the path."""


class DatasetMismatch(RagpulseError):
    """`ragpulse gate` refuses to rule: the candidate and the baseline ran different dataset versions (or different
    items), so a change would measure the dataset as much as the system (`[baseline] dataset_mismatch = "refuse"`)."""


class HeuristicEvidence(RagpulseError):
    """`ragpulse gate` refuses to rule: a judged metric it would hold comes from the offline heuristic, whose accuracy
    on the user's data nothing has measured (the config's top-level `allow_heuristic = true` accepts it)."""
class JudgingRefused(RagpulseError):
    """`ragpulse gate` refuses to rule on judged metrics: the two sides were judged differently (`[baseline]
    judge_mismatch = "refuse"`), or a side judged too few of its traces for a judged metric the config names."""


class Interrupted(RagpulseError):
    """`ragpulse eval` or `gate` was interrupted (Ctrl-C); `job_ids` are the jobs it had created, which run on."""

    def __init__(self, job_ids: list[str], in_flight: bool = False) -> None:
        super().__init__(f"interrupted after creating {len(job_ids)} job(s)")
        self.job_ids = job_ids
        self.in_flight = in_flight
        """A POST was in flight: its job may exist, its id unknown."""


class SpansInvalid(RagpulseError):
    """An OpenTelemetry trace's spans cannot make a ragpulse trace (a non-finite count, JSON nested past the limit,
    no spans left to read); the hand-over records it `invalid` with this reason and goes on."""
