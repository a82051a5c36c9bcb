"""Online monitoring: sampling policy, Prometheus metrics aggregated through Redis, rolling windows."""
