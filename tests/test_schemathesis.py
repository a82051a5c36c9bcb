"""Schemathesis against the live API: every operation of /schema/openapi.json, over real HTTP, with every check.

Each operation gets EXAMPLES generated cases per phase (examples, coverage, fuzzing; positive and negative data),
from a fixed seed, derandomized and blind to what the server answers, so the same pytest invocation sends the same
requests every time (schemathesis also borrows literals from the Python modules loaded, so running this file alone
sends a few different ones than the whole suite does); it takes well under a minute. The stateful phase is off:
the job flow is covered end to end by test_api.py.

Two exceptions, both narrow: ACCEPTED_REJECTIONS (422s for schema-valid bodies, matched by message and path), and a
5xx for a request in INTAKE_CATEGORIES, which marks that operation xfail while another engineer fixes them.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
import pytest
import schemathesis
from schemathesis.core.failures import FailureGroup

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
    "Expected `int`, got `float`": (
        "$.",
        "a whole float (3.0) for an integer field: valid JSON Schema (draft 6 on), refused by the strict msgspec "
        "decoder in ragpulse/intake/decode.py, which another engineer owns for now; the fix belongs there",
    ),
}
"""Schema-valid bodies the API refuses with a 422, each matched by message and path and nothing else: on purpose
(callbacks), or until the decoder accepts whole floats (to be fixed in ragpulse/intake, not here)."""


INTAKE_CATEGORIES = ("trailing bytes after JSON", "1e999", ">64-bit ints", "deep nesting",
                     "unicode digits in the cursor", "text/plain bodies", "duplicate keys")
INTAKE_REASON = ("5xx for odd input, being fixed in ragpulse/intake and service/auth.py by another engineer: "
                 + ", ".join(INTAKE_CATEGORIES))


def intake_category(response: Any) -> str | None:
    """The INTAKE_CATEGORIES entry a 5xx's request falls in, if any."""
    if response.status_code < 500:
        return None
    request = response.request
    cursors = parse_qs(urlsplit(request.url).query).get("cursor", [])
    if any(not cursor.isascii() for cursor in cursors):
        return "unicode digits in the cursor"
    if request.headers.get("content-type", "").startswith("text/plain"):
        return "text/plain bodies"
    body = request.body.encode() if isinstance(request.body, str) else request.body
    if not body:
        return None
    try:
        value = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        return "trailing bytes after JSON" if "trailing characters" in str(exc) else None
    except msgspec.ValidationError as exc:
        return "1e999" if "out of range" in str(exc) else None
    except RecursionError:
        return "deep nesting"
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not -2**63 <= item < 2**64:
            return ">64-bit ints"
        pending += item.values() if isinstance(item, dict) else item if isinstance(item, list) else []
    duplicated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicated
        duplicated |= len({key for key, _ in items}) < len(items)
        return dict(items)

    json.loads(body, object_pairs_hook=pairs)
    return "duplicate keys" if duplicated else None


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


def check(case: schemathesis.Case) -> None:
    """Call the API and run every check. Any failure fails, except a 5xx for a request in INTAKE_CATEGORIES: that
    operation is marked xfail (pytest.xfail ends its run at once), naming the category and the request."""
    response = case.call()
    try:
        case.validate_response(response, transport_kwargs={})
    except FailureGroup:
        category = intake_category(response)
        if category is None:
            raise
        pytest.xfail(f"{INTAKE_REASON} [this one: {category}: {case.as_curl_command()[:500]}]")


@schema.parametrize()
def test_every_operation_conforms(case: schemathesis.Case) -> None:
    check(case)
