"""The record_verdicts tool: its generated schema, the conversion to JudgeOutput, and the checks made in code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from ragpulse.judges.prompt import TOOL
from ragpulse.judges.tool import RecordVerdicts, input_schema, problems, to_output
from ragpulse.model.verdicts import DocRelevance, Evidence
from ragpulse.model.trace import RetrievedDoc, Trace

TRACE = Trace(query="How long do refunds take?", answer="Refunds take 30 days.", retrieved_docs=[
    RetrievedDoc(id="policy", chunk_id="1", text="Refunds are issued within 30 days."),
    RetrievedDoc(id="policy", chunk_id="2", text="Refunds go to the original card."),
    RetrievedDoc(id="faq", text="Shipping is free."),
])


def tool_input(**overrides: Any) -> dict[str, Any]:
    """Valid tool input for TRACE, in the order the model writes it."""
    return {
        "claims": [{"text": "Refunds take 30 days.", "reasoning": "Chunk 1 of policy says so.", "verdict": "supported",
                    "evidence": [{"doc_id": "policy", "chunk_id": "1", "quote": "within 30 days"}]}],
        "answer_relevance_reason": "Answers the question.", "answer_relevance": 3,
        "context_relevance": [{"rank": 1, "doc_id": "policy", "score": 3}, {"rank": 2, "doc_id": "policy", "score": 2},
                              {"rank": 3, "doc_id": "faq", "score": 1}],
        "answerable_from_context": True, "abstained": False, **overrides,
    }


def objects(node: Any, path: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every JSON-schema object node (type: object) with its path, however deeply nested."""
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield path, node
        for key, value in node.items():
            yield from objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from objects(item, f"{path}[{i}]")


def test_the_schema_is_strict_on_every_object_and_self_contained() -> None:
    schema = input_schema()
    found = dict(objects(schema))
    # the output, a claim, a piece of evidence, a relevance entry, a key fact
    assert len(found) == 5
    assert all(node.get("additionalProperties") is False for node in found.values()), found.keys()
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert TOOL["input_schema"] == schema


def test_reasoning_comes_before_the_verdict_and_the_reason_before_the_score() -> None:
    schema = input_schema()
    claim = schema["properties"]["claims"]["items"]
    assert list(claim["properties"]) == ["text", "reasoning", "verdict", "evidence"]
    assert claim["required"] == ["text", "reasoning", "verdict", "evidence"]
    top = list(schema["properties"])
    assert top.index("answer_relevance_reason") < top.index("answer_relevance")
    relevance = schema["properties"]["context_relevance"]["items"]
    assert relevance["required"] == ["rank", "doc_id", "score"]
    assert "key_facts" not in schema["required"]


def test_the_model_reads_descriptions_written_for_it() -> None:
    schema = input_schema()
    claim = schema["properties"]["claims"]["items"]["properties"]
    assert "possibly by combining several" in claim["verdict"]["description"]
    assert "own language" in claim["evidence"]["description"]
    assert "EVERY <document>" in schema["properties"]["context_relevance"]["description"]
    assert "title" not in json.dumps(schema)                 # class names are not for the model


def test_validated_input_converts_to_the_domain_output() -> None:
    verdicts = msgspec.convert(tool_input(context_relevance=list(reversed(tool_input()["context_relevance"]))),
                               RecordVerdicts)
    output = to_output(verdicts)
    [claim] = output.claims
    assert claim.verdict == "supported" and claim.reason == "Chunk 1 of policy says so."
    assert claim.evidence == [Evidence(doc_id="policy", chunk_id="1", quote="within 30 days")]
    assert (claim.doc_id, claim.quote, claim.flags) == ("policy", "within 30 days", [])   # the one-document form
    assert output.context_relevance == [DocRelevance(doc_id="policy", score=3, rank=1),    # back in rank order
                                        DocRelevance(doc_id="policy", score=2, rank=2),
                                        DocRelevance(doc_id="faq", score=1, rank=3)]
    assert output.answer_relevance == 3 and output.key_facts is None


@pytest.mark.parametrize("bad", [
    {"claims": [{**tool_input()["claims"][0], "doc_id": "policy"}]},                    # a v1 field, unknown now
    {"claims": [{**tool_input()["claims"][0], "flags": []}]},                           # flags are ragpulse's
    {"context_relevance": [{"rank": 1, "doc_id": "policy", "score": 3, "reason": "x"}]},
    {"context_relevance": [{"rank": 0, "doc_id": "policy", "score": 3}]},
    {"answer_relevance": 4},
])
def test_unknown_fields_and_out_of_range_values_do_not_validate(bad: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(tool_input(**bad), RecordVerdicts)


def check(context_relevance: list[dict[str, Any]]) -> str | None:
    return problems(msgspec.convert(tool_input(context_relevance=context_relevance), RecordVerdicts), TRACE)


def test_every_rank_scored_once_with_its_document_is_no_problem() -> None:
    assert check(tool_input()["context_relevance"]) is None


def test_problems_name_missing_repeated_out_of_range_and_mismatched_ranks() -> None:
    one, two, three = tool_input()["context_relevance"]
    assert check([one, three]) == ("context_relevance needs exactly one entry for each document rank 1..3: "
                                   "missing rank(s) [2]")
    assert "rank(s) [1] given more than once" in check([one, one, two, three])
    assert "rank(s) [5] beyond the last document" in check([one, two, three, {**three, "rank": 5}])
    assert "rank 3 is document 'faq', not 'policy'" in check([one, two, {**three, "doc_id": "policy"}])


def test_a_trace_without_documents_needs_no_relevance_entries() -> None:
    empty = Trace(query="q", answer="a")
    assert problems(msgspec.convert(tool_input(context_relevance=[]), RecordVerdicts), empty) is None
    one = tool_input()["context_relevance"][:1]
    assert "beyond the last document" in problems(msgspec.convert(tool_input(context_relevance=one),
                                                                  RecordVerdicts), empty)
