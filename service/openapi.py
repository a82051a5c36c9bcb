"""OpenAPI: document the batch body with msgspec's own JSON schema, the one the API actually enforces."""

from __future__ import annotations

import msgspec
from litestar import Litestar
from litestar.openapi.spec import OpenAPIMediaType, Reference, RequestBody

from ragpulse.schema import BatchRequest

_REF = "#/components/schemas/{name}"


def document_batch_body(app: Litestar) -> None:
    """Replace the raw-bytes body of POST /v1/batches with the BatchRequest schema and its components."""
    spec = app.openapi_schema
    (ref,), components = msgspec.json.schema_components([BatchRequest], ref_template=_REF)
    spec.components.schemas.update(components)  # type: ignore[arg-type]
    operation = spec.paths["/v1/batches"].post  # type: ignore[index,union-attr]
    operation.request_body = RequestBody(
        content={"application/json": OpenAPIMediaType(schema=Reference(ref=ref["$ref"]))}, required=True,
        description="A batch of traces and evaluation options. Unknown fields are rejected.",
    )


