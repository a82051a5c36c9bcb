"""OpenAPI: document the batch body with msgspec's own JSON schema, the one the API actually enforces."""

from __future__ import annotations

import msgspec
from litestar import Litestar
from litestar.openapi.spec import OpenAPIMediaType, Reference, RequestBody

from ragpulse.model.calibration import CalibrationRequest
from ragpulse.monitoring.sampling import SamplingPolicy
from ragpulse.model.trace import BatchRequest

_REF = "#/components/schemas/{name}"


BODIES = {("/v1/batches", "post"): BatchRequest, ("/v1/calibrations", "post"): CalibrationRequest,
          ("/v1/apps/{app}/policy", "put"): SamplingPolicy}
"""Routes that decode their raw body themselves, with the msgspec type they enforce."""


def document_bodies(app: Litestar) -> None:
    """Replace the raw-bytes bodies of BODIES with their msgspec schemas and components."""
    spec = app.openapi_schema
    refs, components = msgspec.json.schema_components(list(BODIES.values()), ref_template=_REF)
    spec.components.schemas.update(components)  # type: ignore[arg-type]
    for (path, method), ref in zip(BODIES, refs):
        operation = getattr(spec.paths[path], method)  # type: ignore[index]
        operation.request_body = RequestBody(
            content={"application/json": OpenAPIMediaType(schema=Reference(ref=ref["$ref"]))}, required=True,
            description=f"{BODIES[path, method].__doc__} Unknown fields are rejected.",
        )


