"""Schemathesis against the live API: every operation of /schema/openapi.json, over real HTTP, with every check.

Each operation gets EXAMPLES generated cases per phase (examples, coverage, fuzzing; positive and negative data),
from a fixed seed, derandomized and blind to what the server answers, so the same pytest invocation sends the same
requests every time (schemathesis also borrows literals from the Python modules loaded, so running this file alone
sends a few different ones than the whole suite does); it takes well under a minute. The stateful phase is off:
the job flow is covered end to end by test_api.py.

One exception, narrow: ACCEPTED_REJECTIONS (422s for schema-valid bodies, matched by message and path). Any 5xx,
undocumented status or schema mismatch fails.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis

pytestmark = pytest.mark.integration

KEY = "schemathesis-key"
EXAMPLES = 25
SEED = 20250611

ACCEPTED_REJECTIONS: dict[str, tuple[str, str]] = {
    # error message in a 422: (path prefix it must concern, why schema-valid data may get it)
    "callbacks are not configured": (
        "$.options.callback_url",
        "a callback URL needs the server's secret and allowlist, which no JSON schema can express",
    ),
    "is not configured on this service: set ": (
        "$.options.judge",
        "a judge needs the service's credentials or server (ANTHROPIC_API_KEY, RAGPULSE_OPENAI_*): server state",
    ),
    "is not configured on this service": (
        "$.judge",
        "a judge to qualify needs the service's credentials or server, as a batch's does: server state",
    ),
    "integer out of range: msgpack stores": (
        "$.traces[",
        "metadata is free-form JSON, but stored as msgpack: integers beyond 64 bits are refused at decode (documented)",
    ),
    "nested too deeply: at most": (
        "$.traces[",
        "metadata nesting is bounded (64 levels), which the free-form metadata schema does not state",
    ),
    "`targets` names `": (
        "$.options",
        "a target's cutoff (`recall@7`) must be one of the batch's `k`: a rule across two fields no JSON schema states",
    ),
    "a trace may only repeat it": (
        "$.traces[",
        "a trace's environment, when given, must be its batch's options.environment: a rule across two fields",
    ),
    "of dataset '": (
        "$.dataset",
        "a batch bound to a dataset names a version the tenant has pushed: server state, not something a schema states",
    ),
    "only a batch bound to a dataset takes item_id": (
        "$.traces[",
        "item_id needs the batch's `dataset` (and /v1/traces takes none): a rule across two fields",
    ),
    "(the retriever's results) or `job_id`": (
        "$",
        "the retrieval filter takes `runs` or `job_id`, exactly one: a rule across two fields",
    ),
    "gives fractions that must sum to 1": (
        "$",
        "a generation mix given as fractions with a `total` must sum to 1: a rule over a map's values",
    ),
    "candidates; at most ": (
        "$",
        "a generation mix's counts may sum to at most GENERATION_MAX_CANDIDATES: a rule over a map's values",
    ),
    "gives fractions: give `total` too": (
        "$",
        "a generation mix of fractions needs `total` (whole counts do not): a rule across two fields",
    ),
    "repeats an earlier ": (
        "$",
        "item ids (of a dataset version) and chunk ids (of a generation's corpus) must be unique: JSON Schema cannot say "
        "a property is unique across array items",
    ),
    "is out of range once converted to UTC": (
        "$.traces[",
        "an RFC 3339 time whose offset takes it past year 1 or 9999 in UTC: a range no JSON schema format states",
    ),
    "duplicate trace_id": (
        "$.traces[",
        "trace ids must be unique within a batch; JSON Schema cannot say a property is unique across array items",
    ),
    "is labelled again, ": (
        "$.labels[",
        "one calibration label per trace: JSON Schema cannot say a property is unique across array items",
    ),
    "already has a verdict at": (
        "$.labels[",
        "one verdict per claim within a label: the same rule, for claim indexes",
    ),
    "has no judge verdict to compare with": (
        "$.trace_id",
        "a label needs a trace the judge has judged: server state, not something a JSON schema can express",
    ),
    "is reserved for POST /v1/calibrations": (
        "$",
        "the reviewer name `calibration` is kept for calibration labels; the schema's pattern does not single it out",
    ),
    "`retrieval_answerable` is set from a dataset item": (
        "$.traces[",
        "the retrieval filter's flag comes with a dataset item: a trace without `item_id` (null included) cannot "
        "carry it",
    ),
    "`turn` needs `session_id`": (
        "$.traces[",
        "a turn index without its session: the pair is given together, which JSON Schema states only for presence, "
        "not for a null `session_id`",
    ),
    "already used with a different body": (
        "header.idempotency-key",
        "an Idempotency-Key names one post: the same key with another body is refused, server state no schema states",
    ),
}
"""Schema-valid bodies the API refuses with a 422, each matched by message and path and nothing else: on purpose
(callbacks, judges without credentials, storage limits of free-form metadata, unique trace ids and labels). A whole float (3.0) for an integer field is
accepted (ragpulse/intake/whole.py), so it needs no entry."""


def accepted_rejection(failure: Any, response: Any) -> bool:
    """A positive-data rejection (ST202) whose 422 lists only errors from ACCEPTED_REJECTIONS."""
    if failure.code != "ST202" or response.status_code != 422:
        return False
    errors = response.json().get("errors") or [{}]
    return all(any(message in error.get("message", "") and error.get("path", "").startswith(path)
                   for message, (path, _) in ACCEPTED_REJECTIONS.items()) for error in errors)


@pytest.fixture
def api_schema(request: pytest.FixtureRequest, api_factory, stack) -> schemathesis.BaseSchema:
    """An API of its own, with an API key (so authentication is tested too), sharing the session's workers."""
    # schemathesis 4.32.5 renames the pytest node through `node._nodeid`, an attribute pytest 9.2 no longer has
    # (it keeps the id in `_id`); give it one, or the lazy schema fails before running anything.
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid
    url = api_factory({**stack.env, "RAGPULSE_API_KEYS": f"fuzz:{KEY}"})
    config = schemathesis.Config.from_dict({
        "seed": SEED,
        "generation": {"max-examples": EXAMPLES, "deterministic": True, "mode": "all"},
        # Generation must not depend on what the server answered (its error messages, values it returned), or the
        # cases would change with whatever other tests left in Redis: the same seed gives the same requests.
        "phases": {
            "stateful": {"enabled": False},
            "examples": {"extra-data-sources": {"responses": False}},
            "coverage": {"extra-data-sources": {"responses": False}},
            "fuzzing": {"extra-data-sources": {"responses": False}, "error-feedback": {"enabled": False}},
        },
        "checks": {"enabled": True},
        "auth": {"openapi": {"bearerAuth": {"bearer": KEY}}},
        "request-timeout": 30,
    })
    schema = schemathesis.openapi.from_url(f"{url}/schema/openapi.json", config=config)

    @schema.hook
    def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
        return not accepted_rejection(failure, response)

    return schema


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
def test_every_operation_conforms(case: schemathesis.Case) -> None:
    case.call_and_validate()
