"""The record_verdicts tool: the structs the LLM judge writes, their JSON schema, and the checks made in code.

The structs are the tool's only definition: `input_schema()` is generated from them, so their field descriptions
are what the model reads (what a field is; how to judge is the system prompt's, said once there), and
the field order is the order it writes in (the answer's sentences first, each claim's reasoning and quotes before its
verdict, a reason before its score). Output that validates against them still has to pass `problems()`: every
document scored, and every sentence of the answer listed (ragpulse.judges.spans).
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from ragpulse.judges.spans import answer_text
from ragpulse.model.verdicts import (
    Claim, DocRelevance, Evidence, JudgeOutput, JudgeWritten, KeyFact, Verdict,
)
from ragpulse.model.trace import Trace

ClaimText = Annotated[str, Meta(description="The claim as a self-contained sentence.")]
Reasoning = Annotated[str, Meta(description="One to three sentences.")]
EvidenceList = Annotated[list[Evidence], Meta(description="Quotes the verdict rests on; empty when none.")]
DocRank = Annotated[int, Meta(description="Its rank attribute.")]
DocIdAtRank = Annotated[str, Meta(description="Its id attribute.")]
Score = Literal[1, 2, 3]
AnswerReason = Annotated[str, Meta(description="One sentence.")]
InjectionReason = Annotated[str | None, Meta(description="One sentence.")]


class ClaimCheck(JudgeWritten, kw_only=True):
    """One atomic claim of a sentence, judged against the documents only."""

    text: ClaimText
    reasoning: Reasoning
    evidence: EvidenceList
    verdict: Verdict


SentenceClaims = Annotated[list[ClaimCheck], Meta(description="Its atomic claims; empty when it asserts nothing.")]


class SentenceCheck(JudgeWritten, kw_only=True):
    """One sentence of the ANSWER and the claims it yields."""

    sentence: str
    claims: SentenceClaims


class DocumentRelevance(JudgeWritten, kw_only=True):
    """How useful one retrieved <document> is for the QUESTION."""

    rank: DocRank
    doc_id: DocIdAtRank
    score: Score


class RecordVerdicts(JudgeWritten, kw_only=True):
    """The judgment of one RAG trace."""

    sentences: Annotated[list[SentenceCheck], Meta(description="The ANSWER's sentences.")]
    answer_relevance_reason: AnswerReason
    answer_relevance: Score
    context_relevance: Annotated[list[DocumentRelevance], Meta(description="One entry per <document>.")]
    answerable_from_context: bool
    abstained: bool
    key_facts: Annotated[list[KeyFact] | None, Meta(description="Null without a <reference>.")] = None
    injection_reason: InjectionReason = None
    injection_followed: bool | None = None
    rewrite_faithful: bool | None = None


def input_schema() -> dict[str, Any]:
    """The tool's input_schema: RecordVerdicts' JSON schema with every `$ref` inlined, so it stands alone, in the
    subset strict structured output accepts (OpenAI `strict: true`, Anthropic strict tools).

    Strict mode wants every property required: a field that may be absent (key_facts, injection_followed, chunk_id)
    is listed as required and nullable, and its default is dropped; decoding in code still accepts it absent.
    msgspec writes `additionalProperties: false` on every object because JudgeWritten forbids unknown fields.
    Titles (our class names) are dropped: they tell the model nothing the descriptions do not; so are the structs'
    docstrings (the descriptions of the root and of each list's items), which are for readers of this module: the
    tool's own description and each list field's say what they are.
    """
    return _without_item_descriptions(strict_schema(RecordVerdicts))


def _without_item_descriptions(node: Any, item: bool = True) -> Any:
    """`node` without the description of the root object and of every list's items (see input_schema)."""
    match node:
        case dict():
            return {key: _without_item_descriptions(value, key == "items") for key, value in node.items()
                    if not (item and key == "description" and node.get("type") == "object")}
        case list():
            return [_without_item_descriptions(value, False) for value in node]
    return node


def strict_schema(struct: type) -> dict[str, Any]:
    """The JSON schema of a msgspec struct as a tool's input_schema in the strict subset (see input_schema): every
    `$ref` inlined, every property required, defaults and titles dropped."""
    schema = msgspec.json.schema(struct)
    definitions = schema.pop("$defs", {})
    return _inline(schema, definitions, ())


def _inline(node: Any, definitions: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """`node` with each {"$ref": "#/$defs/X", ...} replaced by X's definition (plus the ref's own keywords)."""
    match node:
        case {"$ref": str(ref), **rest}:
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise ValueError(f"the tool schema is recursive at {name}; it cannot be inlined")
            body = {k: v for k, v in definitions[name].items() if k != "title"}
            return _inline({**body, **rest}, definitions, (*seen, name))
        case {"type": "object", "properties": dict(properties), **rest}:
            inlined = {key: _inline(value, definitions, seen) for key, value in rest.items()}
            return {"type": "object", **inlined, "properties": {key: _inline(value, definitions, seen) for key, value in
                                              properties.items()}, "required": list(properties)}
        case dict():
            return {key: _inline(value, definitions, seen) for key, value in node.items() if key != "default"}
        case list():
            return [_inline(item, definitions, seen) for item in node]
    return node


def to_output(verdicts: RecordVerdicts) -> JudgeOutput:
    """The domain JudgeOutput of validated tool input: the sentences' claims in order, each keeping its sentence; the
    reasoning becomes each claim's reason."""
    claims = [Claim(text=c.text, verdict=c.verdict, evidence=list(c.evidence), reason=c.reasoning,
                    sentence=s.sentence) for s in verdicts.sentences for c in s.claims]
    relevance = [DocRelevance(doc_id=r.doc_id, score=r.score, rank=r.rank)
                 for r in sorted(verdicts.context_relevance, key=lambda r: r.rank)]
    return JudgeOutput(
        claims=claims, answer_relevance=verdicts.answer_relevance,
        answer_relevance_reason=verdicts.answer_relevance_reason, context_relevance=relevance,
        answerable_from_context=verdicts.answerable_from_context, abstained=verdicts.abstained,
        key_facts=verdicts.key_facts, injection_followed=verdicts.injection_followed,
        injection_reason=verdicts.injection_reason, rewrite_faithful=verdicts.rewrite_faithful,
    )


def problems(verdicts: RecordVerdicts, trace: Trace) -> str | None:
    """What valid-looking output still gets wrong, said so the model can fix it; None when nothing."""
    found = [p for p in (_relevance_problem(verdicts, trace), _coverage_problem(verdicts, trace)) if p]
    return "; ".join(found) or None


def _relevance_problem(verdicts: RecordVerdicts, trace: Trace) -> str | None:
    """Every retrieved position 1..n needs exactly one relevance entry naming the document at that position: a
    missing entry would otherwise make context relevance an average over the documents the judge chose to score."""
    docs = trace.retrieved_docs
    counts = Counter(r.rank for r in verdicts.context_relevance)
    missing = [rank for rank in range(1, len(docs) + 1) if rank not in counts]
    repeated = sorted(rank for rank, n in counts.items() if n > 1)
    beyond = sorted(rank for rank in counts if rank > len(docs))
    before = sorted(rank for rank in counts if rank < 1)
    found = [f"missing rank(s) {missing}"] if missing else []
    found += [f"rank(s) {repeated} given more than once"] if repeated else []
    found += [f"rank(s) {beyond} beyond the last document"] if beyond else []
    found += [f"rank(s) {before} before the first (ranks start at 1)"] if before else []
    found += [f"rank {r.rank} is document {docs[r.rank - 1].id!r}, not {r.doc_id!r}"
              for r in verdicts.context_relevance if 1 <= r.rank <= len(docs) and docs[r.rank - 1].id != r.doc_id]
    if not found:
        return None
    return f"context_relevance needs exactly one entry for each document rank 1..{len(docs)}: " + "; ".join(found)


def _coverage_problem(verdicts: RecordVerdicts, trace: Trace) -> str | None:
    """Every sentence of the answer must be listed (with its claims, or none when it asserts nothing): a judge that
    leaves out the one invented sentence would otherwise make the trace faithful. Listed sentences are located in
    the answer (markers aside, folded, near-verbatim allowed); text that none covers, or a listed sentence that is not
    in the answer, is a problem."""
    answer = answer_text(trace.answer or "")
    spans, strangers, position = [], [], 0
    for index, sentence in enumerate(verdicts.sentences):
        span = answer.locate(sentence.sentence, position)
        if span is None:
            strangers.append(index)
            continue
        spans.append(span)
        position = span[1]
    found = [f"sentences[{i}] is not a sentence of the ANSWER" for i in strangers]
    found += [f"the ANSWER text {_excerpt(f)!r} is in no sentence" for f in answer.uncovered(spans)]
    if not found:
        return None
    return "sentences must list every sentence of the ANSWER, copied exactly: " + "; ".join(found)


def _excerpt(text: str, chars: int = 120) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "…"
