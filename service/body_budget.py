"""A budget of request-body bytes for the whole process: past it a body is refused before it is read.

RAGPULSE_MAX_BODY_BYTES bounds one body, not how many the API holds at once, and a body costs a few times its size
while it is buffered, joined and decoded (bench/README.md). So each body claims its bytes against
RAGPULSE_MAX_INFLIGHT_BODY_BYTES when the app first reads it (a request the guard refuses on its headers claims
nothing) and keeps them until its response is sent, when what it was decoded into is gone too:

- a declared `Content-Length` is claimed whole before one byte is read: a body larger than the budget alone raises
  OverBodyBudget (413), one that does not fit beside those in flight BodiesInFlight (503 with Retry-After);
- a chunked body claims its bytes as they arrive, and is refused the same way when a chunk does not fit.

Either answer carries `Connection: close` (service.errors): the unread rest of the body is not waited for.
"""

from __future__ import annotations

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from ragpulse.exceptions import BodiesInFlight, OverBodyBudget


class BodyBudget:
    """Bytes of request bodies claimed across the process (one event loop: no lock needed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def claim(self, size: int, body_total: int) -> None:
        """Hold `size` more bytes for a body that will then have claimed `body_total`, or raise why not."""
        if body_total > self.limit:
            raise OverBodyBudget(body_total, self.limit)
        if self.held + size > self.limit:
            raise BodiesInFlight(size, self.held, self.limit)
        self.held += size


def body_budget(budget: BodyBudget):  # noqa: ANN201 - a Litestar middleware factory
    """Middleware making each HTTP request's body claim its bytes from `budget` until the response is sent."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def within_budget(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            claim = _Claim(budget, _declared_length(scope))
            try:
                await app(scope, claim.wrap(receive), send)
            finally:
                budget.held -= claim.claimed

        return within_budget

    return middleware


class _Claim:
    """One request's claim: the declared length at the first read, else each chunk's bytes as it arrives."""

    def __init__(self, budget: BodyBudget, declared: int | None) -> None:
        self.budget, self.declared = budget, declared
        self.claimed = 0
        self.received = 0

    def wrap(self, receive: Receive) -> Receive:
        async def receive_claimed() -> Message:
            if self.declared and not self.claimed:
                self.budget.claim(self.declared, self.declared)
                self.claimed = self.declared
            message = await receive()
            if message["type"] == "http.request" and (size := len(message.get("body", b""))):
                self.received += size
                if self.received > self.claimed:       # chunked (a declared length is never passed: httptools)
                    self.budget.claim(self.received - self.claimed, self.received)
                    self.claimed = self.received
            return message

        return receive_claimed


def _declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, None without a valid one (service.guard answers an invalid one 400)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() and len(value) < 20 else None
    return None
