"""Every Redis key ragpulse writes, in one place. Every one expires: a job's with the job
(settings.result_ttl_seconds), the others after the time their docstring gives."""

PREFIX = "ragpulse"


def job(job_id: str) -> str:
    """Hash: tenant, status, timestamps, progress counters, options and warnings of a job."""
    return f"{PREFIX}:job:{job_id}"


def job_chunk(job_id: str, chunk: int) -> str:
    """String: msgpack list of the traces of one chunk."""
    return f"{PREFIX}:job:{job_id}:chunk:{chunk}"


def job_results(job_id: str) -> str:
    """Hash: trace index -> msgpack TraceResult. Written idempotently, so a re-run chunk never double-counts."""
    return f"{PREFIX}:job:{job_id}:results"


def job_awaiting(job_id: str) -> str:
    """Hash: trace index -> msgpack TraceResult (status `awaiting_judge`) of a batch-delivery trace whose judge
    request waits on a provider batch: its retrieval metrics and checks, shown until its result is stored."""
    return f"{PREFIX}:job:{job_id}:awaiting"


def job_chunks_done(job_id: str) -> str:
    """Set: indexes of the chunks whose results are stored and counted."""
    return f"{PREFIX}:job:{job_id}:chunks_done"


def job_report(job_id: str) -> str:
    """String: JSON report, built once when the last chunk is done."""
    return f"{PREFIX}:job:{job_id}:report"



def job_calibration(job_id: str) -> str:
    """String: JSON calibration of the job's judge against human labels."""
    return f"{PREFIX}:job:{job_id}:calibration"


def judge_pause(model: str) -> str:
    """String with PX expiry: Redis-clock time (seconds) before which no worker may call this judge model (shared
    429 backoff)."""
    return f"{PREFIX}:judge:{model}:pause_until"


def job_failed(job_id: str) -> str:
    """Set: indexes of traces whose latest result is failed or judge_error."""
    return f"{PREFIX}:job:{job_id}:failed"


def job_skipped(job_id: str) -> str:
    """Set: indexes of traces skipped because a budget ran out (re-runnable)."""
    return f"{PREFIX}:job:{job_id}:skipped"


def job_chunk_states(job_id: str) -> str:
    """Hash: chunk index -> queued | started | requeued | waiting (on a provider batch) | done."""
    return f"{PREFIX}:job:{job_id}:chunk_states"


def job_lease(job_id: str, chunk: int) -> str:
    """String with a short TTL, renewed while a worker runs the chunk; its expiry means the worker died."""
    return f"{PREFIX}:job:{job_id}:lease:{chunk}"


def active_jobs() -> str:
    """Sorted set: ids of jobs not yet finalized, scored by creation time; the janitor scans it."""
    return f"{PREFIX}:jobs:active"


def tenant_jobs(tenant: str) -> str:
    """Sorted set: the tenant's job ids scored by creation time (ms); expires with the jobs (result TTL), members
    older than that are trimmed on every write, so GET /v1/jobs lists newest first without a scan."""
    return f"{PREFIX}:tenant:{tenant}:jobs"


def tenant_spend(tenant: str, day: str) -> str:
    """Hash: judge spend of a tenant on one UTC day (cost_usd, calls, tokens); expires after two days."""
    return f"{PREFIX}:spend:{tenant}:{day}"


def judge_pacer(model: str) -> str:
    """String with PX expiry: Redis-clock time of the next free request slot for this judge model."""
    return f"{PREFIX}:judge:{model}:next_slot"


def judge_token_windows() -> str:
    """Prefix of the `limits` library's sliding-window counters of judge input and output tokens, per model."""
    return f"{PREFIX}:ratelimit"


def metrics() -> str:
    """Hash: every ragpulse_* metric sample written by any process; the API's /metrics reads it."""
    return f"{PREFIX}:metrics"


def monitor_bucket(tenant: str, app: str, minute: int, environment: str = "production") -> str:
    """Hash: one minute of an app's judged-trace counts in one environment, for rolling windows; expires after 25
    hours. Production keeps the key it had before traces had an environment."""
    if environment == "production":
        return f"{PREFIX}:monitor:{tenant}:{app}:{minute}"
    return f"{PREFIX}:monitor:{tenant}:{app}:{minute}:{environment}"


def app_policy(tenant: str, app: str) -> str:
    """String: JSON sampling policy of one app of one tenant."""
    return f"{PREFIX}:policy:{tenant}:{app}"


def tenant_apps(tenant: str) -> str:
    """Set: apps of a tenant that have a stored policy (bounded by settings.max_apps_per_tenant)."""
    return f"{PREFIX}:apps:{tenant}"


def review_login_failures(address: str) -> str:
    """String: failed review-page logins from one client address in the current window; expires
    LOGIN_FAILURE_WINDOW_SECONDS after the first (store.review_sessions)."""
    return f"{PREFIX}:review:login-failures:{address}"


def review_session(digest: str) -> str:
    """String: JSON ReviewSession of one review-page login, under the SHA-256 of its cookie (the cookie itself is
    never stored); expires settings.review_session_ttl_seconds after login."""
    return f"{PREFIX}:review:session:{digest}"


def review_sessions(tenant: str) -> str:
    """Sorted set: session digests of a tenant scored by expiry (epoch seconds), so logins beyond
    settings.review_max_sessions evict the oldest; expires with its newest session."""
    return f"{PREFIX}:review:sessions:{len(tenant)}:{tenant}"


def tenant_ingest_bucket(tenant: str) -> str:
    """Hash: the tenant's ingest token bucket (`tokens` left, `at` Redis-clock ms of that count), shared by every API
    replica. Expires once it would have refilled (burst / rate seconds, plus one): a missing bucket is a full one."""
    return f"{PREFIX}:ingest:{tenant}"


def online_stream(queue: str) -> str:
    """Stream: online trace posts waiting for a worker, one entry per POST /v1/traces, read by the consumer group
    ONLINE_GROUP. An entry is deleted in the same atomic step that acknowledges and counts it, so the stream holds
    only unprocessed posts; its length is capped (settings.online_max_backlog), so it never grows without bound."""
    return f"{PREFIX}:online:{queue}"


ONLINE_GROUP = "workers"
"""The consumer group every worker reads the online stream in."""


def online_trace(tenant: str, trace_id: str) -> str:
    """String: msgpack record of one sampled (or failed) online trace; expires after settings.online_result_ttl_seconds.
    The tenant is length-prefixed: trace ids may hold ':'."""
    return f"{PREFIX}:trace:{len(tenant)}:{tenant}:{trace_id}"


def session(tenant: str, session_id: str) -> str:
    """Sorted set: the sampled turns of one online conversation (store.sessions), scored by turn index, each member a
    msgpack SessionTurn (trace id and the turn's documents, capped); at most defaults.SESSION_MAX_TURNS (the latest
    kept), expiring settings.online_result_ttl_seconds after its latest turn, as the turns' records do. The tenant is
    length-prefixed: session ids may hold ':'."""
    return f"{PREFIX}:session:{len(tenant)}:{tenant}:{session_id}"


def job_session(job_id: str, session_id: str) -> str:
    """Sorted set: the turns of one session in a batch job (store.sessions.queue_job_turns), as `session` holds them
    online; at most defaults.SESSION_MAX_TURNS; expires with the job (settings.result_ttl_seconds)."""
    return f"{PREFIX}:job:{job_id}:session:{session_id}"


def otlp_pending(queue_prefix: str) -> str:
    """Sorted set: OpenTelemetry traces waiting to be assembled (member `otlp_member`), scored by when they are due
    (their root span arrived and RAGPULSE_OTLP_SETTLE_SECONDS passed, or RAGPULSE_OTLP_MAX_WAIT_SECONDS since their
    first span). Members leave when handed over; a member's keys below expire on their own."""
    return f"{PREFIX}:otlp:{queue_prefix}:pending"


def otlp_member(tenant: str, trace_id: str) -> str:
    """A pending trace: the tenant, length-prefixed, and the 32-hex OpenTelemetry trace id."""
    return f"{len(tenant)}:{tenant}:{trace_id}"


def otlp_spans(queue_prefix: str, member: str) -> str:
    """List: msgpack SpanRecords of one pending trace, as exports brought them; expires with the trace's wait."""
    return f"{PREFIX}:otlp:{queue_prefix}:spans:{member}"


def otlp_meta(queue_prefix: str, member: str) -> str:
    """Hash: `first` (epoch seconds of the first span seen), `root` (set once the root span arrived)."""
    return f"{PREFIX}:otlp:{queue_prefix}:meta:{member}"


def otlp_done(queue_prefix: str, member: str) -> str:
    """String: set when the trace was handed over, for as long as its record lives (RAGPULSE_ONLINE_RESULT_TTL_SECONDS):
    spans arriving meanwhile are late, refused and counted, never a second hand-over."""
    return f"{PREFIX}:otlp:{queue_prefix}:done:{member}"


def trace_labels(tenant: str, job_id: str | None, trace_id: str) -> str:
    """Hash: reviewer -> msgpack Label of one trace (a batch trace under its job, an online one under none); expires
    settings.label_ttl_days after its latest label."""
    return f"{PREFIX}:labels:{len(tenant)}:{tenant}:{job_id or ''}:{trace_id}"


def app_labels(tenant: str, app: str) -> str:
    """Sorted set: the app's labelled traces (labels.refs member) scored by the Unix time of their newest label;
    at most defaults.LABELLED_TRACES_PER_APP (the oldest leave first, their labels deleted); expires
    settings.label_ttl_days after the app's latest label."""
    return f"{PREFIX}:labels:app:{len(tenant)}:{tenant}:{app}"


def labelled_apps() -> str:
    """Sorted set: every (tenant, app) with labels (`<len>:<tenant>:<app>`), scored by its newest label, which the
    /metrics scrape reads; at most defaults.LABELLED_APPS_MAX; expires settings.label_ttl_days after the latest
    label."""
    return f"{PREFIX}:labels:apps"


def content_labels(tenant: str, content: str) -> str:
    """Hash: reviewer -> msgpack Label of one judged content (TraceResult.content_key), whichever of its traces the
    label was given on; expires settings.label_ttl_days after its latest label."""
    return f"{PREFIX}:labels:content:{len(tenant)}:{tenant}:{content}"


def labelled_content(tenant: str, job_id: str | None, trace_id: str) -> str:
    """String: the app index member (labels.store) a labelled trace was labelled under, so its labels are found once
    the trace's result has expired; expires settings.label_ttl_days after its latest label."""
    return f"{PREFIX}:labels:of:{len(tenant)}:{tenant}:{job_id or ''}:{trace_id}"


def review_pool(tenant: str, app: str) -> str:
    """Sorted set: the app's judged contents the review design can pick (content keys) scored by their hash draw in
    [0, 1); at most defaults.REVIEW_POOL_CAP (the highest draws leave first); expires after the longer of
    settings.review_text_ttl_seconds and settings.result_ttl_seconds from its latest entry. Entries none of whose
    traces is left are dropped when the queue meets them."""
    return f"{PREFIX}:review:pool:{len(tenant)}:{tenant}:{app}"


def review_content(tenant: str, app: str, content: str) -> str:
    """Hash: the review design of one judged content as first judged, `q` (the share in force) and `u` (its draw):
    written once, so later share changes leave its inclusion probability alone; expires with review_refs."""
    return f"{PREFIX}:review:content:{len(tenant)}:{tenant}:{len(app)}:{app}:{content}"


def review_refs(tenant: str, app: str, content: str) -> str:
    """Sorted set: the traces of one judged content (labels.sources.TraceRef members, one per job or online trace)
    scored by when each was judged; at most defaults.REVIEW_REFS_PER_CONTENT (the oldest leave first); expires after
    the longest of the review text, result and label lifetimes from its latest entry."""
    return f"{PREFIX}:review:refs:{len(tenant)}:{tenant}:{len(app)}:{app}:{content}"


def review_copy(tenant: str, trace_id: str) -> str:
    """String: msgpack ReviewSource (query, documents and answer cut like the judge's input, the judge's verdicts) of
    one judged online trace the review design can pick; expires after settings.review_text_ttl_seconds."""
    return f"{PREFIX}:review:copy:{len(tenant)}:{tenant}:{trace_id}"


def online_ack(stream: str, nonce: str) -> str:
    """String: set by the acknowledgement `nonce` of the online `stream` when it applied its shared writes (judge
    request metrics, spend), so one sent again after a lost reply applies them once (store.scripts.ACK_POSTS);
    expires after defaults.ONLINE_ACK_MARKER_SECONDS."""
    return f"{stream}:ack:{nonce}"


def online_backlog_shares(stream: str) -> str:
    """Hash: tenant -> unprocessed posts it holds in the online `stream` (keys.online_stream), counted up in the script
    that adds a post and down in the one that deletes it; a tenant holding none has no field. A post beyond the
    tenant's share is refused (store.scripts.BACKLOG_ROOM). Expires defaults.ONLINE_SHARES_TTL_SECONDS after the latest post."""
    return f"{stream}:shares"


def idempotent_post(tenant: str, route: str, key: str) -> str:
    """Hash: the answer to a post a tenant sent to `route` (`traces`, `batches`) with an Idempotency-Key (`fp`, the
    body's SHA-256; `status`; `body`), replayed to its retries; expires after settings.idempotency_ttl_seconds, or
    sooner once the tenant has settings.idempotency_max_keys newer keys. The tenant is length-prefixed; the key, at
    most 255 visible ASCII characters, comes last."""
    return f"{PREFIX}:idempotency:{len(tenant)}:{tenant}:{route}:{key}"


def idempotency_keys(tenant: str) -> str:
    """Sorted set: a tenant's idempotent_post keys scored by when they were answered (Redis-clock seconds), which keeps
    settings.idempotency_max_keys at most (the oldest leave first, their answers deleted); expires with its newest."""
    return f"{PREFIX}:idempotency-keys:{len(tenant)}:{tenant}"


def spend_reservations(run_id: str) -> str:
    """String: the number of the last reservation of judge calls applied for one chunk run or online consumer
    (store.spend.SpendLedger.reservation), so a reservation sent again applies nothing; expires after
    defaults.COUNTED_WRITE_MARKER_SECONDS (or longer, with a longer outage budget)."""
    return f"{PREFIX}:reserved:{run_id}"


def counted_write(write_id: str) -> str:
    """String: the marker of one applied write of counted judge calls (evaluation.calls.CallObserver), so the same
    write sent again applies nothing; expires after defaults.COUNTED_WRITE_MARKER_SECONDS."""
    return f"{PREFIX}:counted:{write_id}"


# Datasets are user data meant to persist: their keys carry no TTL. They are bounded instead, per tenant, by
# settings.datasets_per_tenant, settings.dataset_versions_max and settings.dataset_items_per_tenant (store.datasets).
# Names match model.dataset.DATASET_NAME_PATTERN (no ':'); the tenant is length-prefixed.

def datasets(tenant: str) -> str:
    """Hash: dataset name -> its latest version number (the counter a push increments, in a WATCHed transaction).
    At most settings.datasets_per_tenant fields; no TTL (datasets persist)."""
    return f"{PREFIX}:datasets:{len(tenant)}:{tenant}"


def dataset_items_held(tenant: str) -> str:
    """String: how many items all the tenant's dataset versions hold together, at most
    settings.dataset_items_per_tenant; no TTL (datasets persist)."""
    return f"{PREFIX}:datasets-items:{len(tenant)}:{tenant}"


def dataset_version(tenant: str, name: str, version: int) -> str:
    """String: msgpack DatasetVersion (name, number, content hash, status, counts); written once with its items,
    only its status changes after (draft -> published). No TTL; at most settings.dataset_versions_max per dataset."""
    return f"{PREFIX}:dataset:{len(tenant)}:{tenant}:{name}:{version}"


def dataset_items(tenant: str, name: str, version: int) -> str:
    """Hash: item_id -> msgpack DatasetItem of one version, for lookup by id; written once, never changed."""
    return f"{PREFIX}:dataset:{len(tenant)}:{tenant}:{name}:{version}:items"


def dataset_order(tenant: str, name: str, version: int) -> str:
    """List: the version's item ids in push order, for paginated reading; written once, never changed."""
    return f"{PREFIX}:dataset:{len(tenant)}:{tenant}:{name}:{version}:order"


def generation(job_id: str) -> str:
    """String: JSON GenerationRecord of a dataset generation job (its tenant, status and outcome); expires with jobs
    (settings.result_ttl_seconds)."""
    return f"{PREFIX}:generation:{job_id}"


def dataset_generations(tenant: str, dataset: str) -> str:
    """Sorted set: the generation job ids of one of a tenant's datasets, scored by creation time (µs), so GET
    /v1/datasets/{name}/generations lists them newest first; expires with jobs (settings.result_ttl_seconds), and
    every write trims members past that and all but the GENERATIONS_LISTED newest."""
    return f"{PREFIX}:tenant:{tenant}:dataset:{dataset}:generations"


def generation_request(job_id: str) -> str:
    """String: msgpack GenerateRequest of a generation job (its corpus chunks and mix), deleted by the worker as it
    reads it; else expires with jobs (settings.result_ttl_seconds)."""
    return f"{PREFIX}:generation:{job_id}:request"


def tenant_generations_queued(tenant: str) -> str:
    """Hash: job id -> request bytes of the tenant's queued generation jobs (their request not read yet), so the
    API caps them (GENERATION_QUEUED_PER_TENANT, GENERATION_QUEUED_BYTES_PER_TENANT); a field whose request is gone
    is dropped at the next post. Expires with jobs (settings.result_ttl_seconds)."""
    return f"{PREFIX}:tenant:{tenant}:generations:queued"


def pairwise_run(run_id: str) -> str:
    """Hash: one pairwise A/B run (tenant, the two jobs, judge, model, prompt version, status, progress counts, its
    JSON result once done); expires after settings.pairwise_ttl_seconds."""
    return f"{PREFIX}:pairwise:{run_id}"


def pairwise_find(tenant: str, candidate: str, baseline: str, judge: str, version: str, model: str) -> str:
    """String: the id of the pairwise run of these two jobs by this judge, model and prompt version, so asking again
    finds it instead of paying again; expires with the run (a failed run's a minute after it failed, so the next ask
    starts afresh). The tenant is length-prefixed; the model, which may hold ':', comes last."""
    return f"{PREFIX}:pairwise-find:{len(tenant)}:{tenant}:{candidate}:{baseline}:{judge}:{version}:{model}"


def provider_batch(job_id: str, chunk: int) -> str:
    """Hash: the provider batches judging one chunk of a job in batch delivery (ids, status, request counts, next
    poll delay). O(1) keys per provider batch: this hash and the poll lease."""
    return f"{PREFIX}:job:{job_id}:provider:{chunk}"


def provider_poll_lease(job_id: str, chunk: int) -> str:
    """String with PX: the one poller of a chunk's provider batches (SET NX PX; its token as the value)."""
    return f"{PREFIX}:job:{job_id}:provider:{chunk}:poll"


def provider_submitted() -> str:
    """Sorted set: ids of the provider batches this deployment created, scored by when; trimmed to the last
    defaults.SUBMITTED_REGISTRY_SECONDS at every write and expiring with it. A resumed submission looking for the batch
    its dead worker may have created leaves these out."""
    return f"{PREFIX}:provider_submitted"


def provider_polls() -> str:
    """Sorted set: `job_id:chunk` of every chunk waiting on a provider batch, scored by when it is next due a poll
    (bounded by the chunks waiting; expires with the last)."""
    return f"{PREFIX}:provider_polls"


def qualification_job(job_id: str) -> str:
    """String: JSON QualificationJob of a judge qualification run (its tenant, request, status and result); expires
    with jobs (settings.result_ttl_seconds)."""
    return f"{PREFIX}:qualification:{job_id}"


def qualification_runs(tenant: str, judge: str, model: str, prompt_version: str) -> str:
    """List: JSON Qualification results of one judge, model and prompt version for a tenant, newest first; trimmed to
    the RUNS_KEPT newest and expiring RESULT_TTL_SECONDS after the last (ragpulse.qualification.store)."""
    return f"{PREFIX}:tenant:{tenant}:qualification:{len(judge)}:{judge}:{len(model)}:{model}:{prompt_version}"


def qualification_index(tenant: str) -> str:
    """Hash: the tenant's qualification_runs keys -> the time (ms) of their newest result, so GET
    /v1/judges/qualifications lists them without a scan; expires with the newest of them."""
    return f"{PREFIX}:tenant:{tenant}:qualifications"
