"""Settings: the environment is read once into one object that is passed down."""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import logging
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

from ragpulse.config import defaults
from ragpulse.config.api_keys import parse_key_specs
from ragpulse.config.prices import parse_prices
from ragpulse.exceptions import ConfigError
from ragpulse.config.callback_allowlist import parse_entry

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """Runtime configuration of the API, the workers and `ragpulse up`."""

    redis_url: str = defaults.REDIS_URL
    """REDIS_URL: the Redis holding queues, traces and results."""

    host: str = defaults.DEFAULT_HOST
    """RAGPULSE_HOST: address the API binds to (default loopback)."""

    port: int = defaults.DEFAULT_PORT
    """RAGPULSE_PORT: port the API listens on (default 8080; 1 to 65535)."""

    data_dir: Path | None = None
    """RAGPULSE_DATA_DIR: where `ragpulse up` keeps its private Redis's data (default: $XDG_DATA_HOME/ragpulse, else
    the platform's data directory; see ragpulse.ops.data_dir). Not used with REDIS_URL, nor by the API or workers."""

    api_key_digests: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """RAGPULSE_API_KEYS / RAGPULSE_API_KEYS_FILE: `tenant:key` entries, kept only as SHA-256 digest -> tenant."""

    allow_open: bool = False
    """RAGPULSE_ALLOW_OPEN=1: serve without API keys on a non-loopback address (default refused)."""

    max_body_bytes: int = defaults.MAX_BODY_BYTES
    """RAGPULSE_MAX_BODY_BYTES: largest request body accepted (default 32 MiB)."""

    max_traces: int = defaults.MAX_TRACES_PER_BATCH
    """RAGPULSE_MAX_TRACES: largest batch accepted (default 10,000)."""

    tenant_traces_per_second: int = defaults.TENANT_TRACES_PER_SECOND
    """RAGPULSE_TENANT_TRACES_PER_SECOND: traces a second each tenant may post, shared by every API replica through
    Redis (0 = no limit); over it, POST /v1/batches answers 429 with Retry-After (default 1000)."""

    tenant_traces_burst: int = defaults.TENANT_TRACES_BURST
    """RAGPULSE_TENANT_TRACES_BURST: traces a tenant may post at once above that rate (default 20,000; at least
    RAGPULSE_MAX_TRACES)."""

    result_ttl_seconds: int = defaults.RESULT_TTL_SECONDS
    """RAGPULSE_RESULT_TTL_SECONDS: lifetime of a job's data in Redis (default 7 days)."""

    online_result_ttl_seconds: int = defaults.ONLINE_RESULT_TTL_SECONDS
    """RAGPULSE_ONLINE_RESULT_TTL_SECONDS: lifetime of a sampled online trace's record (default 1 day)."""

    online_max_backlog: int = defaults.ONLINE_MAX_BACKLOG
    """RAGPULSE_ONLINE_MAX_BACKLOG: unprocessed posts the online stream holds at most; beyond it POST /v1/traces
    answers 503 with Retry-After (default 200,000)."""

    otlp_settle_seconds: float = defaults.OTLP_SETTLE_SECONDS
    """RAGPULSE_OTLP_SETTLE_SECONDS: an OpenTelemetry trace whose root span has arrived is assembled this long after
    its latest export (default 2)."""

    otlp_max_wait_seconds: float = defaults.OTLP_MAX_WAIT_SECONDS
    """RAGPULSE_OTLP_MAX_WAIT_SECONDS: an OpenTelemetry trace is assembled at most this long after its first span,
    root or not (default 30: above the OpenTelemetry SDK's 5 s batch delay)."""

    otlp_max_spans_per_trace: int = defaults.OTLP_MAX_SPANS_PER_TRACE
    """RAGPULSE_OTLP_MAX_SPANS_PER_TRACE: spans buffered per OpenTelemetry trace; more are refused and counted
    (default 1,000)."""

    otlp_max_trace_bytes: int = defaults.OTLP_MAX_TRACE_BYTES
    """RAGPULSE_OTLP_MAX_TRACE_BYTES: bytes of spans buffered per OpenTelemetry trace; spans past it are refused
    (partial success) and counted (default 16 MiB)."""

    otlp_max_attribute_bytes: int = defaults.OTLP_MAX_ATTRIBUTE_BYTES
    """RAGPULSE_OTLP_MAX_ATTRIBUTE_BYTES: bytes kept of one span attribute's value; a longer string is cut, another
    longer value dropped, with a warning in the partial success (default 1 MiB)."""

    online_claim_idle_seconds: int = defaults.ONLINE_CLAIM_IDLE_SECONDS
    """RAGPULSE_ONLINE_CLAIM_IDLE_SECONDS: a post a worker took and has not finished or refreshed for this long is
    claimed by another worker (default 60)."""

    label_ttl_days: int = defaults.LABEL_TTL_DAYS
    """RAGPULSE_LABEL_TTL_DAYS: lifetime of a human label in Redis, refreshed when its trace is labelled again (default
    90)."""

    agreement_window_days: int = defaults.AGREEMENT_WINDOW_DAYS
    """RAGPULSE_AGREEMENT_WINDOW_DAYS: labels younger than this make the judge-agreement figures and gauges (default
    30; at most RAGPULSE_LABEL_TTL_DAYS)."""

    review_text_ttl_seconds: int = defaults.REVIEW_TEXT_TTL_SECONDS
    """RAGPULSE_REVIEW_TEXT_TTL_SECONDS: how long a judged online trace the review design can pick keeps its text and
    verdicts for review (default 7 days)."""

    review_sample_rate: float = defaults.REVIEW_SAMPLE_RATE
    """RAGPULSE_REVIEW_SAMPLE_RATE: q, the share of judged traces in the uniform estimation pool (default 0.1)."""

    chunk_size: int = defaults.CHUNK_SIZE
    """RAGPULSE_CHUNK_SIZE: traces per worker job (default 500)."""

    queue_prefix: str = defaults.QUEUE_PREFIX
    """RAGPULSE_QUEUE: prefix of the two RQ queues, `<prefix>-online` and `<prefix>-batch` (default ragpulse)."""

    judge_rpm: int = defaults.JUDGE_RPM
    """RAGPULSE_JUDGE_RPM: judge requests per window shared by all workers, per model (0 = unlimited)."""

    judge_itpm: int = defaults.JUDGE_ITPM
    """RAGPULSE_JUDGE_ITPM: judge input tokens per window, shared (0 = unlimited)."""

    judge_otpm: int = defaults.JUDGE_OTPM
    """RAGPULSE_JUDGE_OTPM: judge output tokens per window, shared (0 = unlimited)."""

    judge_rate_window_seconds: int = defaults.JUDGE_RATE_WINDOW_SECONDS
    """RAGPULSE_JUDGE_RATE_WINDOW_SECONDS: the window of the three limits above (default 60, as Anthropic's)."""

    judge_max_answer_chars: int = defaults.JUDGE_MAX_ANSWER_CHARS
    """RAGPULSE_JUDGE_MAX_ANSWER_CHARS: characters of an answer the judge sees (default 10,000)."""

    judge_max_doc_chars: int = defaults.JUDGE_MAX_DOC_CHARS
    """RAGPULSE_JUDGE_MAX_DOC_CHARS: characters of each retrieved document the judge sees (default 20,000)."""

    judge_max_context_chars: int = defaults.JUDGE_MAX_CONTEXT_CHARS
    """RAGPULSE_JUDGE_MAX_CONTEXT_CHARS: characters of all of a trace's documents together the judge sees (default
    100,000). A trace cut by any of the three is judged on what is left and flagged (`judge_input_truncated`)."""

    judge_max_history_turns: int = defaults.JUDGE_MAX_HISTORY_TURNS
    """RAGPULSE_JUDGE_MAX_HISTORY_TURNS: earlier turns of a conversation the judge sees, the latest (default 12)."""

    judge_max_history_chars: int = defaults.JUDGE_MAX_HISTORY_CHARS
    """RAGPULSE_JUDGE_MAX_HISTORY_CHARS: characters of those turns together the judge sees (default 12,000)."""

    judge_max_session_evidence_chars: int = defaults.JUDGE_MAX_SESSION_EVIDENCE_CHARS
    """RAGPULSE_JUDGE_MAX_SESSION_EVIDENCE_CHARS: characters of a trace's session evidence together the judge sees
    (default 40,000). Cut history or session evidence is flagged like the rest (`judge_input_truncated`)."""

    judge_concurrency: int = defaults.JUDGE_CONCURRENCY
    """RAGPULSE_JUDGE_CONCURRENCY: judge calls in flight at once inside one worker process (default 8, 1 to 1,024)."""

    judge_prices: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=lambda: parse_prices(None))
    """RAGPULSE_JUDGE_PRICES: JSON {model: [usd_per_mtok_in, usd_per_mtok_out]} over built-in list prices."""

    tenant_daily_budget_usd: float | None = None
    """RAGPULSE_TENANT_DAILY_BUDGET_USD: judge spend cap per tenant per UTC day (default none)."""

    lease_seconds: int = defaults.LEASE_SECONDS
    """RAGPULSE_LEASE_SECONDS: a chunk whose worker stops renewing its lease this long is requeued (default 30)."""

    apps: frozenset[str] = defaults.APPS
    """RAGPULSE_APPS: comma-separated app names that get their own `app` label in Prometheus; others are `other`."""

    metrics_token: str | None = None
    """RAGPULSE_METRICS_TOKEN / RAGPULSE_METRICS_TOKEN_FILE: the bearer token GET /metrics then requires (401
    without it); unset, /metrics is served to anyone who can reach the port."""

    default_sample_rate: float = defaults.SAMPLE_RATE
    """RAGPULSE_SAMPLE_RATE: judge sample rate of production traces for apps without a stored policy (default 1)."""

    max_apps_per_tenant: int = defaults.MAX_APPS_PER_TENANT
    """RAGPULSE_MAX_APPS_PER_TENANT: stored sampling policies per tenant (bounds Redis growth)."""

    datasets_per_tenant: int = defaults.DATASETS_PER_TENANT
    """RAGPULSE_DATASETS_PER_TENANT: datasets a tenant may hold (default 100). Datasets persist without a TTL; this
    and the two settings below bound them."""

    dataset_versions_max: int = defaults.DATASET_VERSIONS_MAX
    """RAGPULSE_DATASET_VERSIONS_MAX: versions one dataset may hold (default 100); a push beyond it is 409."""

    dataset_items_per_tenant: int = defaults.DATASET_ITEMS_PER_TENANT
    """RAGPULSE_DATASET_ITEMS_PER_TENANT: items all of a tenant's dataset versions may hold together (default
    250,000, about 135 MB of Redis at 540 bytes an item); a push beyond it is 409."""

    review_session_ttl_seconds: int = defaults.REVIEW_SESSION_TTL_SECONDS
    """RAGPULSE_REVIEW_SESSION_TTL_SECONDS: how long a review-page login lasts, from login (default 8 hours)."""

    review_max_sessions: int = defaults.REVIEW_MAX_SESSIONS
    """RAGPULSE_REVIEW_MAX_SESSIONS: review-page sessions a tenant holds at once; more logins end the oldest
    (default 100)."""

    callback_allowlist: tuple[str, ...] = ()
    """RAGPULSE_CALLBACK_ALLOWLIST: comma-separated `host`, `host:port`, `*.domain`, an IP or `IP:port` (IPv6 in
    brackets: `[::1]:8080`) a callback may target; a URL without a port has its scheme's default (443, 80)."""

    callback_secret: str | None = None
    """RAGPULSE_CALLBACK_SECRET: HMAC-SHA256 key signing callbacks; callbacks are refused without it."""

    callback_allow_http: bool = False
    """RAGPULSE_CALLBACK_ALLOW_HTTP=1: accept http:// callback URLs (default https only)."""

    callback_retry_seconds: tuple[int, ...] = defaults.CALLBACK_RETRY_SECONDS
    """RAGPULSE_CALLBACK_RETRY_SECONDS: waits before each retry of a failed callback delivery."""

    @functools.cached_property
    def queues(self) -> tuple[str, str]:
        """(online, batch) queue names, in the priority order workers listen to them."""
        return f"{self.queue_prefix}-online", f"{self.queue_prefix}-batch"

    default_judge: str = defaults.JUDGE
    """RAGPULSE_JUDGE: judge used when a batch names none (none, heuristic, anthropic, openai): `anthropic` when
    ANTHROPIC_API_KEY is set, else `none` (generation metrics not judged)."""

    judge_model: str = defaults.JUDGE_MODEL
    """RAGPULSE_JUDGE_MODEL: Anthropic model that judges (default claude-sonnet-4-6)."""

    judge_max_tokens: int = defaults.JUDGE_MAX_TOKENS
    """RAGPULSE_JUDGE_MAX_TOKENS: output budget of one judge call (default 4096)."""

    judge_timeout_seconds: float = defaults.JUDGE_TIMEOUT_SECONDS
    """RAGPULSE_JUDGE_TIMEOUT_SECONDS: timeout of one judge HTTP call (default 60)."""

    judge_max_retries: int = defaults.JUDGE_MAX_RETRIES
    """RAGPULSE_JUDGE_MAX_RETRIES: SDK retries of 429/529/5xx/timeouts, with backoff honouring retry-after (default 4)."""

    pairwise_max_pairs: int = defaults.PAIRWISE_MAX_PAIRS
    """RAGPULSE_PAIRWISE_MAX_PAIRS: matched items a pairwise A/B run judges at most, each in both orders (default 200;
    at most 10,000); the others are counted as not judged."""

    pairwise_ttl_seconds: int = defaults.PAIRWISE_TTL_SECONDS
    """RAGPULSE_PAIRWISE_TTL_SECONDS: lifetime of a pairwise run and its result in Redis (default 7 days)."""

    batch_retry: str = defaults.BATCH_RETRY
    """RAGPULSE_BATCH_RETRY: a batch-delivery request that expired or errored is sent once more through the
    interactive API (`interactive`, the default) or kept as the trace's judge error (`none`)."""

    batch_poll_min_seconds: float = defaults.BATCH_POLL_MIN_SECONDS
    """RAGPULSE_BATCH_POLL_MIN_SECONDS: first wait before a provider batch is polled, doubled after each poll that
    finds it running (default 5)."""

    batch_poll_max_seconds: float = defaults.BATCH_POLL_MAX_SECONDS
    """RAGPULSE_BATCH_POLL_MAX_SECONDS: longest wait between two polls of a provider batch (default 300)."""

    judge_temperature: float | None = defaults.JUDGE_TEMPERATURE
    """RAGPULSE_JUDGE_TEMPERATURE: sampling temperature of the judge (default 0); `none` omits it for models that reject it."""

    anthropic_credentials: bool = False
    """ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN is set (the anthropic SDK reads them itself): without either, a
    batch naming the `anthropic` judge is refused at submit (422 naming $.options.judge)."""

    judge_base_url: str | None = None
    """RAGPULSE_JUDGE_BASE_URL: gateway or test server for the judge; else the SDK's ANTHROPIC_BASE_URL applies."""

    openai_base_url: str | None = None
    """RAGPULSE_OPENAI_BASE_URL: the OpenAI-compatible server the `openai` judge calls, up to `/v1` (vLLM
    `http://host:8000/v1`, Ollama `http://localhost:11434/v1`, `https://api.openai.com/v1`). Unset, the service
    still starts, and traces given to the `openai` judge end judge_error "not configured"."""

    openai_api_key: str | None = None
    """RAGPULSE_OPENAI_API_KEY / RAGPULSE_OPENAI_API_KEY_FILE: bearer key of that server (default none: servers
    without authentication need none). OPENAI_API_KEY is never read, so an OpenAI key cannot leak to another host."""

    openai_model: str | None = None
    """RAGPULSE_OPENAI_MODEL: the model the `openai` judge names (e.g. qwen2.5:14b); required with the base URL."""

    openai_batch: bool = False
    """RAGPULSE_OPENAI_BATCH: the OpenAI-compatible server offers OpenAI's Batch API (files and batches; api.openai.com
    does, most self-hosted servers do not), so `options.delivery` batch can use it with the `openai` judge (default
    off: such batches are refused with 422)."""

    openai_structured: str = defaults.OPENAI_STRUCTURED
    """RAGPULSE_OPENAI_STRUCTURED: `tools` (a forced function call), `json_schema` (response_format) or `auto`
    (default: tools, falling back to json_schema once per process when the server refuses tools)."""

    idempotency_ttl_seconds: int = defaults.IDEMPOTENCY_TTL_SECONDS
    """RAGPULSE_IDEMPOTENCY_TTL_SECONDS: how long the answer to a POST /v1/traces or /v1/batches sent with an
    `Idempotency-Key` is kept and replayed to a retry with the same key, instead of counting the post again (default
    1 day)."""

    idempotency_max_keys: int = defaults.IDEMPOTENCY_MAX_KEYS
    """RAGPULSE_IDEMPOTENCY_MAX_KEYS: Idempotency-Keys kept per tenant; beyond it the oldest are forgotten first
    (default 100,000)."""

    body_read_timeout_seconds: float = defaults.BODY_READ_TIMEOUT_SECONDS
    """RAGPULSE_BODY_READ_TIMEOUT_SECONDS: how long a request has to deliver its whole body after its headers; past
    it the API answers 408 and closes the connection (default 30)."""

    max_header_bytes: int = defaults.MAX_HEADER_BYTES
    """RAGPULSE_MAX_HEADER_BYTES: the largest request line plus headers the API reads; past it the API answers 431
    and closes the connection (default 65,536)."""

    head_timeout_seconds: float = defaults.HEAD_TIMEOUT_SECONDS
    """RAGPULSE_HEAD_TIMEOUT_SECONDS: how long a connection has to send a complete request head, from its opening or
    the end of the previous response; past it the API answers 408 and closes the connection, or closes it unanswered
    if it sent nothing (default 10)."""

    max_connections: int = defaults.MAX_CONNECTIONS
    """RAGPULSE_MAX_CONNECTIONS: connections the API holds open at once; a further one is answered 503 with
    Retry-After at once, unread, and closed (default 1,024)."""

    max_connections_per_address: int = defaults.MAX_CONNECTIONS_PER_ADDRESS
    """RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS: connections one client address holds open at once, answered like the
    above past it (default 256; behind a reverse proxy every client has the proxy's address)."""

    max_inflight_body_bytes: int = defaults.MAX_INFLIGHT_BODY_BYTES
    """RAGPULSE_MAX_INFLIGHT_BODY_BYTES: bytes of request bodies the API holds at once, from the first read of a body
    to the end of its response; a body past it is answered 503 with Retry-After unread, one larger than it alone 413
    (default 128 MiB)."""

    worker_redis_outage_seconds: float = defaults.WORKER_REDIS_OUTAGE_SECONDS
    """RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS: how long a worker's Redis commands retry through an outage before they
    fail, and how long a chunk keeps the results and judge calls it could not record, waiting for Redis (default 60)."""

    def __post_init__(self) -> None:
        if self.agreement_window_days > self.label_ttl_days:
            raise ConfigError(f"RAGPULSE_AGREEMENT_WINDOW_DAYS ({self.agreement_window_days}) must be at most "
                              f"RAGPULSE_LABEL_TTL_DAYS ({self.label_ttl_days}): older labels are gone")
        if self.tenant_traces_per_second and self.tenant_traces_burst < self.max_traces:
            raise ConfigError(f"RAGPULSE_TENANT_TRACES_BURST ({self.tenant_traces_burst}) must be at least "
                              f"RAGPULSE_MAX_TRACES ({self.max_traces}): a full batch could never be accepted")

    @property
    def label_ttl_seconds(self) -> int:
        """RAGPULSE_LABEL_TTL_DAYS in seconds."""
        return self.label_ttl_days * 86400

    @functools.cached_property
    def tenants(self) -> frozenset[str]:
        """Tenants that get their own `tenant` label in Prometheus: those of the API keys (`default` when the API
        serves open); any other is `other`. Workers need the same keys to label what they count."""
        return frozenset(self.api_key_digests.values()) or frozenset({defaults.OPEN_TENANT})

    @property
    def open_access(self) -> bool:
        """True when no API keys are configured: every request acts as tenant `default`."""
        return not self.api_key_digests

    def check_safe_to_serve(self) -> None:
        """Refuse to serve without keys on a non-loopback address unless explicitly allowed."""
        if self.open_access and not _is_loopback(self.host) and not self.allow_open:
            raise ConfigError(
                f"refusing to serve on {self.host} without API keys: set RAGPULSE_API_KEYS or "
                "RAGPULSE_API_KEYS_FILE, bind to 127.0.0.1, or set RAGPULSE_ALLOW_OPEN=1 to accept the risk"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Build settings from environment variables; keyword overrides win."""
        env = os.environ if env is None else env
        values: dict[str, object] = {
            "redis_url": env.get("REDIS_URL", cls.redis_url),
            "host": env.get("RAGPULSE_HOST", cls.host),
            "port": _int(env, "RAGPULSE_PORT", cls.port, most=defaults.MAX_PORT),
            "data_dir": _path(env, "RAGPULSE_DATA_DIR"),
            "anthropic_credentials": bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN")),
            "api_key_digests": _api_keys(env),
            "allow_open": env.get("RAGPULSE_ALLOW_OPEN", "").lower() in {"1", "true", "yes"},
            "max_body_bytes": _int(env, "RAGPULSE_MAX_BODY_BYTES", cls.max_body_bytes),
            "max_traces": _int(env, "RAGPULSE_MAX_TRACES", cls.max_traces),
            "tenant_traces_per_second": _int(env, "RAGPULSE_TENANT_TRACES_PER_SECOND", cls.tenant_traces_per_second,
                                             allow_zero=True),
            "tenant_traces_burst": _int(env, "RAGPULSE_TENANT_TRACES_BURST", cls.tenant_traces_burst),
            "result_ttl_seconds": _int(env, "RAGPULSE_RESULT_TTL_SECONDS", cls.result_ttl_seconds),
            "chunk_size": _int(env, "RAGPULSE_CHUNK_SIZE", cls.chunk_size),
            "label_ttl_days": _int(env, "RAGPULSE_LABEL_TTL_DAYS", cls.label_ttl_days),
            "agreement_window_days": _int(env, "RAGPULSE_AGREEMENT_WINDOW_DAYS", cls.agreement_window_days),
            "review_text_ttl_seconds": _int(env, "RAGPULSE_REVIEW_TEXT_TTL_SECONDS", cls.review_text_ttl_seconds),
            "review_sample_rate": _rate(env, "RAGPULSE_REVIEW_SAMPLE_RATE", cls.review_sample_rate),
            "online_result_ttl_seconds": _int(env, "RAGPULSE_ONLINE_RESULT_TTL_SECONDS", cls.online_result_ttl_seconds),
            "online_max_backlog": _int(env, "RAGPULSE_ONLINE_MAX_BACKLOG", cls.online_max_backlog),
            "online_claim_idle_seconds": _int(env, "RAGPULSE_ONLINE_CLAIM_IDLE_SECONDS", cls.online_claim_idle_seconds),
            "otlp_settle_seconds": _float(env, "RAGPULSE_OTLP_SETTLE_SECONDS", cls.otlp_settle_seconds),
            "otlp_max_wait_seconds": _float(env, "RAGPULSE_OTLP_MAX_WAIT_SECONDS", cls.otlp_max_wait_seconds),
            "otlp_max_spans_per_trace": _int(env, "RAGPULSE_OTLP_MAX_SPANS_PER_TRACE", cls.otlp_max_spans_per_trace),
            "otlp_max_trace_bytes": _int(env, "RAGPULSE_OTLP_MAX_TRACE_BYTES", cls.otlp_max_trace_bytes),
            "otlp_max_attribute_bytes": _int(env, "RAGPULSE_OTLP_MAX_ATTRIBUTE_BYTES", cls.otlp_max_attribute_bytes),
            "queue_prefix": env.get("RAGPULSE_QUEUE", cls.queue_prefix),
            "judge_rpm": _int(env, "RAGPULSE_JUDGE_RPM", cls.judge_rpm, allow_zero=True),
            "judge_itpm": _int(env, "RAGPULSE_JUDGE_ITPM", cls.judge_itpm, allow_zero=True),
            "judge_otpm": _int(env, "RAGPULSE_JUDGE_OTPM", cls.judge_otpm, allow_zero=True),
            "judge_rate_window_seconds": _int(env, "RAGPULSE_JUDGE_RATE_WINDOW_SECONDS", cls.judge_rate_window_seconds),
            "judge_concurrency": _int(env, "RAGPULSE_JUDGE_CONCURRENCY", cls.judge_concurrency,
                                      most=defaults.MAX_JUDGE_CONCURRENCY),
            "judge_max_answer_chars": _int(env, "RAGPULSE_JUDGE_MAX_ANSWER_CHARS", cls.judge_max_answer_chars),
            "judge_max_doc_chars": _int(env, "RAGPULSE_JUDGE_MAX_DOC_CHARS", cls.judge_max_doc_chars),
            "judge_max_context_chars": _int(env, "RAGPULSE_JUDGE_MAX_CONTEXT_CHARS", cls.judge_max_context_chars),
            "judge_max_history_turns": _int(env, "RAGPULSE_JUDGE_MAX_HISTORY_TURNS", cls.judge_max_history_turns),
            "judge_max_history_chars": _int(env, "RAGPULSE_JUDGE_MAX_HISTORY_CHARS", cls.judge_max_history_chars),
            "judge_max_session_evidence_chars": _int(env, "RAGPULSE_JUDGE_MAX_SESSION_EVIDENCE_CHARS",
                                                     cls.judge_max_session_evidence_chars),
            "judge_prices": parse_prices(env.get("RAGPULSE_JUDGE_PRICES")),
            "tenant_daily_budget_usd": _float(env, "RAGPULSE_TENANT_DAILY_BUDGET_USD"),
            "lease_seconds": _int(env, "RAGPULSE_LEASE_SECONDS", cls.lease_seconds),
            "apps": frozenset(_list(env, "RAGPULSE_APPS", cls.apps)),
            "metrics_token": _secret(env, "RAGPULSE_METRICS_TOKEN"),
            "default_sample_rate": _rate(env, "RAGPULSE_SAMPLE_RATE", cls.default_sample_rate),
            "max_apps_per_tenant": _int(env, "RAGPULSE_MAX_APPS_PER_TENANT", cls.max_apps_per_tenant),
            "datasets_per_tenant": _int(env, "RAGPULSE_DATASETS_PER_TENANT", cls.datasets_per_tenant),
            "dataset_versions_max": _int(env, "RAGPULSE_DATASET_VERSIONS_MAX", cls.dataset_versions_max),
            "dataset_items_per_tenant": _int(env, "RAGPULSE_DATASET_ITEMS_PER_TENANT", cls.dataset_items_per_tenant),
            "review_session_ttl_seconds": _int(env, "RAGPULSE_REVIEW_SESSION_TTL_SECONDS",
                                               cls.review_session_ttl_seconds),
            "review_max_sessions": _int(env, "RAGPULSE_REVIEW_MAX_SESSIONS", cls.review_max_sessions),
            "callback_allowlist": _allowlist(env),
            "callback_secret": env.get("RAGPULSE_CALLBACK_SECRET") or None,
            "callback_retry_seconds": tuple(int(x) for x in _list(env, "RAGPULSE_CALLBACK_RETRY_SECONDS",
                                                                  cls.callback_retry_seconds)),
            "callback_allow_http": env.get("RAGPULSE_CALLBACK_ALLOW_HTTP", "").lower() in {"1", "true", "yes"},
            "default_judge": _judge_name(env),
            "judge_model": env.get("RAGPULSE_JUDGE_MODEL", cls.judge_model),
            "judge_max_tokens": _int(env, "RAGPULSE_JUDGE_MAX_TOKENS", cls.judge_max_tokens),
            "judge_timeout_seconds": _float(env, "RAGPULSE_JUDGE_TIMEOUT_SECONDS", cls.judge_timeout_seconds),
            "judge_max_retries": _int(env, "RAGPULSE_JUDGE_MAX_RETRIES", cls.judge_max_retries),
            "pairwise_max_pairs": _int(env, "RAGPULSE_PAIRWISE_MAX_PAIRS", cls.pairwise_max_pairs,
                                       most=defaults.PAIRWISE_MAX_PAIRS_LIMIT),
            "pairwise_ttl_seconds": _int(env, "RAGPULSE_PAIRWISE_TTL_SECONDS", cls.pairwise_ttl_seconds),
            "batch_retry": _choice(env, "RAGPULSE_BATCH_RETRY", ("interactive", "none"), cls.batch_retry),
            "batch_poll_min_seconds": _float(env, "RAGPULSE_BATCH_POLL_MIN_SECONDS", cls.batch_poll_min_seconds),
            "batch_poll_max_seconds": _float(env, "RAGPULSE_BATCH_POLL_MAX_SECONDS", cls.batch_poll_max_seconds),
            "judge_base_url": env.get("RAGPULSE_JUDGE_BASE_URL") or None,
            "judge_temperature": _temperature(env),
            "openai_base_url": _base_url(env, "RAGPULSE_OPENAI_BASE_URL"),
            "openai_api_key": _secret(env, "RAGPULSE_OPENAI_API_KEY"),
            "openai_model": env.get("RAGPULSE_OPENAI_MODEL") or None,
            "openai_batch": env.get("RAGPULSE_OPENAI_BATCH", "").lower() in {"1", "true", "yes"},
            "openai_structured": _choice(env, "RAGPULSE_OPENAI_STRUCTURED", defaults.OPENAI_STRUCTURED_MODES,
                                         cls.openai_structured),
            "idempotency_ttl_seconds": _int(env, "RAGPULSE_IDEMPOTENCY_TTL_SECONDS", cls.idempotency_ttl_seconds),
            "idempotency_max_keys": _int(env, "RAGPULSE_IDEMPOTENCY_MAX_KEYS", cls.idempotency_max_keys),
            "body_read_timeout_seconds": _float(env, "RAGPULSE_BODY_READ_TIMEOUT_SECONDS",
                                                cls.body_read_timeout_seconds),
            "max_header_bytes": _int(env, "RAGPULSE_MAX_HEADER_BYTES", cls.max_header_bytes),
            "head_timeout_seconds": _float(env, "RAGPULSE_HEAD_TIMEOUT_SECONDS", cls.head_timeout_seconds),
            "max_connections": _int(env, "RAGPULSE_MAX_CONNECTIONS", cls.max_connections),
            "max_connections_per_address": _int(env, "RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS",
                                                cls.max_connections_per_address),
            "max_inflight_body_bytes": _int(env, "RAGPULSE_MAX_INFLIGHT_BODY_BYTES", cls.max_inflight_body_bytes),
            "worker_redis_outage_seconds": _float(env, "RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS",
                                                  cls.worker_redis_outage_seconds),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def log_level(env: Mapping[str, str] | None = None, default: str = "INFO") -> str:
    """RAGPULSE_LOG_LEVEL: the log level of `ragpulse up` and of worker processes (RQ's loggers included)."""
    env = os.environ if env is None else env
    raw = env.get("RAGPULSE_LOG_LEVEL") or default
    if raw.upper() not in LOG_LEVELS:
        raise ConfigError(f"RAGPULSE_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {raw!r}")
    return raw.upper()


def _int(env: Mapping[str, str], name: str, default: int, allow_zero: bool = False, most: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{name} must be positive, got {value}")
    if most is not None and value > most:
        raise ConfigError(f"{name} must be at most {most:,}, got {value:,}")
    return value


def _rate(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, str(default))
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number from 0 to 1, got {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name} must be from 0 to 1, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float | None = None) -> float | None:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value


def _judge_name(env: Mapping[str, str]) -> str:
    keyed = bool(env.get("ANTHROPIC_API_KEY"))
    name = env.get("RAGPULSE_JUDGE") or (defaults.JUDGE_WITH_API_KEY if keyed else defaults.JUDGE)
    if name in defaults.JUDGE_ALIASES:
        log.warning("RAGPULSE_JUDGE=%s is deprecated: it is now called %s", name, defaults.JUDGE_ALIASES[name])
        name = defaults.JUDGE_ALIASES[name]
    if name not in defaults.JUDGE_NAMES:
        raise ConfigError(f"RAGPULSE_JUDGE must be one of {', '.join(defaults.JUDGE_NAMES)}, got {name!r}")
    return name


def _path(env: Mapping[str, str], name: str) -> Path | None:
    """An absolute path (`~` expanded, a relative one taken from the working directory), or None when unset."""
    raw = env.get(name)
    return Path(raw).expanduser().absolute() if raw else None


def _base_url(env: Mapping[str, str], name: str) -> str | None:
    """An http(s) URL with a host, or None when unset; anything else would fail every judge call later."""
    raw = env.get(name) or None
    if raw is None:
        return None
    parts = urllib.parse.urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{name} must be an http:// or https:// URL, got {raw!r}")
    return raw


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = env.get(name) or default
    if raw not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _list(env: Mapping[str, str], name: str, default: Iterable[object]) -> tuple[str, ...]:
    """A comma-separated variable's non-blank items; `default` when the variable is not set (set but empty: none)."""
    raw = env.get(name)
    if raw is None:
        return tuple(str(item) for item in default)
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _allowlist(env: Mapping[str, str]) -> tuple[str, ...]:
    """RAGPULSE_CALLBACK_ALLOWLIST, every entry checked: a malformed one would silently admit nothing."""
    entries = _list(env, "RAGPULSE_CALLBACK_ALLOWLIST", Settings.callback_allowlist)
    for entry in entries:
        try:
            parse_entry(entry)
        except ValueError as exc:
            raise ConfigError(f"RAGPULSE_CALLBACK_ALLOWLIST: {exc}") from None
    return entries


def _temperature(env: Mapping[str, str]) -> float | None:
    raw = env.get("RAGPULSE_JUDGE_TEMPERATURE", str(defaults.JUDGE_TEMPERATURE))
    if raw.lower() == "none":
        return None
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"RAGPULSE_JUDGE_TEMPERATURE must be a number or 'none', got {raw!r}") from None


def _secret(env: Mapping[str, str], name: str) -> str | None:
    """A secret given as NAME, or read from the file NAME_FILE names (surrounding whitespace stripped)."""
    if env.get(name):
        return env[name]
    path = env.get(f"{name}_FILE")
    if not path:
        return None
    try:
        value = Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"{name}_FILE: cannot read {path}: {exc.strerror}") from None
    if not value:
        raise ConfigError(f"{name}_FILE: {path} is empty")
    return value


def _api_keys(env: Mapping[str, str]) -> dict[str, str]:
    digests = parse_key_specs(env.get("RAGPULSE_API_KEYS", ""), "RAGPULSE_API_KEYS")
    path = env.get("RAGPULSE_API_KEYS_FILE")
    if path:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"RAGPULSE_API_KEYS_FILE: cannot read {path}: {exc.strerror}") from None
        digests.update(parse_key_specs(text, "RAGPULSE_API_KEYS_FILE"))
    return digests


def is_loopback_name(host: str) -> bool:
    """True for `localhost` and a loopback address (`127.0.0.1`, `::1`, also in brackets)."""
    return _is_loopback(host[1:-1] if host.startswith("[") and host.endswith("]") else host)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
