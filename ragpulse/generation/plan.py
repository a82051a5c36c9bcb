"""What a generation job writes: candidates per question type, each bound to its chunk, pair or topic window.

Pure and deterministic: the same request plans the same candidates in the same order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragpulse.generation.related import related_pairs
from ragpulse.model.generation import CorpusChunk, GenerateRequest

SINGLE_CHUNK = ("single_fact", "procedural", "exact_match", "abstractive")
"""Types written from one chunk, which is their gold."""
TOPIC_WINDOW = 3
"""Chunks an unanswerable question is written near (it must be on their topic, and none of them may answer it)."""


@dataclass(frozen=True)
class Candidate:
    """One question to write: its type and the chunks it is written from (gold, except for unanswerable ones)."""

    question_type: str
    chunks: tuple[CorpusChunk, ...]

    @property
    def chunk_ids(self) -> list[str]:
        return [chunk.chunk_id for chunk in self.chunks]


def type_counts(request: GenerateRequest) -> dict[str, int]:
    """Candidates per type: the mix's counts, or its fractions of `total` rounded by largest remainder (so they sum to
    `total` exactly)."""
    if request.total is None:
        return {kind: int(value) for kind, value in request.mix.items()}
    shares = {kind: value * request.total for kind, value in request.mix.items()}
    counts = {kind: math.floor(share) for kind, share in shares.items()}
    left = request.total - sum(counts.values())
    for kind in sorted(shares, key=lambda k: (counts[k] - shares[k], k))[:left]:
        counts[kind] += 1
    return {kind: n for kind, n in counts.items() if n}


def plan(request: GenerateRequest) -> list[Candidate]:
    """Every candidate of the job, in a fixed order: chunks, pairs and topic windows taken round-robin. Multi-hop
    candidates need related pairs (related.related_pairs); a corpus with none plans none."""
    chunks = request.chunks
    candidates: list[Candidate] = []
    turn = 0
    pairs = related_pairs(chunks) if "multi_hop" in request.mix else []
    for kind, count in type_counts(request).items():
        if kind in SINGLE_CHUNK:
            for _ in range(count):
                candidates.append(Candidate(kind, (chunks[turn % len(chunks)],)))
                turn += 1
        elif kind == "multi_hop":
            candidates += [Candidate(kind, pairs[i % len(pairs)]) for i in range(count if pairs else 0)]
        else:
            width = min(TOPIC_WINDOW, len(chunks))
            for i in range(count):
                start = (i * width) % len(chunks)
                candidates.append(Candidate(kind, tuple(chunks[(start + j) % len(chunks)] for j in range(width))))
    return candidates
