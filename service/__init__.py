"""The HTTP API of ragpulse (Litestar). Thin: validation, storage and metrics live in ragpulse/."""
