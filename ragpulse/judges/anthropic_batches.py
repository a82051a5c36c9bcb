"""Anthropic Message Batches as a BatchApi (ragpulse.judges.batches): create, retrieve, results (JSONL), cancel,
through the official async SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

from ragpulse.config import defaults
from ragpulse.judges.batches import OUTCOMES, BatchOutcome, BatchRequest, BatchState


class AnthropicBatches:
    """`client.messages.batches` of the anthropic SDK."""

    max_requests = defaults.BATCH_MAX_REQUESTS
    max_bytes = defaults.BATCH_MAX_BYTES

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.client = client

    async def create(self, requests: Sequence[BatchRequest]) -> str:
        """Submit one batch; its id."""
        batch = await self.client.messages.batches.create(
            requests=[{"custom_id": r.custom_id, "params": r.params} for r in requests])  # type: ignore[misc]
        return batch.id

    async def retrieve(self, batch_id: str) -> BatchState:
        """Processing status and request counts."""
        batch = await self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        return BatchState(batch_id, batch.processing_status, {name: getattr(counts, name) for name in OUTCOMES})

    async def results(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        """Every request's outcome from the results JSONL (the batch must have ended)."""
        async for line in await self.client.messages.batches.results(batch_id):
            yield _outcome(line)

    async def cancel(self, batch_id: str) -> None:
        """Ask Anthropic to stop the batch."""
        await self.client.messages.batches.cancel(batch_id)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self.client.close()


def _outcome(line: Any) -> BatchOutcome:
    result = line.result
    match result.type:
        case "succeeded":
            return BatchOutcome(line.custom_id, "succeeded", message=result.message)
        case "errored":
            error = getattr(result.error, "error", None)
            text = f"{getattr(error, 'type', 'error')}: {getattr(error, 'message', '')}" if error else "errored"
            return BatchOutcome(line.custom_id, "errored", error=text)
    return BatchOutcome(line.custom_id, result.type)
