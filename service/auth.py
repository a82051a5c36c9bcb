"""Bearer-key authentication: every request resolves to one tenant."""

from __future__ import annotations

from litestar import Request

from ragpulse.config.api_keys import tenant_for_key
from ragpulse.exceptions import Unauthorized
from ragpulse.config.settings import Settings

OPEN_TENANT = "default"
"""The tenant every request acts as when no API keys are configured (loopback only)."""


def resolve_tenant(request: Request, settings: Settings) -> str:
    """The calling tenant, from `Authorization: Bearer <key>`; Unauthorized when missing or unknown."""
    if settings.open_access:
        return OPEN_TENANT
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key:
        raise Unauthorized("send `Authorization: Bearer <api key>`")
    tenant = tenant_for_key(key.strip(), settings.api_key_digests)
    if tenant is None:
        raise Unauthorized("unknown API key")
    return tenant
