"""Checks made before a request's body is read: the API key, and the declared body size.

Litestar reads a `body: bytes` parameter while it resolves the handler's arguments, before any dependency (such as
`call`, which authenticates) runs. Checked there, a keyless client could make the API buffer up to the body limit
per connection, for as long as it cared to trickle the body in. So the app's `before_request` hook runs these checks
first, on the headers alone:

- a handler that takes `call` acts for a tenant: without a valid `Authorization: Bearer <key>` it is answered 401
  before one byte of body is read (the same rule as before: /healthz, /readyz, /metrics and /schema take no `call`
  and stay public); the tenant found is kept in the scope, so `call` does not hash the key a second time;
- a declared `Content-Length` over RAGPULSE_MAX_BODY_BYTES is answered 413 at once. A body without one (chunked) is
  counted by Litestar as it streams in and answered 413 as soon as it passes the limit, never buffered whole.

Both answers carry `Connection: close`: the unread body is not waited for, the server closes the connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Request, Response

from ragpulse.exceptions import InputError, InvalidParameter, TooLarge, Unauthorized
from service.auth import resolve_tenant
from service.context import TENANT_SCOPE_KEY, Services
from service.errors import rejection

_NEEDS_TENANT: dict[int, bool] = {}
"""id(route handler) -> whether it takes `call` (handlers live as long as the app)."""


def request_guard(services: Services) -> Callable[[Request], Awaitable[Response[Any] | None]]:
    """The app's `before_request` hook: None to go on, or the 401/413 problem that ends the request unread."""
    settings = services.settings
    rejected = services.api_metrics.rejected

    async def guard(request: Request) -> Response[Any] | None:
        try:
            if _needs_tenant(request):
                request.scope[TENANT_SCOPE_KEY] = resolve_tenant(request, settings)  # type: ignore[literal-required]
            _check_declared_length(request, settings.max_body_bytes)
        except (Unauthorized, InputError) as exc:
            response = rejection(exc, {"connection": "close"})
            rejected.labels(status=str(response.status_code)).inc()
            return response
        return None

    return guard


def _needs_tenant(request: Request) -> bool:
    handler = request.route_handler
    needs = _NEEDS_TENANT.get(id(handler))
    if needs is None:
        needs = _NEEDS_TENANT[id(handler)] = "call" in handler.parsed_fn_signature.parameters
    return needs


def _check_declared_length(request: Request, limit: int) -> None:
    declared = request.headers.get("content-length")
    if declared is None:
        return
    if not declared.isascii() or not declared.isdigit():
        raise InvalidParameter(f"invalid Content-Length {declared!r}",
                               [{"path": "header.content-length", "message": "not a byte count"}])
    if len(declared) > len(str(limit)) or int(declared) > limit:
        raise TooLarge(f"the body declares {declared} bytes; the limit is {limit}",
                       [{"path": "header.content-length", "message": f"at most {limit} bytes"}])
