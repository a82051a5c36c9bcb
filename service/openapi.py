"""OpenAPI: document the batch body with msgspec's own JSON schema, the one the API actually enforces."""

from __future__ import annotations

import msgspec
from litestar import Litestar
from litestar.openapi.spec import OpenAPIMediaType, Reference, RequestBody

from ragpulse.calibration import CalibrationRequest
from ragpulse.schema import BatchRequest

_REF = "#/components/schemas/{name}"


BODIES = {"/v1/batches": BatchRequest, "/v1/calibrations": CalibrationRequest}
"""POST routes that decode their raw body themselves, with the msgspec type they enforce."""


def document_bodies(app: Litestar) -> None:
    """Replace the raw-bytes bodies of BODIES with their msgspec schemas and components."""
    spec = app.openapi_schema
    refs, components = msgspec.json.schema_components(list(BODIES.values()), ref_template=_REF)
    spec.components.schemas.update(components)  # type: ignore[arg-type]
    for path, ref in zip(BODIES, refs):
        operation = spec.paths[path].post  # type: ignore[index,union-attr]
        operation.request_body = RequestBody(
            content={"application/json": OpenAPIMediaType(schema=Reference(ref=ref["$ref"]))}, required=True,
            description=f"{BODIES[path].__doc__} Unknown fields are rejected.",
        )


