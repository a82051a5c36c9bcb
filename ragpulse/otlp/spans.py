"""The part of an OpenTelemetry span ragpulse reads: ids, timing, kind, and the attributes of the conventions it
knows (OpenInference; OpenLLMetry and the GenAI semantic conventions), flattened to plain values."""

from __future__ import annotations

from typing import Any

import msgspec

READ_PREFIXES = ("openinference.", "input.", "output.", "retrieval.", "reranker.", "llm.", "gen_ai.", "traceloop.",
                 "session.", "user.")
"""Attributes outside these namespaces are dropped at decode: only what assembly reads is buffered."""
DEPLOYMENT_ATTRIBUTES = ("deployment.environment.name", "deployment.environment")
"""The resource attributes that name its deployment, in the order read: the semantic conventions' name since 1.27,
then the one before it."""


class SpanRecord(msgspec.Struct, kw_only=True, array_like=True):
    """One span as buffered in Redis (msgpack)."""

    trace_id: str
    """32 lowercase hex characters, the OpenTelemetry trace id."""
    span_id: str
    parent_id: str
    """"" for a root span."""
    name: str
    start_ns: int
    end_ns: int
    service: str
    """The resource's `service.name` ("" when unset)."""
    attributes: dict[str, Any]
    deployment: str = ""
    """The resource's `deployment.environment.name` (or the older `deployment.environment`), "" when unset. Last and
    defaulted: spans buffered before it existed decode without it."""

    @property
    def kind(self) -> str:
        """The span's role: RETRIEVER, RERANKER, LLM, CHAIN, ... (OpenInference), or inferred from OpenLLMetry /
        GenAI attributes; "" when none says."""
        declared = self.attributes.get("openinference.span.kind")
        if isinstance(declared, str) and declared:
            return declared.upper()
        if "gen_ai.operation.name" in self.attributes or "gen_ai.system" in self.attributes:
            return "EMBEDDING" if self.attributes.get("gen_ai.operation.name") == "embeddings" else "LLM"
        if self.attributes.get("traceloop.span.kind") in ("workflow", "agent"):
            return "CHAIN"
        if "retrieval.documents.0.document.id" in self.attributes:
            return "RETRIEVER"
        return ""

    @property
    def duration_ms(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e6


def kept(key: str) -> bool:
    """True for an attribute assembly reads."""
    return key.startswith(READ_PREFIXES)


_sizer = msgspec.msgpack.Encoder()


def capped(value: Any, limit: int) -> tuple[Any, str | None]:
    """An attribute value within `limit` bytes: (the value, None) when it fits, (its first `limit` bytes, "truncated")
    for a longer string (cut at a character boundary), (None, "dropped") for any other longer value."""
    if isinstance(value, str):
        if len(value) * 4 <= limit:             # at most 4 UTF-8 bytes a character: fits without encoding
            return value, None
        raw = value.encode("utf-8", "surrogatepass")
        return (value, None) if len(raw) <= limit else (raw[:limit].decode("utf-8", "ignore"), "truncated")
    if isinstance(value, list | dict) and len(_sizer.encode(value)) > limit:
        return None, "dropped"
    return value, None
