"""uvicorn's httptools protocol with a cap on the request head (request line plus headers), 431 past it, and its
refusals of malformed HTTP as problem bodies.

httptools, the fast parser uvicorn[standard] picks, has no limit of its own: it buffered a 16 MiB header before the
request reached the app, so before the key, content-type and length checks of service.guard could refuse it (the
h11 parser caps at 16 KiB, at ~14% fewer requests a second). A head past RAGPULSE_MAX_HEADER_BYTES is answered 431
(a problem body) and the connection closed.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.errors import PROBLEM, ProblemDetails, ProblemError

log = logging.getLogger("ragpulse.api")


class HeadCappedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol answering 431 to a request whose head passes `max_head_bytes`.

    The head's bytes are counted as they arrive, before the parser sees them, up to the blank line that ends it (a
    read that holds the end of a head and the start of a body counts only the head), so the cap is exact and a head
    is never buffered past it. Pipelined requests count from the read after the previous request ended."""

    def __init__(self, *args: Any, max_head_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_head_bytes = max_head_bytes
        self._reset(in_head=True)

    def _reset(self, in_head: bool) -> None:
        self.in_head, self.head_bytes, self.tail = in_head, 0, b""

    def on_headers_complete(self) -> None:
        self._reset(in_head=False)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._reset(in_head=True)
        super().on_message_complete()

    def data_received(self, data: bytes) -> None:
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

    def _refuse(self, status: int, title: str, detail: str, errors: list[ProblemError] | None = None) -> None:
        body = msgspec.json.encode(ProblemDetails(title=title, status=status, detail=detail, errors=errors or []))
        self.transport.write(f"HTTP/1.1 {status} {title}\r\ncontent-type: {PROBLEM}\r\ncontent-length: {len(body)}"
                             f"\r\nconnection: close\r\n\r\n".encode() + body)
        self.transport.close()

    def _head_fits(self, data: bytes) -> bool:
        seen = self.tail + data        # the blank line may straddle two reads
        ends = [i + len(blank) for blank in (b"\r\n\r\n", b"\n\n") if (i := seen.find(blank)) >= 0]
        self.head_bytes += len(data) if not ends else max(0, min(ends) - len(self.tail))
        self.tail = seen[-3:]
        return self.head_bytes <= self.max_head_bytes


def head_capped(max_head_bytes: int) -> type[HeadCappedProtocol]:
    """The protocol class to hand uvicorn (`http=`), its cap bound."""

    class Capped(HeadCappedProtocol):
        __init__ = functools.partialmethod(HeadCappedProtocol.__init__, max_head_bytes=max_head_bytes)

    return Capped
