"""Checks made before a request's body is read: the API key, the content type and the declared body size.

Litestar reads a `body: bytes` parameter while it resolves the handler's arguments, before any dependency (such as
`call`, which authenticates) runs. Checked there, a keyless client could make the API buffer up to the body limit
per connection, for as long as it cared to trickle the body in. So the app's `before_request` hook runs these checks
first, on the headers alone:

- a handler that takes `call` acts for a tenant: without a valid `Authorization: Bearer <key>` it is answered 401
  before one byte of body is read (the same rule as before: /healthz, /readyz, /metrics and /schema take no `call`
  and stay public); the tenant found is kept in the scope, so `call` does not hash the key a second time;
- a handler that takes `body` reads JSON: a body not sent as `application/json` (or `application/*+json`), or sent
  without a content type or with a content coding (`Content-Encoding: gzip`), is answered 415 unread (a handler that lists other media types in its `opt`, as the OTLP
  receiver does for protobuf, is held to those);
- a declared `Content-Length` over RAGPULSE_MAX_BODY_BYTES is answered 413 at once. A body without one (chunked) is
  counted by Litestar as it streams in and answered 413 as soon as it passes the limit, never buffered whole;
- open mode (no API keys, a loopback bind) answers 421 to a request whose `Host` is not a loopback name: a page of
  another site whose name was re-pointed to 127.0.0.1 (DNS rebinding) would otherwise read and write as tenant
  `default` from the user's browser (RAGPULSE_ALLOW_OPEN, a deliberately open bind, is not held to it).

These answers carry `Connection: close`: the unread body is not waited for, the server closes the connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Request, Response
from litestar.handlers import BaseRouteHandler

from ragpulse.config.settings import Settings, is_loopback_name
from ragpulse.exceptions import (InputError, InvalidParameter, MisdirectedRequest, TooLarge, Unauthorized,
                                 UnsupportedMediaType)
from service.auth import resolve_tenant
from service.context import TENANT_SCOPE_KEY, Services
from service.errors import rejection


def request_guard(services: Services) -> Callable[[Request], Awaitable[Response[Any] | None]]:
    """The app's `before_request` hook: None to go on, or the 401/415/413 problem that ends the request unread."""
    settings = services.settings
    rejected = services.api_metrics.rejected
    needs: dict[BaseRouteHandler, tuple[bool, bool]] = {}
    """Route handler -> (takes `call`: acts for a tenant, takes `body`: reads a body)."""

    async def guard(request: Request) -> Response[Any] | None:
        handler = request.route_handler
        if handler not in needs:
            parameters = handler.parsed_fn_signature.parameters
            needs[handler] = ("call" in parameters, "body" in parameters)
        tenant, reads_body = needs[handler]
        try:
            _check_host(request, settings)
            if tenant:
                request.scope[TENANT_SCOPE_KEY] = resolve_tenant(request, settings)  # type: ignore[literal-required]
            if reads_body:
                _check_media_type(request, handler.opt.get("media_types"))
            _check_declared_length(request, settings.max_body_bytes)
        except (Unauthorized, InputError, MisdirectedRequest) as exc:
            response = rejection(exc, {"connection": "close"})
            rejected.labels(status=str(response.status_code)).inc()
            return response
        return None

    return guard


def _check_media_type(request: Request, accepted: tuple[str, ...] | None) -> None:
    """JSON, unless the handler lists the media types it reads (`opt={"media_types": (...)}`: OTLP's protobuf)."""
    if accepted is None:
        _check_json(request)
        _check_plain(request)
        return
    media_type = request.content_type[0].lower()
    if media_type not in accepted:
        raise UnsupportedMediaType(
            f"send the body as {' or '.join(accepted)}, not {media_type or 'no content type'}",
            [{"path": "header.content-type", "message": f"expected {' or '.join(accepted)}"}])


def _check_json(request: Request) -> None:
    """415 unless the body says it is JSON: `application/json` or `application/<something>+json`, any parameters."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json" and not (media_type.startswith("application/") and media_type.endswith("+json")):
        raise UnsupportedMediaType(
            f"send the body as JSON with `Content-Type: application/json`, not {media_type or 'no content type'}",
            [{"path": "header.content-type", "message": "expected application/json"}])


def _check_plain(request: Request) -> None:
    """415 for a JSON body sent with a content coding: only the OTLP receiver inflates one (RFC 9110 15.5.16); read
    as it came, a gzip body was a misleading 400 and a plain one under `Content-Encoding: gzip` was taken as it was."""
    coding = request.headers.get("content-encoding", "").strip().lower()
    if coding not in ("", "identity"):
        raise UnsupportedMediaType(
            f"Content-Encoding {coding!r} is not supported here: send the JSON body uncompressed",
            [{"path": "header.content-encoding", "message": "expected no content coding"}])


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


def _check_host(request: Request, settings: Settings) -> None:
    """MisdirectedRequest when open mode on loopback is asked for another host (see the module docstring)."""
    if not settings.open_access or settings.allow_open:
        return
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
    if not is_loopback_name(name):
        raise MisdirectedRequest(f"this service is open (no API keys) to loopback only, and was asked for host "
                                 f"{host[:100]!r}: use http://127.0.0.1 or http://localhost, or configure API keys")
