"""OpenAPI: what the API really does, written into the document Litestar generates.

Request bodies the handlers decode themselves are documented with msgspec's own JSON schema, the one the API
enforces; the bearer-key security scheme is declared and required on every /v1 operation; and each operation lists
the problem-details errors (service/errors.py) it can answer, with their schema, in place of Litestar's stock 400.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Litestar
from litestar.openapi.spec import (
    Components, OpenAPIHeader, OpenAPIMediaType, OpenAPIResponse, Reference, RequestBody, Schema, SecurityScheme,
)

from ragpulse.qualification.model import QualificationRequest
from ragpulse.metrics.registry import metric_key_pattern
from ragpulse.model.calibration import CalibrationRequest
from ragpulse.model.dataset import DatasetVersionPost
from ragpulse.model.generation import GenerateRequest, RetrievalFilterPost
from ragpulse.model.labels import LabelRequest
from ragpulse.model.results import Accepted
from ragpulse.monitoring.sampling import PolicyUpdate
from ragpulse.model.trace import BatchRequest, TracesPost
from service.batches import DryRun
from service.traces import TracesAccepted
from service.errors import PROBLEM, ProblemDetails

_REF = "#/components/schemas/{name}"
BEARER = "bearerAuth"
"""Name of the security scheme: `Authorization: Bearer <api key>`."""

BODIES = {("/v1/batches", "post"): BatchRequest, ("/v1/traces", "post"): TracesPost,
          ("/v1/calibrations", "post"): CalibrationRequest, ("/v1/labels", "post"): LabelRequest,
          ("/v1/apps/{app}/policy", "put"): PolicyUpdate, ("/v1/datasets/{name}/versions", "post"): DatasetVersionPost,
          ("/v1/datasets/{name}/generate", "post"): GenerateRequest,
          ("/v1/datasets/{name}/versions/{version}/retrieval-filter", "post"): RetrievalFilterPost,
          ("/v1/judges/qualify", "post"): QualificationRequest}
"""Routes that decode their raw body themselves, with the msgspec type they enforce."""

ERRORS: dict[tuple[str, str], tuple[int, ...]] = {
    ("/v1/batches", "post"): (400, 401, 413, 415, 422, 429, 503),
    ("/v1/traces", "post"): (400, 401, 413, 415, 422, 429, 503),
    ("/v1/traces/{trace_id}", "get"): (400, 401, 404, 503),
    ("/v1/sessions/{session_id}", "get"): (400, 401, 404, 503),
    ("/v1/otlp/v1/traces", "post"): (400, 401, 413, 415, 429, 503),
    ("/v1/jobs", "get"): (400, 401, 503),
    ("/v1/jobs/{job_id}", "get"): (400, 401, 404, 503),
    ("/v1/jobs/{job_id}/results", "get"): (400, 401, 404, 503),
    ("/v1/jobs/{job_id}/retry", "post"): (400, 401, 404, 409, 503),
    ("/v1/jobs/{job_id}/cancel", "post"): (400, 401, 404, 409, 503),
    ("/v1/jobs/{job_id}/report", "get"): (400, 401, 404, 503),
    ("/v1/jobs/{job_id}/report.html", "get"): (400, 401, 404, 503),
    ("/v1/jobs/{job_id}/compare", "get"): (400, 401, 404, 409, 422, 503),
    ("/v1/calibrations", "post"): (400, 401, 404, 409, 413, 415, 422, 503),
    ("/v1/labels", "post"): (400, 401, 404, 413, 415, 422, 503),
    ("/v1/labels", "get"): (400, 401, 404, 503),
    ("/v1/apps/{app}/review", "get"): (400, 401, 503),
    ("/v1/apps/{app}/agreement", "get"): (400, 401, 503),
    ("/v1/apps/{app}/policy", "get"): (400, 401, 503),
    ("/v1/apps/{app}/policy", "put"): (400, 401, 409, 413, 415, 422, 503),
    ("/v1/apps/{app}/policy", "delete"): (400, 401, 503),
    ("/v1/monitor/{app}", "get"): (400, 401, 503),
    ("/v1/datasets", "get"): (400, 401, 503),
    ("/v1/datasets/{name}/versions", "post"): (400, 401, 409, 413, 415, 422, 503),
    ("/v1/datasets/{name}/versions", "get"): (400, 401, 404, 503),
    ("/v1/datasets/{name}/versions/{version}", "get"): (400, 401, 404, 503),
    ("/v1/datasets/{name}/versions/{version}", "delete"): (400, 401, 404, 503),
    ("/v1/datasets/{name}", "delete"): (400, 401, 404, 503),
    ("/v1/datasets/{name}/generate", "post"): (400, 401, 413, 415, 422, 429, 503),
    ("/v1/datasets/{name}/generations", "get"): (400, 401, 404, 503),
    ("/v1/datasets/{name}/generations/{job_id}", "get"): (400, 401, 404, 503),
    ("/v1/datasets/{name}/versions/{version}/retrieval-filter", "post"): (400, 401, 404, 409, 413, 415, 422, 503),
    ("/v1/datasets/{name}/versions/{version}/publish", "post"): (400, 401, 404, 503),
    ("/v1/judges/qualify", "post"): (400, 401, 413, 415, 422, 503),
    ("/v1/judges/qualify/{job_id}", "get"): (400, 401, 404, 503),
    ("/v1/judges/qualifications", "get"): (400, 401, 503),
    ("/healthz", "get"): (),
    ("/readyz", "get"): (503,),
    ("/metrics", "get"): (401,),
}
"""The problem-details statuses each operation can answer (a test checks that every operation is listed)."""

POST_422 = ("The body breaks the schema (`errors` lists every failing path, at most 100), or its `Idempotency-Key` "
            "was sent before with another body (`errors` names `header.idempotency-key`).")
"""POST /v1/traces' and /v1/batches' 422: the same two causes."""

_WHY = {
    400: "Malformed JSON, or a path or query parameter out of range; `errors` names it (`query.limit`).",
    401: "Missing or unknown API key: send `Authorization: Bearer <api key>`.",
    404: "No such job for this tenant (another tenant's jobs are not found either).",
    408: "The body did not arrive in full within RAGPULSE_BODY_READ_TIMEOUT_SECONDS; the connection is closed.",
    409: "The request conflicts with the job's state; `errors` names the input.",
    413: "The body, or the number of traces, exceeds a configured limit.",
    415: "The body does not say it is JSON: send `Content-Type: application/json`.",
    422: "The body is JSON but breaks the schema; `errors` lists every failing path (at most 100).",
    429: "The tenant is over its ingest rate (RAGPULSE_TENANT_TRACES_PER_SECOND); retry after `Retry-After` seconds.",
    503: ("Redis is unreachable or refused the write, or the API holds its budget of request bodies "
          "(RAGPULSE_MAX_INFLIGHT_BODY_BYTES); retry after `Retry-After` seconds."),
}
_WHY_HERE = {
    ("/v1/jobs/{job_id}/retry", "post", 409): "The job is still queued or running; retry it once it has ended "
                                              "(`errors` names `path.job_id`).",
    ("/v1/jobs/{job_id}/cancel", "post", 409): "The job has already ended (`errors` names `path.job_id`).",
    ("/v1/jobs/{job_id}/compare", "get", 409): "The job or the baseline is still queued or running, or failed "
                                                "(`errors` names `path.job_id` or `query.baseline`); or, with "
                                                "on_mismatch=refuse, the two ran different dataset versions "
                                                "or items (`errors` names `query.baseline`); or, unless "
                                                "on_judge_mismatch=warn, the two were judged by different judges, "
                                                "models or prompt versions, or a judged metric was named while a "
                                                "side judged under 90% of its traces (`errors` names "
                                                "`query.baseline`).",
    ("/v1/jobs/{job_id}/compare", "get", 422): "pairwise=true asks a judge that cannot compare two answers (local, a "
                                                "heuristic, or none) or is not configured on this service (`errors` "
                                                "names `query.judge`).",
    ("/v1/otlp/v1/traces", "post", 400): "The body is not an OTLP ExportTraceServiceRequest in the encoding its "
                                          "Content-Type names.",
    ("/v1/otlp/v1/traces", "post", 415): "Send `application/x-protobuf` or `application/json` (OTLP/HTTP).",
    ("/v1/calibrations", "post", 409): "The job is still queued or running, or failed (`errors` names `$.job_id`).",
    ("/v1/calibrations", "post", 422): "The body breaks the schema; no label matches a judged trace of the job "
                                       "(`errors` names each `$.labels[i].trace_id`); a trace is labelled twice "
                                       "(the second `$.labels[i].trace_id`); or a claim is given two verdicts, or "
                                       "is past the end of the judge's claims (`$.labels[i].claims[j].index`).",
    ("/metrics", "get", 401): "RAGPULSE_METRICS_TOKEN is set and the request does not send it as `Authorization: "
                              "Bearer <metrics token>` (an API key opens no metrics).",
    ("/v1/traces/{trace_id}", "get", 404): "No record of this trace for this tenant: it was not sampled (only "
                                            "counted), its record expired, or it is another tenant's.",
    ("/v1/sessions/{session_id}", "get", 404): "No sampled turn of this session is kept for this tenant: none was "
                                                "sampled, they expired, or the session is another tenant's.",
    ("/v1/traces", "post", 503): "Redis is unreachable or refused the write, or the online stream holds "
                                 "RAGPULSE_ONLINE_MAX_BACKLOG unprocessed posts (workers are behind); retry after "
                                 "`Retry-After` seconds.",
    ("/v1/labels", "post", 404): "The trace (or its job) is not this tenant's, or has expired: an online trace "
                                 "keeps its record RAGPULSE_ONLINE_RESULT_TTL_SECONDS (its review copy "
                                 "RAGPULSE_REVIEW_TEXT_TTL_SECONDS), a batch trace RAGPULSE_RESULT_TTL_SECONDS.",
    ("/v1/labels", "post", 422): "The body breaks the schema (`errors` names each failing path), or the trace has no "
                                 "judge verdict (`errors` names `$.trace_id`).",
    ("/v1/labels", "get", 404): "The trace has no label and is not this tenant's (or has expired).",
    ("/v1/traces", "post", 422): POST_422,
    ("/v1/datasets/{name}/versions", "post", 409): "The tenant's dataset storage is full (RAGPULSE_DATASETS_PER_TENANT, "
                                                   "RAGPULSE_DATASET_VERSIONS_MAX or RAGPULSE_DATASET_ITEMS_PER_TENANT); "
                                                   "`errors` names `path.name` or `$.items`.",
    ("/v1/datasets/{name}/versions", "get", 404): "The tenant has no dataset of this name (another tenant's are not "
                                                  "found either).",
    ("/v1/datasets/{name}/generate", "post", 422): "The body breaks the schema (`errors` lists every failing path), "
                                                   "or the judge cannot write questions: generation needs an LLM "
                                                   "judge (anthropic or openai) configured on the service (`errors` "
                                                   "names `$.judge`).",
    ("/v1/datasets/{name}/generate", "post", 429): "The tenant already has its maximum of queued generation jobs "
                                                   "(4), or of their requests' bytes (64 MiB): post again once a "
                                                   "worker has started one (`errors` names `path.name`).",
    ("/v1/datasets/{name}/generations", "get", 404): "The tenant has neither a dataset of this name nor a generation "
                                                     "job for one (`errors` names `path.name`).",
    ("/v1/datasets/{name}/generations/{job_id}", "get", 404): "No generation job with this id for this dataset and "
                                                               "tenant, or it has expired (RAGPULSE_RESULT_TTL_SECONDS).",
    ("/v1/datasets/{name}/versions/{version}/retrieval-filter", "post", 404): "The tenant has no such dataset or "
                                                                               "version.",
    ("/v1/datasets/{name}/versions/{version}/retrieval-filter", "post", 409): "The version is published: the filter "
                                                                               "applies to drafts (`errors` names "
                                                                               "`path.version`), or the tenant's "
                                                                               "dataset storage is full.",
    ("/v1/datasets/{name}/versions/{version}/publish", "post", 404): "The tenant has no such dataset or version.",
    ("/v1/datasets/{name}/versions/{version}", "get", 404): "The tenant has no such dataset or version (another "
                                                            "tenant's are not found either).",
    ("/v1/batches", "post", 422): POST_422,
    ("/v1/apps/{app}/policy", "put", 400): "Malformed JSON, or an invalid app name.",
    ("/v1/apps/{app}/policy", "put", 409): "The tenant already has the maximum number of apps with a stored policy "
                                           "(RAGPULSE_MAX_APPS_PER_TENANT); `errors` names `path.app`. DELETE one "
                                           "app's policy to make room.",
}
_HEADERS = {
    401: {"WWW-Authenticate": "`Bearer`"},
    429: {"Retry-After": "Seconds until the traces fit the tenant's ingest rate, or, for a generation post, to wait "
                         "for a worker to start one of the tenant's queued jobs."},
    503: {"Retry-After": "Seconds to wait before retrying."},
}


def document(app: Litestar) -> None:
    """Everything this module adds to the app's OpenAPI document."""
    spec = app.openapi_schema
    components = spec.components if spec.components is not None else Components()
    spec.components = components
    schemas = components.schemas if components.schemas is not None else {}
    components.schemas = schemas
    document_bodies(app, schemas)
    _document_otlp(app)
    _document_results(app, schemas)
    _worst_values_any_of(schemas)
    _document_security(app, components)
    _document_errors(app, schemas)


OTLP_JSON_SCHEMA = Schema(
    type="object",  # type: ignore[arg-type]
    properties={"resourceSpans": Schema(type=["array", "null"], items=Schema(  # type: ignore[arg-type]
        type="object", properties={},  # type: ignore[arg-type]
        description="OTLP ResourceSpans (opentelemetry-proto's ExportTraceServiceRequest; ids in hex)"))})
"""OTLP/JSON's outer shape; the spans inside follow opentelemetry-proto, which OpenAPI does not restate. Unknown
fields are allowed (OTLP receivers ignore them, so newer exporters keep working) and null reads as empty (proto3's
JSON mapping)."""


def _document_otlp(app: Litestar) -> None:
    """The OTLP receiver's body: an ExportTraceServiceRequest in protobuf or JSON (Litestar sees only bytes)."""
    operation = _operation(app, "/v1/otlp/v1/traces", "post")
    operation.request_body = RequestBody(
        content={"application/x-protobuf": OpenAPIMediaType(schema=Schema(type="string", format="binary")),
                 "application/json": OpenAPIMediaType(schema=OTLP_JSON_SCHEMA)},
        required=True, description="An OTLP/HTTP ExportTraceServiceRequest (protobuf, or OTLP/JSON).")
    operation.responses["200"] = OpenAPIResponse(
        description="ExportTraceServiceResponse in the request's encoding; `partialSuccess.rejectedSpans` counts the "
                    "spans refused.",
        content={"application/x-protobuf": OpenAPIMediaType(schema=Schema(type="string", format="binary")),
                 "application/json": OpenAPIMediaType(schema=Schema(type="object"))})  # type: ignore[arg-type]


def document_bodies(app: Litestar, schemas: dict[str, Any]) -> None:
    """Replace the raw-bytes bodies of BODIES with their msgspec schemas and components."""
    refs, found = msgspec.json.schema_components(list(BODIES.values()), ref_template=_REF)
    _add_date_time_formats(found, BODIES.values())
    # Trace.__post_init__ refuses both label kinds at once; say so, or a schema-valid trace would get a 422.
    for trace in ("Trace", "PostedTrace", "DatasetItem"):
        found[trace]["not"] = {"required": ["gold_doc_ids", "relevance"],
                               "properties": {"gold_doc_ids": {"type": "array"}, "relevance": {"type": "object"}}}
    # BatchOptions.targets takes metric keys of the registry only (a cutoff must also be in `k`, which no schema says).
    found["BatchOptions"]["properties"]["targets"]["anyOf"][0]["propertyNames"]["pattern"] = metric_key_pattern()
    schemas.update(found)
    for (path, method), ref in zip(BODIES, refs):
        operation = _operation(app, path, method)
        operation.request_body = RequestBody(
            content={"application/json": OpenAPIMediaType(schema=Reference(ref=ref["$ref"]))}, required=True,
            description=f"{BODIES[path, method].__doc__} Unknown fields are rejected.",
        )


_DATE_TIME = {"format": "date-time",
              "pattern": r"^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-5][0-9]"}
"""What msgspec accepts as a datetime: RFC 3339, but no year 0000 and no leap second (`23:59:60`); msgspec 0.23's
own schema says only `string`."""


def _add_date_time_formats(components: dict[str, Any], types: Any) -> None:
    """Give every datetime field of the structs reachable from `types` its date-time format (in place)."""
    seen: set[type] = set()
    pending = list(msgspec.inspect.multi_type_info(list(types)))
    while pending:
        info = pending.pop()
        if isinstance(info, msgspec.inspect.StructType):
            if info.cls in seen:
                continue
            seen.add(info.cls)
            for field in info.fields:
                members = field.type.types if isinstance(field.type, msgspec.inspect.UnionType) else (field.type,)
                if any(isinstance(m, msgspec.inspect.DateTimeType) for m in members):
                    prop = components[info.cls.__name__]["properties"][field.encode_name]
                    for schema in prop.get("anyOf", [prop]):
                        if schema.get("type") == "string":
                            schema.update(_DATE_TIME)
                pending += [m for m in members if not isinstance(m, msgspec.inspect.DateTimeType)]
        elif isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.FrozenSetType,
                               msgspec.inspect.VarTupleType)):
            pending.append(info.item_type)
        elif isinstance(info, msgspec.inspect.DictType):
            pending.append(info.value_type)
        elif isinstance(info, msgspec.inspect.UnionType):
            pending += list(info.types)


_REPLAYED = {"Idempotent-Replayed": OpenAPIHeader(
    description="`true` on an answer replayed to a retry with the same `Idempotency-Key` (nothing was written).",
    schema=Schema(type="string"))}  # type: ignore[arg-type]


def _document_results(app: Litestar, schemas: dict[str, Any]) -> None:
    """Bodies Litestar cannot infer: the batch's and the online post's 202 (`Accepted`, not `Accepted | anything`: a
    replay is a Response of the same body), the dry run's 200, and the HTML report's answers while there is no
    report."""
    (accepted, dry_run, traces), found = msgspec.json.schema_components([Accepted, DryRun, TracesAccepted],
                                                                         ref_template=_REF)
    # The dry run's Estimate (a cost) is not the report's Estimate (a mean with its interval): rename it.
    found = _renamed(found, {"Estimate": "CostEstimate"})
    schemas.update({name: schema for name, schema in found.items() if name not in schemas})
    batches = _operation(app, "/v1/batches", "post")
    batches.responses["202"] = OpenAPIResponse(
        description="The batch is stored and queued; poll `status_url`. A retry with the same `Idempotency-Key` gets "
                    "this answer again.",
        content={"application/json": OpenAPIMediaType(schema=Reference(ref=accepted["$ref"]))},
        headers=_REPLAYED)
    online = _operation(app, "/v1/traces", "post")
    online.responses["202"] = OpenAPIResponse(
        description="The traces are on the online stream. A retry with the same `Idempotency-Key` gets this answer "
                    "again.",
        content={"application/json": OpenAPIMediaType(schema=Reference(ref=traces["$ref"]))},
        headers=_REPLAYED)
    batches.responses["200"] = OpenAPIResponse(
        description="`?dry_run=true`: the estimated judge calls, tokens and cost; nothing is enqueued.",
        content={"application/json": OpenAPIMediaType(schema=Reference(ref=dry_run["$ref"]))})
    qualify = _operation(app, "/v1/judges/qualify", "post")
    priced = {"application/json": OpenAPIMediaType(schema=Reference(ref=_REF.format(name="QualificationPriced")))}
    qualify.responses["202"] = OpenAPIResponse(
        description="The run is priced and enqueued; poll `status_url`.", content=priced)
    qualify.responses["200"] = OpenAPIResponse(
        description="`dry_run: true`: the estimated judge calls, tokens and cost of the run; nothing is enqueued.",
        content=priced)
    page = _operation(app, "/v1/jobs/{job_id}/report.html", "get")
    html = {"text/html": OpenAPIMediaType(schema=Schema(type="string"))}  # type: ignore[arg-type]
    page.responses["202"] = OpenAPIResponse(description="The job is still running: a short page saying so.",
                                            content=html)
    page.responses["409"] = OpenAPIResponse(description="The job ended without a report: a short page saying so.",
                                            content=html)


def _worst_values_any_of(schemas: dict[str, Any]) -> None:
    """A worst-trace row's values are strings, integers, numbers or lists: an integer matches both `integer` and
    `number`, which `oneOf` (what Litestar writes for a union) forbids, so the union is an `anyOf`."""
    worst = schemas["Report"].properties["worst"].items.additional_properties
    worst.any_of, worst.one_of = worst.one_of, None


def _document_security(app: Litestar, components: Components) -> None:
    components.security_schemes = {BEARER: SecurityScheme(
        type="http", scheme="bearer",
        description="An API key from RAGPULSE_API_KEYS; it decides the tenant. Without configured keys the service "
                    "runs open on loopback only, and every caller is tenant `default`.")}
    for path, method in ERRORS:
        if path.startswith("/v1/"):
            _operation(app, path, method).security = [{BEARER: []}]


def _document_errors(app: Litestar, schemas: dict[str, Any]) -> None:
    (ref,), found = msgspec.json.schema_components([ProblemDetails], ref_template=_REF)
    schemas.update(found)
    content = {PROBLEM: OpenAPIMediaType(schema=Reference(ref=ref["$ref"]))}
    for (path, method), statuses in ERRORS.items():
        responses = _operation(app, path, method).responses
        for status in (*statuses, *((408,) if 413 in statuses else ())):   # what reads a body can be too slow
            headers = {name: OpenAPIHeader(description=text, schema=Schema(type="string"))  # type: ignore[arg-type]
                       for name, text in _HEADERS.get(status, {}).items()}
            responses[str(status)] = OpenAPIResponse(
                description=_WHY_HERE.get((path, method, status), _WHY[status]), content=content,
                headers=headers or None)


def _operation(app: Litestar, path: str, method: str) -> Any:
    operation = getattr(app.openapi_schema.paths[path], method)  # type: ignore[index]
    if operation is None:
        raise KeyError(f"no {method.upper()} {path} in the OpenAPI document")
    return operation


def _renamed(components: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """`components` with those in `names` renamed: their keys and every `$ref` to them."""
    refs = {_REF.format(name=old): _REF.format(name=new) for old, new in names.items()}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: refs.get(item, item) if key == "$ref" else walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return {names.get(name, name): walk(schema) for name, schema in components.items()}
