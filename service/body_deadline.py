"""A deadline on reading a request's body: a client that trickles its body in is answered 408 and cut off.

The guard (service.guard) keeps keyless clients from making the API read a body at all, but an authenticated one
could still send a body of up to RAGPULSE_MAX_BODY_BYTES a few bytes at a time and keep that buffer alive for as long
as it liked; ten such connections held 213 MB. The whole body must now arrive within
RAGPULSE_BODY_READ_TIMEOUT_SECONDS of the request's headers: past it, reading the body raises BodyTimeout, which
service.errors answers 408 with `Connection: close`, so the server drops the connection and its buffer.
"""

from __future__ import annotations

import asyncio

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ragpulse.exceptions import BodyTimeout


def body_deadline(seconds: float):  # noqa: ANN201 - a Litestar middleware factory
    """Middleware giving each HTTP request `seconds` to deliver its whole body."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def with_deadline(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            await app(scope, _by_deadline(receive, seconds), send)

        return with_deadline

    return middleware


def _by_deadline(receive: Receive, seconds: float) -> Receive:
    """`receive`, raising BodyTimeout when the body is not complete `seconds` after now; once it is, as it was."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    complete = False

    async def receive_by_deadline() -> Message:
        nonlocal complete
        if complete:     # the body is in: waiting for a disconnect is not reading a body
            return await receive()
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            raise BodyTimeout(seconds) from None
        complete = message["type"] != "http.request" or not message.get("more_body", False)
        return message

    return receive_by_deadline
