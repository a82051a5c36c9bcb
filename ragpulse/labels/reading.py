"""Read reviewable traces back: an online trace's review copy, a batch trace from its job's chunk and result."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ragpulse.config import keys
from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.exceptions import JobNotFound
from ragpulse.labels import sources
from ragpulse.labels.sources import ReviewSource, TraceRef, judge_view, review_source
from ragpulse.model.results import TraceResult
from ragpulse.model.trace import Trace
from ragpulse.store import Store

_result_decoder = msgspec.msgpack.Decoder(TraceResult)


class SourceReader:
    """Reads ReviewSources for one request, keeping each batch chunk it decoded."""

    def __init__(self, store: Store, tenant: str, limits: JudgeInputLimits) -> None:
        self.store, self.tenant, self.limits = store, tenant, limits
        self._chunks: dict[tuple[str, int], list[Trace]] = {}
        self._sizes: dict[str, int] = {}

    def read(self, refs: Sequence[TraceRef]) -> list[ReviewSource | None]:
        """The source of each ref; None where the trace has expired (or lost its verdict)."""
        with self.store.redis.pipeline(transaction=False) as pipe:
            for ref in refs:
                if ref.job_id is None:
                    pipe.get(keys.review_copy(self.tenant, ref.trace_id))
                else:
                    pipe.hget(keys.job_results(ref.job_id), str(ref.index))
            raws = pipe.execute()
        return [self._source(ref, raw) for ref, raw in zip(refs, raws, strict=True)]

    def _source(self, ref: TraceRef, raw: bytes | None) -> ReviewSource | None:
        if raw is None:
            return None
        if ref.job_id is None:
            return sources.decode(raw)
        result = _result_decoder.decode(raw)
        view, trace = judge_view(result), self._trace(ref.job_id, result.index)
        if view is None or trace is None or trace.trace_id != ref.trace_id:
            return None
        return review_source(trace, result, view, self.limits, ref.job_id)

    def _trace(self, job_id: str, index: int) -> Trace | None:
        try:
            if job_id not in self._sizes:
                self._sizes[job_id] = self.store.jobs.get(job_id, self.tenant).chunk_size
            size = self._sizes[job_id]
            chunk = (job_id, index // size)
            if chunk not in self._chunks:
                self._chunks[chunk] = self.store.chunks.load(job_id, chunk[1])
            return self._chunks[chunk][index % size]
        except (JobNotFound, IndexError):
            return None
