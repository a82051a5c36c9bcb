"""Review-page logins: a random session id in the browser's cookie, its SHA-256 in Redis with the tenant it acts for.

Only the digest is stored, so a Redis dump holds no usable cookie. Each session carries its own CSRF token, which
every form of the review pages repeats. Sessions expire `ttl` seconds after login (never renewed by use), and a
tenant holds at most `cap` of them: a login beyond it ends the tenant's oldest.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping

import msgspec
import redis

from ragpulse.config import keys

SESSION_ID_BYTES = 32
"""Entropy of a session id and of its CSRF token (256 bits, as a URL-safe string)."""

LOGIN_FAILURES_ALLOWED = 10
"""Failed logins one client address may make per window before every login from it is refused until the window
ends: a person mistyping a key is not slowed, a script guessing keys gets 10 a minute instead of hundreds a second."""

LOGIN_FAILURE_WINDOW_SECONDS = 60
"""The window the failed logins are counted in, from the first failure."""


class ReviewSession(msgspec.Struct, kw_only=True):
    """What a review-page cookie stands for: the tenant it acts as and the token its forms carry."""

    tenant: str
    csrf: str
    expires_at: int
    """Epoch seconds; Redis drops the record then too."""
    reviewer: str | None = None
    """The name last submitted with a label, offered again in the next form."""
    key_digest: str | None = None
    """The digest of the API key that opened the session (None in open mode): a session is good only while that key
    is still configured, so replacing a leaked key ends the sessions it opened."""

    def opened_by_a_live_key(self, digests: Mapping[str, str]) -> bool:
        """The key that opened this session is still one of `digests` (open-mode sessions and those stored before the
        field have none to check)."""
        return self.key_digest is None or self.key_digest in digests

    def csrf_matches(self, token: str) -> bool:
        """The form's token is this session's, compared in constant time."""
        return hmac.compare_digest(self.csrf.encode(), token.encode())


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(ReviewSession).decode


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class ReviewSessions:
    """Open, find, update and close review-page sessions."""

    def __init__(self, client: redis.Redis, ttl: int, cap: int) -> None:
        self.redis, self.ttl, self.cap = client, ttl, cap

    def login_throttled(self, address: str) -> int | None:
        """Seconds until `address` may try to log in again when it has used up its failed logins, else None."""
        key = keys.review_login_failures(address)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(key)
            pipe.ttl(key)
            failures, ttl = pipe.execute()
        if int(failures or 0) < LOGIN_FAILURES_ALLOWED:
            return None
        return max(1, int(ttl)) if ttl and ttl > 0 else LOGIN_FAILURE_WINDOW_SECONDS

    def login_failed(self, address: str) -> None:
        """Count one failed login from `address`; the window starts at the first."""
        key = keys.review_login_failures(address)
        with self.redis.pipeline(transaction=True) as pipe:
            # SET NX EX opens the window (EXPIRE's NX flag needs Redis 7; the embedded server is 6.2); INCR keeps it
            pipe.set(key, 0, ex=LOGIN_FAILURE_WINDOW_SECONDS, nx=True)
            pipe.incr(key)
            pipe.execute()

    def open(self, tenant: str, key_digest: str | None = None) -> tuple[str, ReviewSession]:
        """A new session for `tenant`, opened with the key whose digest is `key_digest`: (the id for the cookie, the
        session); the tenant's oldest ends beyond the cap."""
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        now = time.time()
        session = ReviewSession(tenant=tenant, csrf=secrets.token_urlsafe(SESSION_ID_BYTES),
                                expires_at=int(now) + self.ttl, key_digest=key_digest)
        index, digest = keys.review_sessions(tenant), _digest(session_id)
        pipe = self.redis.pipeline()
        pipe.set(keys.review_session(digest), _encode(session), ex=self.ttl)
        pipe.zremrangebyscore(index, "-inf", now)
        pipe.zadd(index, {digest: now + self.ttl})   # to the microsecond: two logins in one second stay in order
        pipe.expire(index, self.ttl)
        pipe.zrange(index, 0, -self.cap - 1)      # the oldest beyond the cap (none while under it)
        evicted = pipe.execute()[-1]
        if evicted:
            pipe.zrem(index, *evicted)
            pipe.delete(*(keys.review_session(d.decode()) for d in evicted))
            pipe.execute()
        return session_id, session

    def find(self, session_id: str) -> ReviewSession | None:
        """The live session behind a cookie value, or None (unknown, expired, evicted or logged out)."""
        if not session_id or len(session_id) > 4 * SESSION_ID_BYTES:
            return None
        raw = self.redis.get(keys.review_session(_digest(session_id)))
        return None if raw is None else _decode(raw)

    def remember_reviewer(self, session_id: str, session: ReviewSession, reviewer: str) -> None:
        """Keep the reviewer's name with the session (its expiry unchanged)."""
        if session.reviewer != reviewer:
            session.reviewer = reviewer
            self.redis.set(keys.review_session(_digest(session_id)), _encode(session), keepttl=True, xx=True)

    def close(self, session_id: str) -> None:
        """Log out: the cookie no longer opens anything."""
        session = self.find(session_id)
        digest = _digest(session_id)
        self.redis.delete(keys.review_session(digest))
        if session is not None:
            self.redis.zrem(keys.review_sessions(session.tenant), digest)
