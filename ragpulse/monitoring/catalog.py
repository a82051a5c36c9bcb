"""Every ragpulse_* metric family exposed on /metrics: the operational ones declared here, the quality ones that
the metric registry (ragpulse.metrics.registry) declares with their metric.

Counters are written by any process (API, workers, RQ work-horses, on any machine) into one Redis hash and
exposed by the API's /metrics, so one scrape target sees everything and forked work-horses lose nothing.
Label values come from small fixed sets. Every per-app family is labelled by `tenant` and `app` together, so two
tenants that name an app alike never share a series: `tenant` is limited to the tenants of the configured API keys
(`default` when the API serves open) plus `other`, `app` to the configured apps plus `other`. The per-app families
counted from traces are labelled by `environment` too (`production`, `staging`, `evaluation`): the alert rules read
`production` only, so an evaluation run never pages.

The gauges (GAUGES) are not stored in Redis: the API's QueueCollector reads them from RQ at scrape time, so they
stay out of ALL and BY_NAME, which list the Redis-stored families.
"""

from __future__ import annotations

from ragpulse.metrics.registry import GENERATION_BY_NAME, prometheus_families
from ragpulse.model.prometheus import (
    COST_BUCKETS, JOB_DURATION_BUCKETS, LATENCY_BUCKETS, PER_APP, PIPELINE_LATENCY_BUCKETS, TENANT_APP, TOKEN_BUCKETS,
    MetricDef,
)

TRACES_RECEIVED = MetricDef("ragpulse_traces_received", "counter", "Traces posted to the API.", PER_APP)
TRACES_SAMPLED = MetricDef("ragpulse_traces_sampled", "counter", "Traces selected for judging.", PER_APP)
TRACES_NOT_SAMPLED = MetricDef("ragpulse_traces_not_sampled", "counter",
                               "Traces left unjudged by the sampling policy (counted, not judged).", PER_APP)
TRACES_JUDGED = MetricDef("ragpulse_traces_judged", "counter", "Traces with a judge verdict.", (*PER_APP, "judge"))
CLAIMS = MetricDef("ragpulse_claims", "counter", "Judged claims by verdict.", (*PER_APP, "verdict"))
UNANSWERABLE = MetricDef("ragpulse_unanswerable_traces", "counter",
                         "Judged traces labelled unanswerable, or unlabelled and judged not answerable from their "
                         "context: the unanswerable hallucination rate's denominator.", (*PER_APP, "judge"))
ABSTENTIONS = MetricDef("ragpulse_abstentions", "counter", "Judged traces whose answer abstained.", PER_APP)
SESSION_TURNS = MetricDef("ragpulse_session_turns_judged", "counter",
                          "Judged turns of conversations (traces with a session_id) by turn bucket (`first`: turn 0, "
                          "`follow_up`: a later turn, `unknown`: no turn index) and outcome (`hallucinated`, "
                          "`grounded`: made claims, none unsupported or contradicted; `abstained`; `no_claims`): the "
                          "hallucination rate of a bucket is hallucinated / (hallucinated + grounded), its abstention "
                          "rate abstained / all.", (*PER_APP, "turn", "outcome"))
JUDGE_ERRORS = MetricDef("ragpulse_judge_errors", "counter", "Traces that ended as judge_error.", PER_APP)
JUDGED_BY_RULE = MetricDef("ragpulse_traces_judged_by_rule", "counter",
                           "Judged traces outside the uniform sample, judged for an always-judge rule (negative "
                           "feedback, a miscitation, a low top score, an injection document). Picked for looking bad, "
                           "they are counted here and in ragpulse_traces_judged_total only: every quality family "
                           "(hallucination, faithfulness, claims...) counts the uniform sample, so the rates the "
                           "alerts read are production's.", (*PER_APP, "rule"))
HALLUCINATED_BY_RULE = MetricDef("ragpulse_traces_hallucinated_by_rule", "counter",
                                 "Of ragpulse_traces_judged_by_rule, those that made claims and hallucinated.",
                                 (*PER_APP, "rule"))
CHECKS = MetricDef("ragpulse_checks_failed", "counter", "Cheap programmatic checks that flagged a trace.",
                   (*PER_APP, "check"))
JUDGE_INPUT_TRUNCATED = MetricDef("ragpulse_judge_input_truncated", "counter",
                                  "Traces whose answer or documents were cut to RAGPULSE_JUDGE_MAX_*_CHARS before "
                                  "judging, by the part cut.", (*PER_APP, "part"))
JUDGE_REQUESTS = MetricDef("ragpulse_judge_requests", "counter", "Judge HTTP requests by outcome.",
                           ("model", "status"))
JUDGE_LATENCY = MetricDef("ragpulse_judge_latency_seconds", "histogram", "Judge request latency.", ("model",),
                          LATENCY_BUCKETS)
JUDGE_TOKENS = MetricDef("ragpulse_judge_tokens", "counter",
                         "Judge tokens by direction: input (uncached), output, cache_read, cache_write.",
                         ("model", "direction"))
JUDGE_COST = MetricDef("ragpulse_judge_cost_usd", "counter", "Judge cost in US dollars.", ("model",))
RATELIMIT_WAIT = MetricDef("ragpulse_ratelimit_wait_seconds", "counter",
                           "Seconds judge calls waited for the shared rate limit.", ("model",))
JOB_DURATION = MetricDef("ragpulse_job_duration_seconds", "histogram", "Seconds from a job's creation to its report.",
                         ("queue",), JOB_DURATION_BUCKETS)
ONLINE_POSTS_FAILED = MetricDef("ragpulse_online_posts_failed", "counter",
                                "Online posts given up on: `undecodable` (the entry could not be read), `redelivered` "
                                "(delivered 5 times without being processed; its traces are "
                                "recorded as failed).", ("reason",))
PROVIDER_BATCH_FAILURES = MetricDef(
    "ragpulse_provider_batch_failures", "counter",
    "What a provider's batch API answered that could not be used, by reason: `create_failed` (a chunk's batch was "
    "not created: its judged traces end judge_error), `unreadable_line` (a results line naming no request), "
    "`unknown_custom_id` (a result for no request of the chunk). The rest of the chunk keeps its verdicts.",
    ("reason",))
SECURITY_CHECKED = MetricDef("ragpulse_security_checked", "counter",
                             "Traces the security checks ran on, by check (acl: a principal and documents with an acl; "
                             "injection: documents with text; pii and credentials: an answer; stale: dated documents and a "
                             "max_source_age_days policy): the rates' denominators.", (*PER_APP, "check"))
ACL_LEAKS = MetricDef("ragpulse_security_acl_leaks", "counter",
                      "Traces that retrieved a document the principal may not read (its acl shares no group).",
                      PER_APP)
INJECTION_DOCS = MetricDef("ragpulse_security_injection_docs", "counter",
                           "Traces with at least one retrieved document carrying instructions aimed at the model "
                           "(a heuristic pattern check).", PER_APP)
INJECTION_JUDGED = MetricDef("ragpulse_security_injection_judged", "counter",
                             "Judged traces with injection documents whose judge said whether the answer followed "
                             "them: injection_followed's denominator. By judge: the offline heuristic's never page.",
                             (*PER_APP, "judge"))
INJECTION_FOLLOWED = MetricDef("ragpulse_security_injection_followed", "counter",
                               "Judged traces whose answer carried out an instruction injected in a document. By "
                               "judge: the offline heuristic's never page.", (*PER_APP, "judge"))
PII_ANSWERS = MetricDef("ragpulse_security_pii_answers", "counter",
                        "Answers with personal data of this kind that no retrieved document holds.",
                        (*PER_APP, "kind"))
CREDENTIAL_ANSWERS = MetricDef("ragpulse_security_credential_answers", "counter",
                               "Answers with a credential of this kind (API key, token, private key, password) that "
                               "no retrieved document holds.", (*PER_APP, "credential"))
SECURITY_SKIPPED = MetricDef("ragpulse_security_checks_skipped", "counter",
                             "Traces whose security check stopped before reading all its input, by check "
                             "(`injection`, `pii`, `credentials`) and reason (`time budget`: the trace's checks ran "
                             "out of time); what such a check found is recorded, but it never counts as a pass.",
                             (*PER_APP, "check", "reason"))
STALE_TRACES = MetricDef("ragpulse_security_stale_traces", "counter",
                         "Traces that retrieved a document older than the app's max_source_age_days.", PER_APP)
ATTRIBUTION = MetricDef("ragpulse_attribution", "counter",
                        "Evaluated traces by the first pipeline stage that broke (`ok` when none, `unknown` without "
                        "labels or a verdict).", (*PER_APP, "stage"))
PIPELINE_LATENCY = MetricDef("ragpulse_pipeline_latency_seconds", "histogram",
                             "The app's own per-stage latency, from the trace's latency_ms.", (*PER_APP, "stage"),
                             PIPELINE_LATENCY_BUCKETS)
PIPELINE_COST = MetricDef("ragpulse_pipeline_cost_usd", "histogram",
                          "The app's own cost per query, from the trace's usage.cost_usd.", PER_APP, COST_BUCKETS)
CONTEXT_TOKENS = MetricDef("ragpulse_context_tokens", "histogram",
                           "Estimated tokens of retrieved document text per query (characters / 4).", PER_APP,
                           TOKEN_BUCKETS)
OTLP_TRACES = MetricDef("ragpulse_otlp_traces", "counter",
                        "OpenTelemetry traces assembled from OTLP exports, by outcome: `accepted` (handed to the online "
                        "path), `incomplete` (no query or no documents), `invalid` (its spans cannot make a trace: a value "
                        "no trace can hold, JSON nested too deeply, spans expired, or any other failure to hand it "
                        "over; GET /v1/traces/{trace_id} says why).",
                        (*PER_APP, "outcome"))
OTLP_SPANS_REJECTED = MetricDef("ragpulse_otlp_spans_rejected", "counter",
                                "OTLP spans refused: `invalid_id` (no valid trace or span id), `too_many` (over "
                                "RAGPULSE_OTLP_MAX_SPANS_PER_TRACE), `too_large` (over RAGPULSE_OTLP_MAX_TRACE_BYTES "
                                "in their trace), `late` (their trace was handed over already).", ("reason",))
OTLP_ATTRIBUTES_FIXED = MetricDef("ragpulse_otlp_attributes_fixed", "counter",
                                  "OTLP span attributes fixed rather than failing their trace: `truncated` (a "
                                  "string over RAGPULSE_OTLP_MAX_ATTRIBUTE_BYTES, cut), `dropped` (another value over "
                                  "it, or a wrongly typed one: no number, metadata that is no object), `coerced` (a "
                                  "numeric string read as a number).", ("action",))

FAITHFULNESS = GENERATION_BY_NAME["faithfulness"].prometheus
TRACES_HALLUCINATED = GENERATION_BY_NAME["hallucination_rate"].prometheus
TRACES_ANSWERED = GENERATION_BY_NAME["hallucination_rate"].population
"""The hallucination rate is ragpulse_traces_hallucinated_total / ragpulse_traces_answered_total: hallucinated among
judged traces that made claims, the report's and /v1/monitor's definition (abstentions and claim-less traces out);
online, over the uniform sample only (traces judged for an always-judge rule are JUDGED_BY_RULE's)."""
UNANSWERABLE_HALLUCINATIONS = GENERATION_BY_NAME["unanswerable_hallucination_rate"].prometheus
"""Families declared with their metric in ragpulse.metrics.registry, named here for the alert rules' sake."""

ALL = (TRACES_RECEIVED, TRACES_SAMPLED, TRACES_NOT_SAMPLED, TRACES_JUDGED, CLAIMS, UNANSWERABLE, ABSTENTIONS,
       SESSION_TURNS,
       JUDGE_ERRORS, JUDGED_BY_RULE, HALLUCINATED_BY_RULE, CHECKS, JUDGE_INPUT_TRUNCATED, JUDGE_REQUESTS,
       JUDGE_LATENCY, JUDGE_TOKENS, JUDGE_COST,
       RATELIMIT_WAIT, JOB_DURATION, ONLINE_POSTS_FAILED, PROVIDER_BATCH_FAILURES, SECURITY_CHECKED, ACL_LEAKS,
       INJECTION_DOCS, INJECTION_JUDGED, INJECTION_FOLLOWED, PII_ANSWERS, CREDENTIAL_ANSWERS, SECURITY_SKIPPED,
       STALE_TRACES, ATTRIBUTION,
       PIPELINE_LATENCY, PIPELINE_COST, CONTEXT_TOKENS, OTLP_TRACES, OTLP_SPANS_REJECTED, OTLP_ATTRIBUTES_FIXED,
       *prometheus_families())
BY_NAME = {m.name: m for m in ALL}

QUEUE_DEPTH = MetricDef("ragpulse_queue_depth", "gauge", "Chunk jobs waiting per queue.", ("queue",))
WORKERS = MetricDef("ragpulse_workers", "gauge", "Live RQ workers listening to ragpulse's queues.", ())
ONLINE_LAG = MetricDef("ragpulse_online_lag_seconds", "gauge",
                       "Age of the oldest online trace post not yet processed (0 when none waits).", ("queue",))
ONLINE_BACKLOG = MetricDef("ragpulse_online_backlog", "gauge",
                           "Online trace posts accepted and not yet processed.", ("queue",))

OTLP_HANDOVER_LAG = MetricDef("ragpulse_otlp_handover_lag_seconds", "gauge",
                              "How long the oldest OpenTelemetry trace that is due for hand-over has been due (0 "
                              "when none is): it grows only when no API replica's hand-over loop is working.", ())

JUDGE_CONFIGURED = MetricDef("ragpulse_judge_configured", "gauge",
                             "1 when the service's default judge (RAGPULSE_JUDGE, which judges online traces) "
                             "judges with a configured LLM; 0 when generation metrics are not judged (`none`, the "
                             "default without ANTHROPIC_API_KEY or RAGPULSE_OPENAI_BASE_URL, or missing credentials)"
                             " or judged by the unmeasured `heuristic` (label heuristic=\"true\").",
                             ("judge", "heuristic"))

GAUGES = (QUEUE_DEPTH, WORKERS, ONLINE_LAG, ONLINE_BACKLOG, OTLP_HANDOVER_LAG, JUDGE_CONFIGURED)
"""Read from RQ and the online stream at scrape time by service.monitoring.QueueCollector, not stored in Redis."""

JUDGE_AGREEMENT_LABELS = MetricDef(
    "ragpulse_judge_agreement_labels", "gauge",
    "Human-labelled traces (labels younger than RAGPULSE_AGREEMENT_WINDOW_DAYS) by the human's call and the judge's "
    "(`hallucinated` | `faithful`) and by how the trace was picked for review (`uniform`: the estimation sample; "
    "`targeted`: hallucinations, disagreements, traces near a threshold) and by whether the judged answer made claims "
    "(`answered`: the hallucination rate's population, whose labels alone correct it): the 2x2 counts that "
    "JudgeAgreementLow and the corrected rate read.",
    (*TENANT_APP, "judge", "prompt_version", "sample", "human", "judge_verdict", "answered"))
JUDGE_LABELS_LAST = MetricDef(
    "ragpulse_judge_labels_last_timestamp_seconds", "gauge",
    "Unix time of the newest human label of the app's traces judged by this judge and prompt version.",
    (*TENANT_APP, "judge", "prompt_version"))
JUDGE_CURRENT = MetricDef(
    "ragpulse_judge_current_prompt", "gauge",
    "1 for the prompt version each judge of this deployment uses now (JudgeUnvalidated joins on it).",
    ("judge", "prompt_version"))

AGREEMENT_GAUGES = (JUDGE_AGREEMENT_LABELS, JUDGE_LABELS_LAST, JUDGE_CURRENT)
"""Read from the label store at scrape time (issue 22's review loop), not stored in the counters hash."""
