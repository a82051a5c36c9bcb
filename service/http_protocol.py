"""uvicorn's httptools protocol with bounds on what one connection, and all of them, may hold: a cap on the request
head (request line plus headers, 431 past it), a deadline on it, caps on open connections, and its refusals of
malformed HTTP as problem bodies.

httptools, the fast parser uvicorn[standard] picks, has no limit of its own: it buffered a 16 MiB header before the
request reached the app, so before the key, content-type and length checks of service.guard could refuse it (the
h11 parser caps at 16 KiB, at ~14% fewer requests a second). A head past RAGPULSE_MAX_HEADER_BYTES is answered 431
(a problem body) and the connection closed.

Bounded in bytes only, a head could still take forever, and uvicorn times out only idle keep-alive connections,
after a response: one that sent nothing, or a header line now and then, held its socket and head buffer for good. A
head must now be complete RAGPULSE_HEAD_TIMEOUT_SECONDS after the connection opened or the previous response ended:
past it a partial head is answered 408 and a silent connection closed unanswered. One timer per head, armed with the
loop's call_later and cancelled when the head completes, costs less than a timeout around every read.

Past RAGPULSE_MAX_CONNECTIONS open connections, or RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS from one client address, a
new connection is answered 503 with Retry-After as soon as it opens, without reading its request, and closed. (A
client whose request was already sent may see the close, or a reset, before that answer.)
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import logging
import time
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from service.errors import PROBLEM, ProblemDetails, ProblemError

log = logging.getLogger("ragpulse.api")

REFUSAL_LOG_SECONDS = 10.0
"""Refused connections are logged at most once in this long, with their count: a flood must not flood the log too."""


@dataclasses.dataclass(kw_only=True)
class ConnectionBounds:
    """The bounds every connection of one server is held to, and the open connections they are counted over."""

    max_head_bytes: int
    head_timeout: float
    max_connections: int
    max_per_address: int
    open_total: int = 0
    open_by_address: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    refused: int = 0
    """Connections refused since the last log line about them."""
    logged_at: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionBounds:
        """The bounds the settings give, with nothing open yet."""
        return cls(max_head_bytes=settings.max_header_bytes, head_timeout=settings.head_timeout_seconds,
                   max_connections=settings.max_connections,
                   max_per_address=settings.max_connections_per_address)

    def admit(self, address: str) -> str | None:
        """Count a new connection from `address` in; or, over a cap, the setting it passes (it is not counted)."""
        if self.open_total >= self.max_connections:
            return self._refuse("RAGPULSE_MAX_CONNECTIONS", self.max_connections, "connections are open")
        if self.open_by_address[address] >= self.max_per_address:
            return self._refuse("RAGPULSE_MAX_CONNECTIONS_PER_ADDRESS", self.max_per_address,
                                "connections are open from this address")
        self.open_total += 1
        self.open_by_address[address] += 1
        return None

    def release(self, address: str) -> None:
        """Count out a connection `admit` counted in; an address with none left is forgotten."""
        self.open_total -= 1
        self.open_by_address[address] -= 1
        if not self.open_by_address[address]:
            del self.open_by_address[address]

    def _refuse(self, setting: str, cap: int, what: str) -> str:
        self.refused += 1
        now = time.monotonic()
        if now - self.logged_at >= REFUSAL_LOG_SECONDS:
            log.warning("%d connection(s) refused (503): %d %s (%s)", self.refused, cap, what, setting)
            self.refused, self.logged_at = 0, now
        return f"{cap} {what}, the limit ({setting}); retry shortly"


class BoundedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol holding each connection to `bounds`: 431 to a head past its bytes, 408 to one past its time,
    503 to a connection past a cap.

    The head's bytes are counted as they arrive, before the parser sees them, up to the blank line that ends it (a
    read that holds the end of a head and the start of a body counts only the head), so the cap is exact and a head
    is never buffered past it. Pipelined requests count from the read after the previous request ended."""

    def __init__(self, *args: Any, bounds: ConnectionBounds, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bounds = bounds
        self.max_head_bytes = bounds.max_head_bytes
        self.address: str | None = None
        """The client address this connection is counted under; None while it is not counted."""
        self.head_timer: asyncio.TimerHandle | None = None
        self._reset(in_head=True)

    def _reset(self, in_head: bool) -> None:
        self.in_head, self.head_bytes, self.tail = in_head, 0, b""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else ""
        if (refused := self.bounds.admit(address)) is not None:
            self._refuse(503, "Service Unavailable", refused,
                         headers={"retry-after": str(defaults.INFLIGHT_RETRY_AFTER_SECONDS)})
            return
        self.address = address
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        if self.address is not None:
            self.bounds.release(self.address)
            self.address = None
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._cancel_head_timer()
        self._reset(in_head=False)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._reset(in_head=True)
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next head is due from now, unless a pipelined request (its head in already) was started instead.
        if not self.transport.is_closing() and self.cycle.response_complete:
            self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        if self.address is None:        # refused at connection_made: its bytes are not read
            return
        if self.in_head and not self._head_fits(data):
            log.warning("request head over %d bytes refused (431)", self.max_head_bytes)
            self._refuse(431, "Request Header Fields Too Large",
                         f"the request line and headers pass {self.max_head_bytes} bytes (RAGPULSE_MAX_HEADER_BYTES)",
                         [ProblemError("header", f"at most {self.max_head_bytes} bytes of request line and headers")])
            return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes that are no HTTP request (a bad chunk size, a header name with a space), as a
        problem body like every other refusal instead of plain text."""
        self._refuse(400, "Bad Request", f"{msg.rstrip('.')}: the bytes sent are not a valid HTTP/1.1 request")

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self.head_timer = self.loop.call_later(self.bounds.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if self.transport.is_closing():
            return
        if not self.head_bytes:         # nothing of a request came: nobody is waiting for an answer
            self.transport.close()
            return
        seconds = self.bounds.head_timeout
        self._refuse(408, "Request Timeout",
                     f"the request line and headers did not arrive within {seconds:g} s "
                     "(RAGPULSE_HEAD_TIMEOUT_SECONDS); send them at once",
                     [ProblemError("header", f"not complete after {seconds:g} s")])

    def _refuse(self, status: int, title: str, detail: str, errors: list[ProblemError] | None = None,
                headers: dict[str, str] | None = None) -> None:
        body = msgspec.json.encode(ProblemDetails(title=title, status=status, detail=detail, errors=errors or []))
        extra = "".join(f"\r\n{name}: {value}" for name, value in (headers or {}).items())
        self.transport.write(f"HTTP/1.1 {status} {title}\r\ncontent-type: {PROBLEM}\r\ncontent-length: {len(body)}"
                             f"{extra}\r\nconnection: close\r\n\r\n".encode() + body)
        self.transport.close()

    def _head_fits(self, data: bytes) -> bool:
        seen = self.tail + data        # the blank line may straddle two reads
        ends = [i + len(blank) for blank in (b"\r\n\r\n", b"\n\n") if (i := seen.find(blank)) >= 0]
        self.head_bytes += len(data) if not ends else max(0, min(ends) - len(self.tail))
        self.tail = seen[-3:]
        return self.head_bytes <= self.max_head_bytes


def bounded_protocol(settings: Settings) -> type[BoundedProtocol]:
    """The protocol class to hand uvicorn (`http=`), its bounds bound: one count of connections per server."""

    class Bounded(BoundedProtocol):
        __init__ = functools.partialmethod(BoundedProtocol.__init__, bounds=ConnectionBounds.from_settings(settings))

    return Bounded
