"""Every tunable default in one place; each is overridable through ragpulse.config.settings."""

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
"""The one format of every log line of the CLI, the API (its own, Litestar's and uvicorn's loggers) and the workers
(RQ's too), so `ragpulse up` prints its children's lines and its own alike: `2026-12-02 04:21:52,496 ragpulse.up INFO
...`."""
DEFAULT_HOST = "127.0.0.1"
"""Address the API binds to. Loopback, so an unconfigured service is never reachable from the network."""

DEFAULT_PORT = 8080
"""Port the API listens on."""

MAX_PORT = 65535
"""The highest TCP port: RAGPULSE_PORT and `--port` above it are refused (the kernel would take it modulo 65536)."""

DATA_DIR_NAME = "ragpulse"
"""`ragpulse up` keeps its private Redis's data in this directory under the platform's data directory
($XDG_DATA_HOME, else ~/.local/share on Linux, ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows)."""

DATA_LOCK_FILE = "ragpulse.lock"
"""In the data directory: the file `ragpulse up` holds an exclusive lock on for its whole life (and its Redis
with it), naming the holder, so two stacks never share one directory."""

DATA_REDIS_DIR = "redis"
"""In the data directory: the private Redis's working directory (append-only files, redis.log)."""

DATA_LOCK_WAIT_SECONDS = 10.0
"""How long `ragpulse up` waits for a data directory whose holder has exited but whose Redis still shuts down
(writing its append-only file) before it gives up."""

DEFAULT_KS = (1, 3, 5, 10)
"""Retrieval cutoffs computed when a batch does not name its own."""

ONLINE_ENVIRONMENT = "production"
"""The environment of a trace posted to /v1/traces or exported over OTLP that names none."""
MONITORED_ENVIRONMENT = "production"
"""The environment the monitor shows unless asked for another, and the one whose series the alert rules read."""
LEGACY_ENVIRONMENT = "production"
"""The environment of a trace stored before traces had one: it was counted as production then, and still is."""

MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest request body the API accepts (413 above it)."""

MAX_TRACES_PER_BATCH = 10_000
"""Largest number of traces in one batch (413 above it)."""

TENANT_TRACES_PER_SECOND = 1000
"""Traces a second each tenant may post, on average, across every API replica (0: no limit). Generous: more than
a few workers judge, so a tenant over it is flooding, not busy."""

TENANT_TRACES_BURST = 20_000
"""Traces a tenant may post at once above that rate (the token bucket's size): two full batches back to back. Must
be at least the largest batch (RAGPULSE_MAX_TRACES), or such a batch could never be accepted."""

RESULT_TTL_SECONDS = 7 * 24 * 3600
"""How long traces, results and reports of a job stay in Redis."""

CHUNK_SIZE = 500
"""Traces per worker job at most; a batch fans out into ceil(n / CHUNK_SIZE) chunk jobs, or more so that every live
worker gets one (MIN_CHUNK_SIZE)."""

MIN_CHUNK_SIZE = 50
"""A batch smaller than CHUNK_SIZE x the live workers is cut into one chunk per worker, but never into chunks of fewer
traces than this: below it a chunk's start (a forked work-horse, its lease, its reads) outweighs what a second worker
brings."""

WORKER_COUNT_SECONDS = 5.0
"""How long the API keeps its count of the live workers on a queue (RQ's worker registry) before reading it again."""

QUEUE_PREFIX = "ragpulse"
"""Prefix of the two RQ queues: `ragpulse-online` (production traces, served first) and `ragpulse-batch`."""

DATA_QUALITY_THRESHOLD = 0.2
"""Share of traces missing a field a requested metric needs above which the job carries a warning."""

RESULTS_PAGE_DEFAULT = 100
"""Results returned per page when the client gives no limit."""

RESULTS_PAGE_MAX = 1000
"""Largest page of results one request may ask for."""

JOBS_PAGE_DEFAULT = 20
"""Jobs returned per page of GET /v1/jobs when the client gives no limit."""

JOBS_PAGE_MAX = 100
"""Largest page of GET /v1/jobs one request may ask for."""

GENERATIONS_LISTED = 100
"""Generation jobs of one dataset that GET /v1/datasets/{name}/generations can list (the newest, within retention);
also its largest page."""

GENERATIONS_PAGE_DEFAULT = 20
"""Generation jobs GET /v1/datasets/{name}/generations returns when the client gives no limit."""

JOBS_SCAN_FACTOR = 10
"""GET /v1/jobs with filters reads at most this many times `limit` index entries per page; the page may then hold
fewer items than `limit` while `next_cursor` is not null (a bounded scan, like Redis SCAN)."""
PREVIOUS_JOB_SCAN = 200
"""A web UI job page looks through at most this many jobs of its run (or app), newest first, for the previous one
to suggest as the compare page's baseline."""

WORST_TRACES = 20
"""At most how many failing traces (recall below 1) the report lists, worst first."""

COMPARE_REGRESSION_THRESHOLD = 0.2
"""A matched trace whose recall@k or nDCG@k drops by at least this much is listed as a regression."""

COMPARE_REGRESSIONS_MAX = 100
"""At most how many regressed traces a comparison lists, worst first (`regressions_total` counts all)."""

PAIRWISE_MAX_PAIRS = 200
"""At most how many matched items a pairwise A/B run sends to the judge (each asked twice: 400 calls); past it, the
items whose match key hashes lowest."""

PAIRWISE_MAX_PAIRS_LIMIT = 10_000
"""The largest RAGPULSE_PAIRWISE_MAX_PAIRS accepted."""

PAIRWISE_TTL_SECONDS = 7 * 24 * 3600
"""How long a pairwise run and its result stay in Redis (the jobs it compares live as long by default)."""

PAIRWISE_FAILED_KEEP_SECONDS = 60
"""How long a failed pairwise run still answers its compare request (with its error) before the next request starts a
new run."""

PAIRWISE_TIMEOUT_SECONDS = 3 * 3600
"""RQ timeout of one pairwise run (a few hundred judge calls under a shared rate limit)."""

BOOTSTRAP_RESAMPLES = 1000
"""Resamples for bootstrap confidence intervals of means."""

BOOTSTRAP_SEED = 20240601
"""Fixed seed, so a report's intervals are reproducible."""

PERMUTATION_DRAWS = 20_000
"""Monte Carlo draws of the paired sign-flip permutation test (compare, gate) when n is too large to enumerate (up to
PERMUTATION_BUDGET / n): its smallest p-value is 1 / 20,001, far below 0.05 divided by any family the gate tests."""

PERMUTATION_MIN_DRAWS = 5_000
"""The fewest Monte Carlo draws a sign-flip test makes, however many pairs: a floor of 1/5,001 = 0.0002, still 40x
under 0.05 / 6 (the default family)."""

PERMUTATION_BUDGET = 60_000_000
"""Signs one sign-flip test may draw (pairs x draws): 20,000 draws up to 3,000 pairs, fewer above, so comparing two
10,000-trace jobs stays within the cost of building their reports."""

PERMUTATION_EXACT_MAX_N = 14
"""Up to this many pairs the sign-flip test enumerates all 2^n sign patterns (16,384) and its p-value is exact."""

COMPARE_ALPHA = 0.05
"""Family-wise error rate of the regression check: compare and gate call a change significant when its adjusted
p-value is below it."""

DEFAULT_REGRESSION_FAMILY = ("recall@5", "ndcg@5", "mrr", "faithfulness", "hallucination_rate",
                             "unanswerable_hallucination_rate")
"""The metrics compare and gate test for a regression when nobody names them (`[baseline] metrics` in gate.toml,
`metrics=` on GET /v1/jobs/{id}/compare), beside the ones with thresholds or targets; a metric the comparison
lacks (no cutoff 5, no unanswerable trace) is left out of the family."""

JUDGED_SHARE_FLOOR = 0.90
"""Share of a job's traces sent to the judge that must come back judged before compare and gate read its judged
metrics: below it the judged traces are the ones the judge managed (short answers, easy questions), so their means
describe a different population from the other side's, and a regression can vanish with the failed traces."""

REVIEW_SESSION_TTL_SECONDS = 8 * 3600
"""How long a review-page login lasts (absolute, not renewed by use): a working day, then the key is asked again."""

REVIEW_MAX_SESSIONS = 100
"""Review-page sessions a tenant holds at once; a login beyond it ends the tenant's oldest session."""

REVIEW_FORM_MAX_BYTES = 64 * 1024
"""Largest form body the review pages accept (413 above it): a label with a long note and its claim verdicts."""

REVIEW_QUEUE_SIZE = 20
"""Traces the review page asks the review queue for at once; it shows the first this reviewer has not labelled."""

REDIS_SOCKET_TIMEOUT = 5.0
"""Seconds before a Redis call is abandoned; the API then answers 503 instead of hanging."""

SCRAPE_REDIS_TIMEOUT = 1.0
"""Seconds before a Redis read of a /metrics scrape is abandoned (its families are then left out of the scrape)."""

REDIS_HEALTH_CHECK_SECONDS = 30
"""A pooled Redis connection idle this long is checked with a PING before it is used again."""

WORKER_REDIS_OUTAGE_SECONDS = 60
"""How long a worker's Redis command retries, with backoff, through a Redis outage or restart before it fails; a
worker between jobs waits for Redis as long as it takes."""

ONLINE_ACK_MARKER_SECONDS = 2 * WORKER_REDIS_OUTAGE_SECONDS
"""How long an online acknowledgement's marker (keys.online_ack) lives, by default (the worker uses twice its
RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS): a consumer sends a failed acknowledgement again within its outage budget, the
client's own retries within seconds; at 20 acknowledgements a second, ~2,400 markers a consumer."""

RETRY_AFTER_SECONDS = 5
"""Retry-After sent with a 503 when Redis is unreachable."""

PROGRESS_LINE_SECONDS = 10.0
"""`ragpulse eval` and `gate` on a stderr that is no terminal (a CI log): at most one progress line this often while
the count moves (and the last one always); a terminal gets a bar redrawn in place instead."""

CLIENT_RETRIES = 5
"""Times `ragpulse eval` and `gate` send a request again: after a 429 (any request: nothing was written), or after
a 5xx or no answer to a read (a POST answered 5xx may have been committed, so it is not sent twice)."""

CLIENT_BACKOFF_SECONDS = 0.5
"""Their backoff base: retry n waits uniform(0, min(cap, base x 2^n)) seconds, or the server's Retry-After."""

CLIENT_BACKOFF_CAP_SECONDS = 30.0
"""Their longest wait before one retry, a longer Retry-After included: a CI job never sleeps for the server's day."""

JUDGE_MODEL = "claude-sonnet-4-6"
"""Anthropic model used by the LLM judge unless configured otherwise."""

JUDGE_MAX_TOKENS = 4096
"""Output token budget of one judge call; truncated output gets one repair attempt."""

JUDGE_TIMEOUT_SECONDS = 60.0
"""Timeout of one judge HTTP call."""

JUDGE_MAX_RETRIES = 4
"""Retries of transient judge failures (429, 529, 5xx, timeouts) before the trace is a judge_error."""

JUDGE_MAX_ANSWER_CHARS = 10_000
"""Characters of an answer the judge sees (a long answer runs to 3-5k); the rest is cut, and the result says so
(`judge_input_truncated`)."""

JUDGE_MAX_DOC_CHARS = 20_000
"""Characters of each retrieved document the judge sees."""

JUDGE_MAX_CONTEXT_CHARS = 100_000
"""Characters of all of a trace's retrieved documents together the judge sees, in rank order: documents past it
reach the judge empty (their rank and id stay). With the answer's cap: at most about half a second of the local
judge for a trace built to be slow (every claim sharing its words with every sentence), and some 30k input tokens of
an LLM judge."""

JUDGE_MAX_HISTORY_TURNS = 12
"""Earlier turns of a conversation the judge sees: the most recent ones (a chat's references reach back a few
turns, rarely a dozen); older turns are left out and the result says so (`judge_input_truncated` names `history`)."""

JUDGE_MAX_HISTORY_CHARS = 12_000
"""Characters of those turns together the judge sees, newest first: the oldest turn kept may be cut at its start."""

JUDGE_MAX_SESSION_EVIDENCE_CHARS = 40_000
"""Characters of a trace's session evidence (documents retrieved for earlier turns) together the judge sees, in the
order given, each document also held to JUDGE_MAX_DOC_CHARS; documents past it are left out (`session_evidence`)."""

JUDGE_CONCURRENCY = 8
"""Judge calls in flight at once inside one worker process."""

MAX_JUDGE_CONCURRENCY = 1024
"""Largest RAGPULSE_JUDGE_CONCURRENCY accepted: each call in flight may hold a Redis connection of the worker's
async pools, and a socket to the provider."""

JUDGE_PAUSE_READ_SECONDS = 0.1
"""How often a worker's judge limiter reads the shared pause (set when any worker got a 429) instead of once per
call: a pause that lasts seconds holds this worker's calls from at most this much later."""

JUDGE_CALLS_WRITE_SECONDS = 0.25
"""How often a chunk run writes the judge calls it counted (the settlement of their reserved spend to the actual
usage against the job and the tenant's day, and the judge request metrics) to Redis, in one transaction, instead of a
round trip per call. Budget checks see every worker's calls once reserved, before they are sent; the worker's own
unwritten settlements at once, other workers' within this."""

JUDGE_CALLS_RESERVED_AHEAD = 0.5
"""Share of RAGPULSE_JUDGE_CONCURRENCY a chunk run reserves ahead (evaluation.reserve), topped up in the background
once a quarter are taken, so a call rarely waits for Redis before it is sent. A SIGKILLed worker over-counts by these at
most (plus the calls it had reserved and not sent yet); a run gives back what it did not take when it ends."""

JOB_FAILURE_CHECK_SECONDS = 0.5
"""How often a chunk run reads whether its job has failed (another worker's judge was refused its credentials):
traces that start later fail at once instead of being judged."""

LEASE_SECONDS = 30
"""A running chunk renews its lease every third of this; a chunk whose lease lapses is requeued."""

CHUNK_TIMEOUT_SECONDS = 3600
"""Longest a chunk may run before RQ kills it (its traces are then recorded as failed)."""

CHUNK_CHAIN_SECONDS = 60.0
"""A chunk run takes the job's next waiting chunk as its last calls finish (no pause at the hand-over) only while it
has run less than this: a stopping worker, which waits for its running job, waits at most about this long plus a
chunk, and one RQ job stays far below CHUNK_TIMEOUT_SECONDS."""

JANITOR_INTERVAL_SECONDS = 5
"""How often each worker looks for chunks whose worker died and for jobs whose finalizer died."""

PROVIDER_POLL_CHECK_SECONDS = 1.0
"""How often each worker's janitor looks for provider batches due a poll (one ZRANGEBYSCORE)."""

BATCH_POLL_MIN_SECONDS = 5.0
"""First wait before polling a provider batch; each poll that finds it still running doubles the wait."""

BATCH_POLL_MAX_SECONDS = 300.0
"""Longest wait between two polls of a provider batch."""

BATCH_POLL_LEASE_SECONDS = 120
"""Lease of one poll of a provider batch (Redis SET NX PX): a poller that dies frees it after this long, and any
worker's janitor then dispatches the poll again."""

SUBMIT_LOOKUP_SKEW_SECONDS = 120.0
"""How far the provider's clock may be from ours when a resumed submission looks for the batch its dead worker may
have created (created between the intent's time less this and the intent's time plus the judge timeout plus this)."""
SUBMITTED_REGISTRY_SECONDS = 3600
"""How long this deployment remembers the ids of the provider batches it created (what a resumed submission's lookup
must not take for its own): far longer than a lapsed lease takes to be resumed."""

BATCH_MAX_REQUESTS = 100_000
"""Most requests in one Anthropic Message Batch (its API's limit)."""

BATCH_MAX_BYTES = 256 * 1024 * 1024
"""Largest body of one Anthropic Message Batch (its API's limit: 256 MB)."""

BATCH_RETRY = "interactive"
"""What becomes of a batch request that expired or errored: sent once more through the interactive API
(`interactive`) or recorded as the trace's judge error (`none`)."""

REDIS_URL = "redis://127.0.0.1:6379/0"
"""The Redis holding queues, traces and results when REDIS_URL is not set."""

JUDGE_NAMES = ("none", "heuristic", "anthropic", "openai")
"""Every judge a batch, RAGPULSE_JUDGE or the CLI may name, in the order errors list them; judges/kinds declares
each (tests/test_judge_kinds.py keeps the two, and the wire schema's JudgeName, equal)."""

JUDGE_ALIASES = {"local": "heuristic"}
"""Old judge names still accepted for a release, with a deprecation warning (judges/kinds reads the same table)."""

JUDGE = "none"
"""Judge of batches that name none when ANTHROPIC_API_KEY is not set: none, so generation metrics say "not judged"
rather than show the offline heuristic's figures, which nothing has measured on the user's data."""

JUDGE_WITH_API_KEY = "anthropic"
"""Judge of batches that name none when ANTHROPIC_API_KEY is set."""

OPENAI_STRUCTURED = "auto"
"""How the openai judge asks for structured output: `auto` tries a forced tool call and falls back to
response_format json_schema, once per process, when the server refuses tools."""

OPENAI_STRUCTURED_MODES = ("tools", "json_schema", "auto")
"""Values RAGPULSE_OPENAI_STRUCTURED accepts."""

OPENAI_PLACEHOLDER_API_KEY = "unused"
"""Bearer token the openai judge sends when RAGPULSE_OPENAI_API_KEY is not set: self-hosted servers without
authentication ignore it (the SDK refuses to run without some key)."""

JUDGE_TEMPERATURE = 0.0
"""Sampling temperature of the LLM judge; RAGPULSE_JUDGE_TEMPERATURE=none omits it for models that reject it."""

JUDGE_RPM = 0
"""Judge requests per rate window shared by all workers, per model; 0 means unlimited."""

JUDGE_ITPM = 0
"""Judge input tokens per rate window shared by all workers, per model; 0 means unlimited."""

JUDGE_OTPM = 0
"""Judge output tokens per rate window shared by all workers, per model; 0 means unlimited."""

JUDGE_RATE_WINDOW_SECONDS = 60
"""The window of the three judge rate limits, as Anthropic's."""

APPS = frozenset({"default"})
"""Apps that get their own `app` label in Prometheus; every other app is `other`."""

OPEN_TENANT = "default"
"""The tenant of every request when no API keys are configured (service.auth.OPEN_TENANT names the same)."""

SAMPLE_RATE = 1.0
"""Share of production traces judged for apps without a stored sampling policy: all of them."""

MAX_APPS_PER_TENANT = 100
"""Stored sampling policies per tenant, which bounds Redis growth."""

DATASETS_PER_TENANT = 100
"""Datasets a tenant may hold. Datasets persist (no TTL), so this and the two below bound their Redis growth."""

DATASET_VERSIONS_MAX = 100
"""Versions one dataset may hold; a push beyond it is 409 (versions are immutable and never dropped silently)."""

DATASET_VERSION_NUMBERS = 10
"""Times DATASET_VERSIONS_MAX a dataset's version numbers may reach (deleted versions leave their numbers used): a
push beyond is 409 until the dataset is deleted whole. Every read of a dataset looks up each number, so a loop of
push-and-delete must not grow that without bound."""

DATASET_ITEMS_PER_TENANT = 250_000
"""Items all a tenant's dataset versions may hold together (an unchanged item pushed again in a new version counts
again: versions are stored whole). Measured at about 540 bytes of Redis memory per item with a 60-character query, two
gold documents and a 250-character reference answer, so about 135 MB per tenant at the cap."""

DATASET_ITEMS_PAGE_DEFAULT = 100
"""Items per page of GET /v1/datasets/{name}/versions/{version} when `limit` is not given."""

DATASET_ITEMS_PAGE_MAX = 1000
"""The largest `limit` GET /v1/datasets/{name}/versions/{version} accepts."""

MAX_ITEMS_PER_VERSION = 100_000
"""The most items one dataset version holds (bounded like a batch's traces)."""

CALLBACK_RETRY_SECONDS = (5, 30, 120, 600, 1800)
"""Waits before each retry of a failed callback delivery."""

MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-opus-4-6": 4096, "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096, "claude-sonnet-4-6": 2048,
    "haiku": 2048, "sonnet": 1024, "opus": 1024,
}
"""Shortest prefix each model caches, by the first key its name contains (Anthropic's prompt-caching docs). Sonnet
4.6 is taken at 2,048: one version of the docs' table says 1,024, a later one 2,048, and users report no cache below
2,048; a prefix that reaches the stricter figure is cached under either."""

DEFAULT_MIN_CACHEABLE_TOKENS = 1024
"""Minimum cacheable length assumed for a model MIN_CACHEABLE_TOKENS does not know."""

ONLINE_RESULT_TTL_SECONDS = 86400
"""How long the record of a sampled online trace (GET /v1/traces/{trace_id}) stays in Redis."""

SESSION_MAX_TURNS = 100
"""Sampled turns a session's index (GET /v1/sessions/{session_id}, session evidence) keeps at most: the latest."""

SESSION_DOCS_PER_TURN = 8
"""Documents of a turn kept in its session's index as evidence for later turns (the top-ranked ones)."""

SESSION_DOC_CHARS = 2_000
"""Characters of a document's text kept in its session's index (its start)."""

SESSION_EVIDENCE_DOCS = 20
"""Documents of earlier turns handed to the judge as a trace's `session_evidence` when the app sent none."""

SESSION_EVIDENCE_CHARS = 40_000
"""Characters of earlier turns' documents handed to the judge as `session_evidence` at most (the judge input caps
then apply as to any document)."""

MAX_TRACES_PER_POST = 1000
"""Most traces in one POST /v1/traces (413 above it); larger sets go to POST /v1/batches."""

ONLINE_MAX_BACKLOG = 200_000
"""Posts the online stream may hold unprocessed; beyond it POST /v1/traces answers 503 with Retry-After, so a stalled
pipeline pushes back instead of filling Redis."""

ONLINE_CLAIM_IDLE_SECONDS = 60
"""A post delivered to a worker that has not acknowledged it for this long (the worker died, or hangs) is claimed
by another worker. Workers refresh the posts they are still judging, so a slow judge call is not claimed."""

ONLINE_MAX_DELIVERIES = 5
"""A post delivered this many times without being processed (it crashes every worker that reads it) is recorded as
failed and acknowledged, rather than retried forever."""

ONLINE_READ_COUNT = 256
"""Posts a worker reads from the stream at once."""

POLICY_CACHE_SECONDS = 5.0
"""How long the API reuses an app's sampling policy for online ingest: a PUT takes effect within this."""

OTLP_SETTLE_SECONDS = 2.0
"""An OpenTelemetry trace whose root span has arrived is assembled this long after its latest export."""

OTLP_MAX_WAIT_SECONDS = 30.0
"""An OpenTelemetry trace is assembled at most this long after its first span arrived."""

OTLP_MAX_SPANS_PER_TRACE = 1000
"""Spans buffered per OpenTelemetry trace; more are refused (partial success) and counted."""

OTLP_MAX_TRACE_BYTES = 16 * 1024 * 1024
"""Bytes of spans buffered per OpenTelemetry trace (as stored); spans past it are refused (partial success) and
counted, so one trace sent as many exports cannot make the API that assembles it load more than this."""

OTLP_MAX_ATTRIBUTE_BYTES = 1024 * 1024
"""Bytes of one span attribute's value kept; a longer string is cut to it (at a character boundary) and any other
longer value dropped, with a warning in the export's partial success."""

SHUTDOWN_TASK_SECONDS = 2.0
"""How long the API waits at shutdown for its background tasks (the OTLP hand-over) to end."""

LABEL_TTL_DAYS = 90
"""How long a human label (POST /v1/labels, POST /v1/calibrations) stays in Redis, refreshed when its trace is
labelled again."""

AGREEMENT_WINDOW_DAYS = 30
"""Labels younger than this make the judge-agreement figures (GET /v1/apps/{app}/agreement and the
ragpulse_judge_agreement_labels gauge): a judge's agreement of three months ago says little about today's traffic."""

LABELLED_TRACES_PER_APP = 10_000
"""Labelled traces kept per tenant and app; past it the traces labelled longest ago lose their labels first."""

LABELLED_APPS_MAX = 1_000
"""(tenant, app) pairs whose labels /metrics reads at most; past it the pair labelled longest ago is forgotten by the
scrape (its labels stay readable through the API until they expire)."""

REVIEW_TEXT_TTL_SECONDS = 7 * 24 * 3600
"""How long an online trace the review design can pick keeps its query, documents, answer and verdicts for review."""

REVIEW_SAMPLE_RATE = 0.1
"""q: share of judged traces in the uniform estimation pool (by a hash of tenant, app and trace id)."""

REVIEW_TARGETED_RATES = {"disagreement": 1.0, "hallucinated": 0.5, "near_threshold": 0.1}
"""Share of the judged traces outside the uniform pool that the review design picks, by stratum, in this order of
precedence: repeat-judge disagreements, judged hallucinations, any trace of an app whose rate is near its alert
threshold. A trace's inclusion probability is q + (1 - q) x rate."""

REVIEW_ALERT_THRESHOLD = 0.2
"""The hallucination rate HallucinationRateSpike pages above (deploy/prometheus/alerts.yml)."""

REVIEW_NEAR_BAND = 0.05
"""An app is near its alert threshold when its hallucination rate over REVIEW_NEAR_MINUTES is this close to it."""

REVIEW_NEAR_MINUTES = 15
"""The window of that rate, as the alert's."""

REVIEW_NEAR_MIN_ANSWERED = 20
"""Answered traces that window needs before its rate counts, as the alert's."""

REVIEW_POOL_CAP = 10_000
"""Reviewable traces indexed per tenant and app; past it the ones with the highest hash leave the index (those the
queue would serve last), so what stays is still picked by hash alone."""

REVIEW_QUEUE_MAX = 50
"""Most items one GET /v1/apps/{app}/review answers."""

REVIEW_REFS_PER_CONTENT = 1000
"""Traces remembered per judged content (its appearances in jobs and online): past it the oldest are forgotten and
the appearance count stops growing; a review page reads the newest of them."""

REVIEW_SCAN_BATCH = 200
"""Index entries the review queue reads per round trip while filling a page."""

AGREEMENT_SCRAPE_SECONDS = 30.0
"""How long the API reuses the judge-agreement gauges it read from the label store (labels arrive at human pace, and
reading every labelled trace on each scrape would cost Redis more than it tells)."""

MIN_ESTIMATION_LABELS = 30
"""Uniformly sampled human labels a judge-corrected rate needs; below it the rate says so instead of a number."""

KAPPA_RELIABLE = 0.6
"""Below this Cohen's kappa against human labels a judge is unreliable (the field's usual threshold)."""

ONLINE_SHARES_TTL_SECONDS = 86400
"""How long the online stream's per-tenant counts of posts held live after the latest post. Expired while posts still
wait, the counts read low: a tenant gets more than its share until the stream empties, never less."""

IDEMPOTENCY_TTL_SECONDS = 86400
"""How long the answer to a post sent with an Idempotency-Key is kept and replayed to retries with the same key: longer
than any client retries (the SDK gives up within minutes), short enough that keys do not pile up."""

IDEMPOTENCY_MAX_KEYS = 100_000
"""Idempotency-Keys kept per tenant at most (the oldest answers are forgotten first): bounds the Redis memory a tenant's
keys take, ~0.3 KB each for a one-trace post."""

IDEMPOTENCY_KEY_MAX_CHARS = 255
"""Longest Idempotency-Key accepted (visible ASCII): room for any UUID or ULID, quoted or not."""

MAX_HEADER_BYTES = 64 * 1024
"""Largest request line plus headers the API reads (431 past it): far past any real client's (browsers send a few
KiB; nginx's default buffers take 32 KiB). Without it the HTTP parser buffered headers of any size, before any check.
"""

BODY_READ_TIMEOUT_SECONDS = 30.0
"""How long a request has to deliver its whole body once its headers are in (408 past it): a 32 MiB body needs a
little over 1 MB/s. Bounds how long a slow (or malicious) client holds a body buffer."""

HEAD_TIMEOUT_SECONDS = 10.0
"""How long a connection has to send a complete request head (request line plus headers), from its opening or from
the end of the previous response (408, or a silent close if nothing came). A real client sends its head in one write;
without a deadline a connection that sends nothing, or a header line now and then, held its socket and buffer for
good."""

MAX_CONNECTIONS = 1024
"""Connections the API holds open at once; a further one is answered 503 at once and closed. At the head cap, each
open connection may hold ~130 KiB (64 KiB of head plus the parser's and the transport's buffers): ~130 MiB in all."""

MAX_CONNECTIONS_PER_ADDRESS = 256
"""Connections one client address holds open at once (503 past it): room for a reverse proxy's keep-alive pool, which
reaches the API from one address, while one host alone cannot take every connection."""

MAX_INFLIGHT_BODY_BYTES = 128 * 1024 * 1024
"""Bytes of request bodies the API holds at once, from the first read of a body to the end of its response (503 past
it). A body costs about 2.5 times its size while it is read and decoded (bench/README.md), so four 32 MiB bodies at
once take about 350 MiB over the API's own memory, inside the 1 GiB the Kubernetes manifest grants."""

INFLIGHT_RETRY_AFTER_SECONDS = 2
"""Retry-After of a 503 for a full connection or body budget: what is held is released within a request's time."""

COUNTED_WRITE_MARKER_SECONDS = 3600
"""Lifetime of the marker of an applied write of judge calls (keys.counted_write): longer than any worker holds a
write it could not confirm (twice RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS at most; a longer budget lengthens it)."""

GENERATION_MAX_CHUNKS = 2000
"""Most corpus chunks one POST /v1/datasets/{name}/generate may send."""

GENERATION_MAX_CHUNK_CHARS = 20_000
"""Longest corpus chunk text generation accepts (as the judge's longest document)."""

GENERATION_MAX_CANDIDATES = 1000
"""Most candidate questions one generation job writes (each costs two or three LLM calls)."""

GENERATION_QUEUED_PER_TENANT = 4
"""Most generation jobs one tenant may have queued (accepted, their request not yet read by a worker): each holds its
corpus in Redis until a worker takes it, so a tenant posting faster than the batch workers run would fill Redis."""

GENERATION_QUEUED_BYTES_PER_TENANT = 64 * 1024 * 1024
"""Most bytes of queued generation requests one tenant may hold in Redis: two requests at the body limit."""

GENERATION_QUEUED_RETRY_AFTER_SECONDS = 30
"""Retry-After sent with the 429 of a generation post over the tenant's queued cap: a worker takes a queued job's
request as the job starts, which on a busy batch queue takes seconds to minutes."""

GENERATION_TEST_FRACTION = 0.2
"""Share of kept generated items assigned to the frozen `test` split (by a hash of the item id)."""

GENERATION_REVIEW_SAMPLE = 20
"""Kept generated items listed for human review before the draft is published (a deterministic sample)."""

GENERATION_NEAR_DUPLICATE = 0.8
"""Token Jaccard similarity at or above which two generated questions are near-duplicates (a heuristic)."""

GENERATION_RELATED_OVERLAP = 0.2
"""Content-token Jaccard similarity at or above which two chunks of different documents are related enough for a
multi-hop question (a heuristic; adjacent chunks of one document are always related)."""

GENERATION_JOB_TIMEOUT_SECONDS = 3600
"""Longest a generation job may run before RQ kills it (it is then recorded failed)."""

RETRIEVAL_FILTER_K = 5
"""An item's source chunks must be in its retriever's top this-many, else it is set aside as retrieval-unanswerable."""
