"""Running ragpulse: the `ragpulse` command, the local stack, a private redis-server, and the HTTP client."""
