"""ragpulse: evaluate RAG systems in production.

The domain package: trace schema, metrics, reports and the Redis store. It imports neither Litestar nor RQ,
so the API and the workers share it and it can be tested without a server.
"""

__version__ = "0.1.0"
