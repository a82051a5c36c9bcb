"""OpenAI's Batch API as a BatchApi (ragpulse.judges.batches): the requests uploaded as a JSONL file, one batch of
chat completions per file with a 24-hour window, its status and counts, its output and error files, cancel; through
the official async SDK. Offered only where the configured server has it (RAGPULSE_OPENAI_BATCH)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import openai

from ragpulse.exceptions import JudgeUnavailable
from ragpulse.judges.batches import BatchLookup, BatchOutcome, BatchRequest, BatchState, created_id, read_line

API = "OpenAI Batch API"
BASE_URL_SETTING = "RAGPULSE_OPENAI_BASE_URL"

ENDPOINT = "/v1/chat/completions"
METADATA_KEY = "ragpulse_submission"
"""The batch metadata field holding the submission's idempotency key."""
STATUSES = {"validating": "in_progress", "in_progress": "in_progress", "finalizing": "in_progress",
            "cancelling": "canceling", "completed": "ended", "failed": "ended", "expired": "ended",
            "cancelled": "ended"}
"""OpenAI batch status -> the provider-neutral one (in_progress, canceling, ended)."""
UNFINISHED = {"expired": "expired", "cancelled": "canceled", "failed": "errored"}
"""How the requests a batch did not finish ended, by the batch's final status."""


class OpenAIBatches:
    """`client.files` and `client.batches` of the openai SDK."""

    max_requests = 50_000
    """OpenAI's limit of requests per batch."""
    max_bytes = 200 * 1024 * 1024
    """OpenAI's limit of a batch input file (200 MB)."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client

    async def create(self, requests: Sequence[BatchRequest], key: str) -> str:
        """Upload the requests as JSONL and start one batch, `key` in its metadata; its id."""
        lines = "".join(json.dumps({"custom_id": r.custom_id, "method": "POST", "url": ENDPOINT, "body": r.params})
                        + "\n" for r in requests)
        try:
            uploaded = await self.client.files.create(file=("requests.jsonl", lines.encode()), purpose="batch")
            batch = await self.client.batches.create(input_file_id=created_id(uploaded, API, BASE_URL_SETTING),
                                                     endpoint=ENDPOINT, completion_window="24h",
                                                     metadata={METADATA_KEY: key})
        except openai.APIError as exc:
            raise JudgeUnavailable(f"the {API} refused the batch: {type(exc).__name__}: {exc}") from exc
        return created_id(batch, API, BASE_URL_SETTING)

    async def find(self, lookup: BatchLookup) -> str | None:
        """The batch whose metadata carries `lookup.key`, among those created since `lookup.after` (newest first)."""
        async for batch in self.client.batches.list(limit=100):
            if batch.created_at < lookup.after:
                return None
            if (batch.metadata or {}).get(METADATA_KEY) == lookup.key:
                return batch.id
        return None

    async def retrieve(self, batch_id: str) -> BatchState:
        """Status and request counts: processing until it ends, then succeeded, errored and how the rest ended."""
        batch = await self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        total, done, failed = (counts.total, counts.completed, counts.failed) if counts else (0, 0, 0)
        status = STATUSES.get(batch.status, "in_progress")
        rest = max(0, total - done - failed)
        tally = {"processing": rest if status != "ended" else 0, "succeeded": done, "errored": failed,
                 "expired": 0, "canceled": 0}
        if status == "ended" and rest:
            tally[UNFINISHED.get(batch.status, "errored")] += rest
        return BatchState(batch_id, status, tally)

    async def results(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        """Each request's outcome from the output and error files (requests in neither did not finish: the
        ReplayProvider sends those interactively)."""
        batch = await self.client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self.client.files.content(file_id)
            for line in content.text.splitlines():
                if line.strip():
                    yield _read(line)

    async def cancel(self, batch_id: str) -> None:
        """Ask the server to stop the batch."""
        await self.client.batches.cancel(batch_id)

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self.client.close()


def _read(line: str) -> BatchOutcome:
    """One output or error file line as its request's outcome (batches.read_line)."""
    return read_line(line, _outcome)


def _outcome(line: dict) -> BatchOutcome:
    response = line.get("response") or {}
    if response.get("status_code") == 200:
        return BatchOutcome(line["custom_id"], "succeeded", message=response.get("body"))
    error = line.get("error") or (response.get("body") or {}).get("error") or {}
    return BatchOutcome(line["custom_id"], "errored",
                        error=f"{error.get('code') or response.get('status_code')}: {error.get('message', '')}")
