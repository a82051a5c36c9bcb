"""Anthropic Message Batches as a BatchApi (ragpulse.judges.batches): create, retrieve, results (JSONL), cancel,
through the official async SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic
from anthropic.types.messages import MessageBatchIndividualResponse

from ragpulse.config import defaults
from ragpulse.exceptions import JudgeError, JudgeUnavailable
from ragpulse.judges.batches import (
    OUTCOMES, BatchLookup, BatchOutcome, BatchRequest, BatchState, created_id, read_line,
)

API = "Anthropic Message Batches API"
BASE_URL_SETTING = "RAGPULSE_JUDGE_BASE_URL"


class AnthropicBatches:
    """`client.messages.batches` of the anthropic SDK."""

    max_requests = defaults.BATCH_MAX_REQUESTS
    max_bytes = defaults.BATCH_MAX_BYTES

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.client = client

    async def create(self, requests: Sequence[BatchRequest], key: str) -> str:
        """Submit one batch; its id. (Message Batches keep no metadata: the key is in the custom_ids.)"""
        try:
            batch = await self.client.messages.batches.create(
                requests=[{"custom_id": r.custom_id, "params": r.params} for r in requests])  # type: ignore[misc]
        except anthropic.APIError as exc:
            raise JudgeUnavailable(f"the {API} refused the batch: {type(exc).__name__}: {exc}") from exc
        return created_id(batch, API, BASE_URL_SETTING)

    async def find(self, lookup: BatchLookup) -> str | None:
        """The batch created under `lookup.key`. Message Batches keep no metadata and show their custom_ids only in
        the results of an ended batch, so: among the batches created in the window with as many requests and not
        known to be another chunk's, the one whose results carry the key; else the only one still running (none,
        or several: None, and the caller submits again)."""
        running, verified = [], []
        async for batch in self.client.messages.batches.list(limit=100):
            created = batch.created_at.timestamp()
            if created < lookup.after:
                break  # newest first: the rest are older
            counts = batch.request_counts
            total = sum(getattr(counts, name) for name in OUTCOMES)
            if created > lookup.before or batch.id in lookup.known or total != lookup.requests:
                continue
            if batch.processing_status != "ended":
                running.append(batch.id)
                continue
            async for line in await self.client.messages.batches.results(batch.id):
                if line.custom_id.endswith(f"-{lookup.key}"):
                    verified.append(batch.id)
                break
        if verified:
            return verified[0]
        return running[0] if len(running) == 1 else None

    async def retrieve(self, batch_id: str) -> BatchState:
        """Processing status and request counts."""
        batch = await self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        return BatchState(batch_id, batch.processing_status, {name: getattr(counts, name) for name in OUTCOMES})

    async def results(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        """Every request's outcome from the results JSONL (the batch must have ended), line by line: the SDK's own
        reader stops at the first line it cannot parse, which would lose every result after it."""
        batch = await self.client.messages.batches.retrieve(batch_id)
        if not batch.results_url:
            raise JudgeError(f"provider batch {batch_id} has no results (not ended)")
        text = await self.client.get(batch.results_url, cast_to=str,
                                     options={"headers": {"Accept": "application/binary"}})
        for line in text.splitlines():
            if line.strip():
                yield _read(line)

    async def cancel(self, batch_id: str) -> None:
        """Ask Anthropic to stop the batch."""
        await self.client.messages.batches.cancel(batch_id)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self.client.close()


def _read(line: str) -> BatchOutcome:
    """One results line as its request's outcome (batches.read_line)."""
    return read_line(line, lambda value: _outcome(MessageBatchIndividualResponse.construct(**value)))


def _outcome(line: Any) -> BatchOutcome:
    result = line.result
    match result.type:
        case "succeeded":
            return BatchOutcome(line.custom_id, "succeeded", message=result.message)
        case "errored":
            error = getattr(result.error, "error", None)
            text = f"{getattr(error, 'type', 'error')}: {getattr(error, 'message', '')}" if error else "errored"
            return BatchOutcome(line.custom_id, "errored", error=text)
        case "expired" | "canceled":
            return BatchOutcome(line.custom_id, result.type)
    return BatchOutcome(line.custom_id, "errored", error=f"unknown result type {result.type!r}")
