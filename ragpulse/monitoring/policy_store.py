"""Stored sampling policies, per tenant and app, with the configured default for apps without one."""

from __future__ import annotations

import msgspec
import redis

from ragpulse.config import keys
from ragpulse.exceptions import InvalidParameter
from ragpulse.monitoring.sampling import PolicyInForce, SamplingPolicy, policy_in_force

POLICY_TTL_SECONDS = 400 * 86400
"""A policy unused for 400 days expires; every read and write refreshes it."""
_decoder = msgspec.json.Decoder(SamplingPolicy)


class PolicyStore:
    """GET and PUT of sampling policies; at most `max_apps` stored per tenant."""

    def __init__(self, client: redis.Redis, default_rate: float, max_apps: int) -> None:
        self.redis = client
        self.default = SamplingPolicy(sample_rate=default_rate)
        self.max_apps = max_apps

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

    def in_force(self, tenant: str, app: str) -> PolicyInForce:
        """The policy in force for the app, every rule spelled out with where its value comes from."""
        return policy_in_force(app, self.stored(tenant, app), self.default.sample_rate)

    def put(self, tenant: str, app: str, policy: SamplingPolicy) -> SamplingPolicy:
        """Store the app's policy; 400 when the tenant already has `max_apps` others."""
        apps_key = keys.tenant_apps(tenant)
        if not self.redis.sismember(apps_key, app) and self.redis.scard(apps_key) >= self.max_apps:
            raise InvalidParameter(f"tenant already has {self.max_apps} app policies",
                                   [{"path": "path.app", "message": "too many apps with a stored policy"}])
        with self.redis.pipeline() as pipe:
            pipe.set(keys.app_policy(tenant, app), msgspec.json.encode(policy), ex=POLICY_TTL_SECONDS)
            pipe.sadd(apps_key, app)
            pipe.expire(apps_key, POLICY_TTL_SECONDS)
            pipe.execute()
        return policy
