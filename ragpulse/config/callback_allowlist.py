"""Callback allowlist entries (RAGPULSE_CALLBACK_ALLOWLIST), parsed: settings check them at start-up and
reporting/callbacks matches callback URLs against them (the forms and the SSRF rules are in its docstring)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
"""An ASCII host name (IDNs go in their xn-- form), lowercased, trailing dot removed."""


@dataclass(frozen=True)
class Entry:
    """One parsed allowlist entry."""

    text: str
    host: str
    """Lowercased host name, `*.domain`, or the IP's canonical text."""
    ip: IPAddress | None
    port: int | None
    """None: any port."""

    def admits(self, target: Target) -> bool:
        if self.port is not None and self.port != target.port:
            return False
        if self.ip is not None or target.ip is not None:
            return self.ip == target.ip
        if self.host.startswith("*."):
            return target.host.endswith(self.host[1:])
        return target.host == self.host


@dataclass(frozen=True)
class Target:
    """Where a callback URL points: scheme, host (name or IP), effective port, and the request target."""

    scheme: str
    host: str
    ip: IPAddress | None
    port: int
    explicit_port: bool
    target: str
    """Path and query, as sent on the request line."""

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if self.ip is not None and self.ip.version == 6 else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    def url_for(self, address: IPAddress) -> str:
        """The URL with the host replaced by `address`, the one that was checked."""
        host = f"[{address}]" if address.version == 6 else str(address)
        return f"{self.scheme}://{host}:{self.port}{self.target}"


def parse_entry(entry: str) -> Entry:
    """An allowlist entry, parsed; ValueError when it is not one of the documented forms."""
    text = entry.strip()
    raw = text.lower()
    if raw.count(":") > 1 and not raw.startswith("["):          # a bare IPv6 address: no port possible
        ip = ipaddress.ip_address(raw)
        return Entry(text, str(ip), ip, None)
    try:
        parts = urlsplit("//" + raw)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid callback allowlist entry {text!r}: {exc}") from None
    if (not parts.hostname or parts.path or parts.query or parts.fragment or "@" in parts.netloc
            or parts.netloc.endswith(":")):
        raise ValueError(f"invalid callback allowlist entry {text!r}: expected host, host:port or *.domain")
    host = parts.hostname
    if parts.netloc.startswith("["):                            # brackets hold an IPv6 address, nothing else
        try:
            ip: IPAddress | None = ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise ValueError(f"invalid callback allowlist entry {text!r}: {exc}") from None
    else:
        ip = ip_or_none(host)
    if ip is not None:
        return Entry(text, str(ip), ip, port)
    name = host.removesuffix(".")
    bare = name[2:] if name.startswith("*.") else name
    if not HOST_NAME.fullmatch(bare):
        raise ValueError(f"invalid callback allowlist entry {text!r}: not a host name")
    return Entry(text, name, None, port)


def ip_or_none(host: str) -> IPAddress | None:
    """The IP address `host` spells, or None for a host name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
