"""Idempotent posts: with an `Idempotency-Key` header, a retried POST /v1/traces or /v1/batches gets the first answer
again, and its traces are not counted again.

The answer is encoded before the post is committed and kept in Redis by the same script that commits it (the group
opens with a ONCE that refuses it when the key was answered, and closes with a REMEMBER of the answer: store.atomic),
so no crash or lost reply between the two can count a post twice or keep a key for a post that was not committed.
Only a committed post is kept: a refusal (4xx, 429, 503) is not, so its retry is judged afresh.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated

import anyio.to_thread
import msgspec
from litestar import Response
from litestar.params import HeaderParameter

from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.exceptions import AlreadyAnswered
from ragpulse.store.atomic import Group, once, remember

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
"""Set (`true`) on an answer replayed to a retry."""

IdempotencyKey = Annotated[str | None, HeaderParameter(
    name=HEADER, required=False, min_length=1, max_length=defaults.IDEMPOTENCY_KEY_MAX_CHARS,
    pattern=r"^[\x21-\x7e]+$",
    description="A key naming this post (a UUID, visible ASCII, at most 255 characters). A retry with the same key and "
                "body within RAGPULSE_IDEMPOTENCY_TTL_SECONDS gets the first answer again (with the header Idempotent-Replayed: "
                "true) and is not counted again; the same key with another body is refused 422.")]
"""The request header that makes a post idempotent."""

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class KeptAnswer:
    """The answer to a post sent with an Idempotency-Key, encoded once: kept with the post's writes, and sent."""

    record: str
    fingerprint: str
    status: int
    body: bytes
    settings: Settings

    def guard(self, writes: Group, tenant: str) -> Group:
        """`writes` opened by the key's ONCE and closed by the REMEMBER of this answer."""
        settings = self.settings
        return [once(self.record, self.fingerprint), *writes,
                remember(self.record, self.fingerprint, self.status, self.body, settings.idempotency_ttl_seconds,
                         keys.idempotency_keys(tenant), settings.idempotency_max_keys)]

    def response(self) -> Response[bytes]:
        return Response(self.body, status_code=self.status, media_type="application/json")


async def kept_answer(key: str | None, tenant: str, route: str, body: bytes, answer: object, status: int,
                      settings: Settings, on_loop: bool) -> KeptAnswer | None:
    """The answer to keep for a post sent with `key` (None without one); a large body is hashed off the loop."""
    if key is None:
        return None
    fingerprint = _digest(body) if on_loop else await anyio.to_thread.run_sync(_digest, body)
    return KeptAnswer(keys.idempotent_post(tenant, route, key), fingerprint, status, _encoder.encode(answer), settings)


def replay(exc: AlreadyAnswered) -> Response[bytes]:
    """The answer kept for a retried post, as it was first sent."""
    return Response(exc.body, status_code=exc.status, media_type="application/json",
                    headers={REPLAYED_HEADER: "true"})


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
