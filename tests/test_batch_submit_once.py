"""A worker killed after the provider accepted a batch and before its id was saved does not submit it again (issue
27): the submission saves an intent (an idempotency key, in the batch's metadata at OpenAI and at the end of every
custom_id) before it creates the batch, and a resumed submission looks the batch up at the provider first. Real Redis,
the real SDKs against the loopback fakes; the worker's death is an exception raised right after (or right before) the
provider's answer, at the kinds.batch_api seam."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
import redis

from ragpulse.config.settings import Settings
from ragpulse.evaluation import provider_batch
from ragpulse.evaluation.chunk import open_chunk
from ragpulse.judges import kinds
from ragpulse.judges.batches import BatchRequest
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.store import Store
from ragpulse.store.provider_batches import ProviderState
from tests.fake_anthropic_batches import FakeAnthropicBatches
from tests.fake_openai_batches import FakeOpenAIBatches

pytestmark = pytest.mark.integration
REAL_BATCH_API = kinds.batch_api
TRACES = 5


class Killed(Exception):
    """The worker dies here."""


class Dies:
    """The real BatchApi, whose worker dies right after the provider accepted the batch (`after=True`) or right before
    the request goes out."""

    def __init__(self, real: Any, after: bool) -> None:
        self.real, self.after = real, after
        self.max_requests, self.max_bytes = real.max_requests, real.max_bytes

    async def create(self, requests: Sequence[BatchRequest], key: str) -> str:
        if self.after:
            await self.real.create(requests, key)
        raise Killed

    async def find(self, lookup: Any) -> str | None:
        return await self.real.find(lookup)

    async def aclose(self) -> None:
        await self.real.aclose()


@pytest.fixture
def anthropic_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicBatches]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")                   # the SDK reads it
    with FakeAnthropicBatches(hold=True) as server:
        yield server


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAIBatches]:
    with FakeOpenAIBatches() as server:
        yield server


def staged(redis_url: str, judge: str) -> tuple[Store, str]:
    store = Store(redis.Redis.from_url(redis_url), 600)
    job_id = uuid.uuid4().hex
    traces = [Trace(query=f"q{i} {job_id}", trace_id=f"r{i}", answer="It is so.", retrieved_docs=[])
              for i in range(TRACES)]
    options = BatchOptions(judge=judge, delivery="batch", queue="batch", sample="all")
    with store.redis.pipeline(transaction=True) as pipe:
        store.stage_job(pipe, job_id, "default", traces, options, [], 10, "batch", f"once-{job_id}")
        pipe.execute()
    return store, job_id


def submit(store: Store, settings: Settings, job_id: str, monkeypatch: pytest.MonkeyPatch,
           api: Callable[[str, Settings], Any]) -> bool:
    monkeypatch.setattr(kinds, "batch_api", api)
    return asyncio.run(provider_batch.run_batched(store, settings, open_chunk(store, settings, job_id, 0)))


def killed_then_resumed(store: Store, settings: Settings, job_id: str, monkeypatch: pytest.MonkeyPatch,
                        after: bool) -> ProviderState:
    with pytest.raises(Killed):
        submit(store, settings, job_id, monkeypatch, lambda name, s: Dies(REAL_BATCH_API(name, s), after))
    cut = store.provider.get(job_id, 0)
    assert cut.status == "submitting" and cut.ids == [] and cut.intent is not None   # only the intent was saved
    assert cut.intent.requests == TRACES
    assert submit(store, settings, job_id, monkeypatch, REAL_BATCH_API)              # resumed: waits on the batch
    state = store.provider.get(job_id, 0)
    assert state.status == "waiting" and state.intent is None and len(state.ids) == 1
    return state


@pytest.mark.parametrize("after", [True, False], ids=["killed-after-create", "killed-before-create"])
def test_openai_a_resumed_submission_finds_the_batch_by_its_metadata(
        redis_url: str, openai_fake: FakeOpenAIBatches, monkeypatch: pytest.MonkeyPatch, after: bool) -> None:
    settings = Settings.from_env({"REDIS_URL": redis_url, "RAGPULSE_OPENAI_BASE_URL": openai_fake.base_url,
                                  "RAGPULSE_OPENAI_MODEL": openai_fake.model, "RAGPULSE_OPENAI_BATCH": "1"})
    store, job_id = staged(redis_url, "openai")
    state = killed_then_resumed(store, settings, job_id, monkeypatch, after)
    assert list(openai_fake.batches) == state.ids                  # one batch at the provider: created once
    [batch] = openai_fake.batches.values()
    assert len(batch["requests"]) == TRACES and set(batch["metadata"]) == {"ragpulse_submission"}
    key = batch["metadata"]["ragpulse_submission"]
    assert all(r["custom_id"].endswith(f"-{key}") for r in batch["requests"])


@pytest.mark.parametrize("after", [True, False], ids=["killed-after-create", "killed-before-create"])
def test_anthropic_a_resumed_submission_finds_the_running_batch_no_other_chunk_saved(
        redis_url: str, anthropic_fake: FakeAnthropicBatches, monkeypatch: pytest.MonkeyPatch, after: bool) -> None:
    settings = Settings.from_env({"REDIS_URL": redis_url, "ANTHROPIC_API_KEY": "k",
                                  "RAGPULSE_JUDGE_BASE_URL": anthropic_fake.url})
    store, job_id = staged(redis_url, "anthropic")
    # Another chunk's batch of the same size, created and saved by a live worker meanwhile: never taken for this one.
    other_store, other_job = staged(redis_url, "anthropic")
    with pytest.raises(Killed):
        submit(store, settings, job_id, monkeypatch, lambda name, s: Dies(REAL_BATCH_API(name, s), after))
    assert submit(other_store, settings, other_job, monkeypatch, REAL_BATCH_API)
    [other] = other_store.provider.get(other_job, 0).ids
    state = killed_then_resumed_from_cut(store, settings, job_id, monkeypatch)
    assert other not in state.ids
    assert len(anthropic_fake.batches) == 2                        # this chunk's once, the other chunk's once
    [mine] = state.ids
    assert all(r["custom_id"].startswith("t") and r["custom_id"].count("-") == 2
               for r in anthropic_fake.batches[mine]["requests"])


def killed_then_resumed_from_cut(store: Store, settings: Settings, job_id: str,
                                 monkeypatch: pytest.MonkeyPatch) -> ProviderState:
    cut = store.provider.get(job_id, 0)
    assert cut.status == "submitting" and cut.ids == [] and cut.intent is not None
    assert submit(store, settings, job_id, monkeypatch, REAL_BATCH_API)
    state = store.provider.get(job_id, 0)
    assert state.status == "waiting" and state.intent is None and len(state.ids) == 1
    return state


def test_anthropic_an_ended_batch_is_told_from_an_unsaved_twin_by_the_key_in_its_results(
        redis_url: str, anthropic_fake: FakeAnthropicBatches, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two chunks killed at once, each after its batch was accepted: two batches of the same size that no live worker
    saved. Running, they cannot be told apart (each chunk submits again rather than guess); once ended, the key at
    the end of the custom_ids in the results tells each chunk its own."""
    settings = Settings.from_env({"REDIS_URL": redis_url, "ANTHROPIC_API_KEY": "k",
                                  "RAGPULSE_JUDGE_BASE_URL": anthropic_fake.url})
    (store, job_a), (_, job_b) = staged(redis_url, "anthropic"), staged(redis_url, "anthropic")
    for job_id in (job_a, job_b):
        with pytest.raises(Killed):
            submit(store, settings, job_id, monkeypatch, lambda name, s: Dies(REAL_BATCH_API(name, s), True))
    anthropic_fake.release()                                       # both ended
    first, second = list(anthropic_fake.batches)
    state_a = killed_then_resumed_from_cut(store, settings, job_a, monkeypatch)
    state_b = killed_then_resumed_from_cut(store, settings, job_b, monkeypatch)
    assert (state_a.ids, state_b.ids) == ([first], [second]) and len(anthropic_fake.batches) == 2
