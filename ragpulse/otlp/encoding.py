"""The `Content-Encoding` of an OTLP/HTTP body: gzip (the OpenTelemetry exporters' and the Collector's default
compression) and deflate are inflated, never past a limit on the decompressed bytes, so a small compressed body
cannot make the API hold more than RAGPULSE_MAX_BODY_BYTES (a gzip bomb is a 413)."""

from __future__ import annotations

import zlib

from ragpulse.exceptions import MalformedBody, TooLarge, UnsupportedMediaType

GZIP, ZLIB, RAW_DEFLATE = 31, 15, -15
"""zlib's wbits for a gzip stream, a zlib stream (HTTP's `deflate`) and a bare deflate stream (what some clients
send as `deflate`)."""
IDENTITY = ("", "identity")


def decoded_body(body: bytes, content_encoding: str, limit: int) -> bytes:
    """`body` with its content codings undone, last applied first; TooLarge past `limit` decompressed bytes,
    UnsupportedMediaType for a coding other than gzip and deflate, MalformedBody for a corrupt stream."""
    for coding in reversed([c.strip().lower() for c in content_encoding.split(",")]):
        if coding in IDENTITY:
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise UnsupportedMediaType(f"Content-Encoding {coding!r} is not supported: send gzip, deflate or none",
                                       [{"path": "header.content-encoding", "message": "expected gzip or deflate"}])
        body = _inflate(body, GZIP if coding != "deflate" else _deflate_kind(body), coding, limit)
    return body


def _deflate_kind(body: bytes) -> int:
    """ZLIB when the body opens with a zlib header (RFC 1950: method 8, header checksum), else RAW_DEFLATE."""
    return ZLIB if len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0 else RAW_DEFLATE


def _inflate(body: bytes, wbits: int, coding: str, limit: int) -> bytes:
    """Every member of the stream (gzip allows several, one after another), at most `limit` bytes in all."""
    out: list[bytes] = []
    size, rest = 0, body
    while True:
        stream = zlib.decompressobj(wbits)
        try:
            chunk = stream.decompress(rest, limit - size + 1)
        except zlib.error as exc:
            raise MalformedBody(f"the {coding} body cannot be decompressed: {exc}") from None
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the {coding} body decompresses to more than {limit} bytes, the limit",
                           [{"path": "body", "message": f"at most {limit} bytes once decompressed"}])
        out.append(chunk)
        if not stream.eof:
            raise MalformedBody(f"the {coding} body is truncated")
        rest = stream.unused_data
        if wbits != GZIP or not rest:
            return b"".join(out)
