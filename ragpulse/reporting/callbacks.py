"""Completion callbacks: POST a signed summary to an allowlisted URL when a job ends, so nobody has to poll.

Signature: header `X-Ragpulse-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, keyed with
RAGPULSE_CALLBACK_SECRET; receivers should check it and reject old timestamps (replays).

SSRF: a URL must match an allowlist entry and use https unless http is allowed. Entries are `host`, `host:port`,
`*.domain`, `*.domain:port`, an IP (`10.0.0.5`, `[::1]`, `::1`) or an IP with a port (`10.0.0.5:8080`,
`[::1]:8080`). An entry without a port admits any port; with one, it admits that port only, the URL's port being the
scheme's default (443 for https, 80 for http) when it names none. Unless the entry is an IP literal, the host is
resolved once, every address it resolves to must be public, and the delivery connects to one of those very
addresses (the Host header and TLS SNI still name the host), so a second lookup cannot rebind it to an internal
one. Redirects are not followed.
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

from ragpulse.config.callback_allowlist import HOST_NAME, IPAddress, Target, ip_or_none, parse_entry
from ragpulse.exceptions import CallbackRejected, DeliveryFailed

SIGNATURE_HEADER = "X-Ragpulse-Signature"
TIMEOUT_SECONDS = 10.0
"""Timeout of one delivery attempt."""
DEFAULT_PORTS = {"https": 443, "http": 80}
MAX_ADDRESSES = 4
"""At most this many of the host's (checked) addresses are tried, in resolver order, when connecting fails."""

def parse_target(url: str, allow_http: bool) -> Target:
    """The URL's scheme, host and effective port; CallbackRejected when it cannot be a callback URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise CallbackRejected(f"callback_url is not a valid URL: {exc}") from None
    if parts.scheme not in DEFAULT_PORTS or (parts.scheme == "http" and not allow_http):
        raise CallbackRejected("callback_url must use https" + (" or http" if allow_http else ""))
    if not parts.hostname or parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise CallbackRejected("callback_url must name a host and carry no credentials")
    if parts.netloc.endswith(":"):
        raise CallbackRejected("callback_url has an empty port")
    ip = ip_or_none(parts.hostname)
    if parts.netloc.startswith("[") and (ip is None or ip.version != 6):
        raise CallbackRejected("callback_url brackets must hold an IPv6 address")
    host = str(ip) if ip is not None else parts.hostname.removesuffix(".")
    if ip is None and not HOST_NAME.fullmatch(host):
        raise CallbackRejected("callback_url host is not a valid host name (IDNs in their xn-- form)")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        httpx.URL(f"{parts.scheme}://example.invalid{target}")
    except httpx.InvalidURL as exc:
        raise CallbackRejected(f"callback_url is not a valid URL: {exc}") from None
    return Target(parts.scheme, host, ip, port if port is not None else DEFAULT_PORTS[parts.scheme],
                  port is not None, target)


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
    """The allowlist entry that admits `url`; CallbackRejected with the reason otherwise.

    Entries that do not parse admit nothing (Settings refuses them at start-up)."""
    target = parse_target(url, allow_http)
    for text in allowlist:
        try:
            entry = parse_entry(text)
        except ValueError:
            continue
        if entry.admits(target):
            return text
    where = f"[{target.host}]" if target.ip is not None and target.ip.version == 6 else target.host
    raise CallbackRejected(f"callback_url host {where}:{target.port} is not in RAGPULSE_CALLBACK_ALLOWLIST")


def check_addresses(url: str, entry: str) -> list[IPAddress]:
    """The addresses a delivery may connect to: the IP itself for an IP entry (the operator's choice, private or
    not), else every address the host resolves to, all of which must be public (CallbackRejected otherwise).

    The host is resolved here, once; the delivery connects to these addresses and never resolves it again."""
    target = parse_target(url, allow_http=True)
    if parse_entry(entry).ip is not None:
        assert target.ip is not None
        return [target.ip]
    if target.ip is not None:                                    # an IP URL admitted by a name entry: impossible
        raise CallbackRejected(f"callback_url names the IP {target.ip}, allowlist entry {entry!r} a host")
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DeliveryFailed(f"cannot resolve {target.host}: {exc}") from None
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).partition("%")[0])
        if not _is_public(address):
            raise CallbackRejected(f"{target.host} resolves to non-public address {address}")
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise DeliveryFailed(f"cannot resolve {target.host}: no address")
    return addresses


def deliver(url: str, body: bytes, secret: str, allowlist: Iterable[str], allow_http: bool) -> int:
    """POST the signed body once; returns the status code, raises DeliveryFailed to be retried.

    Connects only to an address check_addresses approved, with the URL's host in the Host header and TLS SNI (the
    certificate is verified against the host name)."""
    entry = matching_entry(url, allowlist, allow_http)
    target = parse_target(url, allow_http)
    addresses = check_addresses(url, entry)
    headers = {"host": target.host_header, "content-type": "application/json",
               SIGNATURE_HEADER: sign(secret, body), "user-agent": "ragpulse-callback/1"}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" and target.ip is None else {}
    failure: Exception | None = None
    for address in addresses[:MAX_ADDRESSES]:
        try:
            with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as client:
                response = client.post(target.url_for(address), content=body, headers=headers,
                                       extensions=extensions)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            failure = exc                                        # this address is down: try the next checked one
            continue
        except httpx.HTTPError as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"receiver answered {response.status_code}")
        return response.status_code
    raise DeliveryFailed(f"{type(failure).__name__}: {failure}")


def _is_public(address: IPAddress) -> bool:
    """Globally routable. An IPv6 address is public only inside global unicast (2000::/3); one that carries an IPv4
    address (mapped, IPv4-compatible, NAT64, 6to4) is judged as that IPv4 address; 192.0.0.0/24 (IETF protocol
    assignments) never is."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried is not None:
            return _is_public(carried)
        return address in _GLOBAL_UNICAST and address.is_global and not address.is_multicast
    return address.is_global and not address.is_multicast and address not in _IETF_ASSIGNMENTS


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, IPv4-compatible, NAT64 well-known or local, 6to4), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if address in _NAT64 or address in _LOCAL_NAT64 or value >> 32 == 0 or value >> 32 == 0xFFFF0000:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)   # ::a.b.c.d, ::ffff:0:a.b.c.d (SIIT)
    return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_IETF_ASSIGNMENTS = ipaddress.IPv4Network("192.0.0.0/24")
