"""Completion callbacks: POST a signed summary to an allowlisted URL when a job ends, so nobody has to poll.

Signature: header `X-Ragpulse-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with
RAGPULSE_CALLBACK_SECRET; receivers should check it and reject old timestamps (replays).
SSRF: a URL must match an allowlist entry (`host`, `host:port` or `*.domain`), use https unless http is allowed,
and, unless the entry is an IP literal, resolve only to public addresses. Redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

import httpx

from ragpulse.exceptions import CallbackRejected, DeliveryFailed

SIGNATURE_HEADER = "X-Ragpulse-Signature"
TIMEOUT_SECONDS = 10.0
"""Timeout of one delivery attempt."""


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The signature header value for `body`."""
    ts = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={ts},v1={digest}"


def verify(secret: str, body: bytes, header: str, tolerance_seconds: int = 300) -> bool:
    """For receivers: the signature matches and is recent."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        ts = int(parts["t"])
    except (KeyError, ValueError):
        return False
    expected = sign(secret, body, ts).split("v1=", 1)[1]
    return abs(time.time() - ts) <= tolerance_seconds and hmac.compare_digest(expected, parts.get("v1", ""))


def matching_entry(url: str, allowlist: Iterable[str], allow_http: bool) -> str:
    """The allowlist entry that admits `url`; CallbackRejected with the reason otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or (parts.scheme == "http" and not allow_http):
        raise CallbackRejected("callback_url must use https" + (" or http" if allow_http else ""))
    if not parts.hostname or parts.username or parts.password:
        raise CallbackRejected("callback_url must name a host and carry no credentials")
    host, port = parts.hostname.lower(), parts.port
    for entry in allowlist:
        name, _, entry_port = entry.lower().partition(":")
        if entry_port and str(port) != entry_port:
            continue
        if host == name or (name.startswith("*.") and host.endswith(name[1:])):
            return entry
    raise CallbackRejected(f"callback_url host {host} is not in RAGPULSE_CALLBACK_ALLOWLIST")


def check_addresses(url: str, entry: str) -> None:
    """Refuse hosts resolving to loopback, private, link-local or reserved addresses, unless the entry is an IP."""
    host = urlsplit(url).hostname or ""
    if _is_ip(entry.partition(":")[0]):
        return
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as exc:
        raise DeliveryFailed(f"cannot resolve {host}: {exc}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise CallbackRejected(f"{host} resolves to non-public address {address}")


def deliver(url: str, body: bytes, secret: str, allowlist: Iterable[str], allow_http: bool) -> int:
    """POST the signed body once; returns the status code, raises DeliveryFailed to be retried."""
    entry = matching_entry(url, allowlist, allow_http)
    check_addresses(url, entry)
    headers = {"content-type": "application/json", SIGNATURE_HEADER: sign(secret, body),
               "user-agent": "ragpulse-callback/1"}
    try:
        response = httpx.post(url, content=body, headers=headers, timeout=TIMEOUT_SECONDS, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
    if not 200 <= response.status_code < 300:
        raise DeliveryFailed(f"receiver answered {response.status_code}")
    return response.status_code


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
