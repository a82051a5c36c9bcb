"""Stored sampling policies, per tenant and app, with the configured default for apps without one."""

from __future__ import annotations

import time
from collections.abc import Iterable

import msgspec
import redis
import redis.asyncio

from ragpulse.config import defaults, keys
from ragpulse.exceptions import Conflict
from ragpulse.store import scripts
from ragpulse.monitoring.sampling import PolicyInForce, SamplingPolicy, policy_in_force

POLICY_TTL_SECONDS = 400 * 86400
"""A policy unused for 400 days expires; every read and write refreshes it."""
_decoder = msgspec.json.Decoder(SamplingPolicy)


class PolicyStore:
    """GET, PUT and DELETE of sampling policies; at most `max_apps` stored per tenant."""

    def __init__(self, client: redis.Redis, default_rate: float, max_apps: int,
                 review_rate: float = defaults.REVIEW_SAMPLE_RATE) -> None:
        self.redis = client
        self.default = SamplingPolicy(sample_rate=default_rate)
        self.max_apps = max_apps
        self.review_rate = review_rate
        self._put = client.register_script(scripts.PUT_POLICY)

    def get(self, tenant: str, app: str) -> SamplingPolicy:
        """The app's policy, or the configured default."""
        return self.stored(tenant, app) or self.default

    def stored(self, tenant: str, app: str) -> SamplingPolicy | None:
        """The app's stored policy, None when it has none."""
        raw = self.redis.get(keys.app_policy(tenant, app))
        if raw is None:
            return None
        self.redis.expire(keys.app_policy(tenant, app), POLICY_TTL_SECONDS)
        return _decoder.decode(raw)

    def apps(self, tenant: str) -> list[str]:
        """The tenant's apps with a stored policy, sorted (at most `max_apps`)."""
        return sorted(raw.decode() for raw in self.redis.smembers(keys.tenant_apps(tenant)))

    def in_force(self, tenant: str, app: str) -> PolicyInForce:
        """The policy in force for the app, every rule spelled out with where its value comes from."""
        return policy_in_force(app, self.stored(tenant, app), self.default.sample_rate, self.review_rate)

    def put(self, tenant: str, app: str, policy: SamplingPolicy) -> SamplingPolicy:
        """Store the app's policy, checked against the cap and written in one script; Conflict (409) when the tenant
        already has `max_apps` other apps with a stored policy."""
        held = int(self._put(keys=[keys.tenant_apps(tenant), keys.app_policy(tenant, app)],
                             args=[app, msgspec.json.encode(policy), POLICY_TTL_SECONDS, self.max_apps]))
        if held >= 0:
            raise Conflict(f"tenant already has {held} app policies, the most it may store", [{
                "path": "path.app", "message": f"{held} apps already have a stored policy "
                                               f"(RAGPULSE_MAX_APPS_PER_TENANT={self.max_apps}); DELETE one's "
                                               "policy to make room"}])
        return policy

    def delete(self, tenant: str, app: str) -> None:
        """Drop the app's stored policy (it falls back to the default) and free its place under the cap."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(keys.app_policy(tenant, app))
            pipe.srem(keys.tenant_apps(tenant), app)
            pipe.execute()


class PolicyCache:
    """Sampling policies for the online ingest path, read on the event loop and kept `ttl_seconds`: a PUT takes
    effect on online posts within that long. Holds at most MAX_CACHED apps (cleared when full)."""

    MAX_CACHED = 10_000

    def __init__(self, client: redis.asyncio.Redis, default_rate: float,
                 ttl_seconds: float = defaults.POLICY_CACHE_SECONDS) -> None:
        self.redis = client
        self.default = SamplingPolicy(sample_rate=default_rate)
        self.ttl = ttl_seconds
        self._cached: dict[tuple[str, str], tuple[float, SamplingPolicy]] = {}

    async def policies(self, tenant: str, apps: Iterable[str]) -> dict[str, SamplingPolicy]:
        """The policy of each app (stored, else the default), reading the stale or missing ones in one round trip."""
        now = time.monotonic()
        found, missing = {}, []
        for app in set(apps):
            hit = self._cached.get((tenant, app))
            if hit is not None and hit[0] > now:
                found[app] = hit[1]
            else:
                missing.append(app)
        if missing:
            names = [keys.app_policy(tenant, app) for app in missing]
            raw = await self.redis.mget(names)
            if len(self._cached) + len(missing) > self.MAX_CACHED:
                self._cached.clear()
            for app, value in zip(missing, raw):
                policy = _decoder.decode(value) if value is not None else self.default
                self._cached[(tenant, app)] = (now + self.ttl, policy)
                found[app] = policy
        return found
