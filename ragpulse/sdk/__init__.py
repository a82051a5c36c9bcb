"""A light Python SDK for ragpulse: log production traces from an app without blocking it, and run evaluations.

    from ragpulse.sdk import RagpulseClient
    client = RagpulseClient("http://127.0.0.1:8080", api_key="...")
    client.log_trace(query="How long is the warranty?", answer="Two years.", app="support-bot")

It needs httpx and the standard library only: importing it loads none of the service's dependencies (Litestar,
Redis, RQ, numpy, msgspec), which `tests/test_sdk.py` checks.
"""

from ragpulse.exceptions import RagpulseSDKError
from ragpulse.sdk.client import RagpulseClient
from ragpulse.sdk.stats import Stats
from ragpulse.sdk.types import Comparison, Job, Report, TraceRecord

__all__ = ["Comparison", "Job", "RagpulseClient", "RagpulseSDKError", "Report", "Stats", "TraceRecord"]
