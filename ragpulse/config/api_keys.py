"""API keys: parsed once, kept only as SHA-256 digests, mapped to tenants."""

from __future__ import annotations

import hashlib
import hmac
import re

from ragpulse.exceptions import ConfigError

_TENANT = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")


def hash_key(key: str) -> str:
    """SHA-256 hex digest of an API key; the only form in which keys are kept in memory or on disk."""
    return hashlib.sha256(key.encode()).hexdigest()


def parse_key_specs(text: str, source: str) -> dict[str, str]:
    """Parse `tenant:key` or `tenant:sha256:<hex>` entries (comma- or newline-separated) into digest -> tenant."""
    digests: dict[str, str] = {}
    entries = [e.strip() for e in re.split(r"[,\n]", text)]
    for n, entry in enumerate(e for e in entries if e and not e.startswith("#")):
        tenant, sep, secret = entry.partition(":")
        if not sep or not secret or not _TENANT.match(tenant):
            raise ConfigError(f"{source}: entry {n + 1} must be 'tenant:key' with tenant matching {_TENANT.pattern}")
        pre_hashed = _DIGEST.match(secret)
        digests[pre_hashed.group(1) if pre_hashed else hash_key(secret)] = tenant
    return digests


def tenant_for_key(key: str, digests: dict[str, str]) -> str | None:
    """The tenant owning `key`, compared in constant time, or None."""
    candidate = hash_key(key)
    for digest, tenant in digests.items():
        if hmac.compare_digest(candidate, digest):
            return tenant
    return None
