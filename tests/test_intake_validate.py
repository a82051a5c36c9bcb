"""The schema walker behind 422s: every failing path, derived from msgspec's type info, bounded."""

from __future__ import annotations

import json
import re
from typing import Annotated, Literal

import msgspec
import pytest
from msgspec import Meta

from ragpulse.exceptions import InvalidBody
from ragpulse.intake import duplicates
from ragpulse.intake.decode import decode_batch, decode_body, decode_post
from ragpulse.intake.validate import MAX_ERRORS, collect_errors
from ragpulse.model.calibration import CalibrationRequest
from ragpulse.model.dataset import DatasetVersionPost
from ragpulse.model.trace import BatchRequest
from ragpulse.monitoring.sampling import SamplingPolicy


class Leaf(msgspec.Struct, forbid_unknown_fields=True, tag=True):
    name: Annotated[str, Meta(min_length=1)]


class Branch(msgspec.Struct, forbid_unknown_fields=True, tag=True, rename="camel"):
    child_nodes: Annotated[list[Leaf | Branch], Meta(max_length=2)] = []
    weights: dict[str, Annotated[float, Meta(ge=0)]] | None = None
    mode: Literal["a", "b"] = "a"


def paths(value: object, type_: type, limit: int = MAX_ERRORS) -> set[tuple[str, str]]:
    return {(e["path"], e["message"]) for e in collect_errors(value, type_, limit).errors}


def test_every_failing_path_of_a_struct_it_was_never_told_about() -> None:
    value = {"type": "Branch", "mode": "c", "extra": 1, "weights": {"w": -1, "v": "x"},
             "childNodes": [{"type": "Leaf", "name": ""}, {"type": "Branch", "childNodes": [{"type": "Leaf"}]}, 3]}
    assert paths(value, Branch) == {
        ("$", "Object contains unknown field `extra`"),
        ("$.childNodes", "Expected `array` of length <= 2"),
        ("$.childNodes[0].name", "Expected `str` of length >= 1"),
        ("$.childNodes[1].childNodes[0]", "Object missing required field `name`"),
        ("$.childNodes[2]", "Expected `object`, got `int`"),
        ("$.weights[...]", "Expected `float` >= 0.0"),
        ("$.weights[...]", "Expected `float`, got `str`"),
        ("$.mode", "Invalid enum value 'c'"),
    }


def test_a_batch_reports_every_field_of_every_trace() -> None:
    body = (b'{"traces": [{"retrieved_docs": "x", "answer": 5}, {"query": "fine"},'
            b' {"query": "", "retrieved_docs": [{"text": 1}], "answerable": "yes"}], "options": {"k": []}}')
    with pytest.raises(InvalidBody) as raised:
        decode_batch(body)
    assert {(e["path"], e["message"]) for e in raised.value.errors} == {
        ("$.traces[0]", "Object missing required field `query`"),
        ("$.traces[0].retrieved_docs", "Expected `array`, got `str`"),
        ("$.traces[0].answer", "Expected `str | null`, got `int`"),
        ("$.traces[2].query", "Expected `str` of length >= 1"),
        ("$.traces[2].retrieved_docs[0]", "Object missing required field `id`"),
        ("$.traces[2].retrieved_docs[0].text", "Expected `str | null`, got `int`"),
        ("$.traces[2].answerable", "Expected `bool | null`, got `str`"),
        ("$.options.k", "Expected `array` of length >= 1"),
    }
    assert not raised.value.errors_truncated


def test_small_bodies_list_every_path_too() -> None:
    with pytest.raises(InvalidBody) as raised:
        decode_body(b'{"sample_rate": 2, "always_judge": {"negative_feedback": 1, "top_score_below": "x"}}',
                    SamplingPolicy)
    assert [e["path"] for e in raised.value.errors] == [
        "$.sample_rate", "$.always_judge.negative_feedback", "$.always_judge.top_score_below"]
    with pytest.raises(InvalidBody) as raised:
        decode_body(b'{"labels": [{"faithful": "yes"}]}', CalibrationRequest)
    assert raised.value.errors == [
        {"path": "$", "message": "Object missing required field `job_id`"},
        {"path": "$.labels[0]", "message": "Object missing required field `trace_id`"},
        {"path": "$.labels[0].faithful", "message": "Expected `bool`, got `str`"},
    ]


def test_cross_field_checks_are_reported_once_the_fields_are_valid() -> None:
    assert paths({"traces": [{"query": "q", "gold_doc_ids": [], "relevance": {}}]}, BatchRequest) == {
        ("$.traces[0]", "`gold_doc_ids` and `relevance` are mutually exclusive; give one")}


def test_errors_are_bounded_and_say_so() -> None:
    body = msgspec.json.encode({"traces": [{"answer": 5}] * 150})
    with pytest.raises(InvalidBody) as raised:
        decode_batch(body, max_traces=1000)
    assert len(raised.value.errors) == MAX_ERRORS and raised.value.errors_truncated
    assert "first 100 errors" in raised.value.detail
    assert collect_errors({"traces": [{"answer": 5}] * 2}, BatchRequest, limit=3).truncated
    assert not collect_errors({"traces": [{"answer": 5}] * 2}, BatchRequest, limit=4).truncated


def every_body() -> list[tuple[type, bytes]]:
    """Clean bodies of every body type, written the ways clients write them (spaces, escapes, colons in strings)."""
    trace = {"trace_id": "t:1", "query": "a: b", "answer": "c", "timestamp": "2026-01-01T00:00:00+0200",
             "retrieved_docs": [{"id": "d:1", "text": "é\n: x", "score": 0.5, "metadata": {"k:1": [{"a": None}]}}],
             "relevance": {"d:1": 2}, "metadata": {"nested": {"deeper": {"x": 1}}, "u": "\u00e9"}}
    batch = {"traces": [trace, {"query": "q"}], "options": {"k": [1, 3], "gain": "linear"}}
    policy = {"sample_rate": 0.5, "always_judge": {"top_score_below": 0.3}}
    labels = {"job_id": "j", "labels": [{"trace_id": "t:1", "faithful": True}]}
    bodies = []
    for type_, value in ((BatchRequest, batch), (SamplingPolicy, policy), (CalibrationRequest, labels)):
        bodies += [(type_, msgspec.json.encode(value)), (type_, json.dumps(value, indent=1).encode()),
                   (type_, json.dumps(value, ensure_ascii=True).encode())]
    return bodies


@pytest.mark.parametrize(("type_", "body"), every_body())
def test_a_body_without_repeated_keys_is_proved_so_without_a_second_full_read(monkeypatch, type_, body) -> None:
    monkeypatch.setattr(duplicates.json, "loads", lambda *a, **k: pytest.fail("took the slow path"))
    msgspec.json.decode(body, type=type_)
    assert duplicates.repeated_keys(body, type_) == []


@pytest.mark.parametrize(("type_", "body"), every_body())
def test_any_repeated_key_anywhere_is_found(type_, body) -> None:
    """Each key of each object repeated in turn (with the same or another value): always found, path and all."""
    pairs = list(re.finditer(rb'"((?:[^"\\]|\\.)*)"(\s*):(\s*)', body))
    assert pairs
    for match in pairs:
        value = json.loads(body[match.end():].decode(), cls=_Prefix)
        repeated = body[:match.end()] + value + b"," + body[match.start():]
        errors = duplicates.repeated_keys(repeated, type_)
        key = json.loads(b'"' + match.group(1) + b'"')
        assert [e["message"] for e in errors] == [f"duplicate key `{key}`: name each key once"], repeated


class _Prefix(json.JSONDecoder):
    """Reads the first JSON value of a string and gives its text back (the rest is ignored)."""

    def decode(self, s: str) -> bytes:  # type: ignore[override]
        _, end = self.raw_decode(s)
        return s[:end].encode()


class Node(msgspec.Struct, tag=True):
    label: str
    children: list[Node] = []
    attributes: dict[str, int | str] = {}


def test_tagged_and_recursive_types_are_proved_and_checked_too() -> None:
    body = b'{"type": "Node", "label": "a:", "children": [{"type": "Node", "label": "b", "attributes": {"x": 1}}]}'
    msgspec.json.decode(body, type=Node)
    assert duplicates.repeated_keys(body, Node) == []
    twice = body.replace(b'"x": 1', b'"x": 1, "x": "y"')
    assert duplicates.repeated_keys(twice, Node) == [
        {"path": "$.children[0].attributes.x", "message": "duplicate key `x`: name each key once"}]


# -- whole floats (3.0) for integer fields: accepted, as JSON Schema reads them ------------------------------------

def test_a_whole_float_reads_as_an_integer_where_the_schema_says_integer() -> None:
    body = {"traces": [{"query": "q", "relevance": {"d": 3.0}, "usage": {"prompt_tokens": 12.0},
                        "retrieved_docs": [{"id": "d", "score": 2.0}], "metadata": {"n": 3.0}}],
            "options": {"k": [1.0, 5]}}
    batch = decode_batch(json.dumps(body).encode())            # before: 422 "Expected `int`, got `float`"
    trace = batch.traces[0]
    assert trace.relevance == {"d": 3} and type(trace.relevance["d"]) is int
    assert trace.usage.prompt_tokens == 12 and batch.options.k == [1, 5]
    assert type(trace.retrieved_docs[0].score) is float and type(trace.metadata["n"]) is float   # left as sent
    label = decode_body(b'{"job_id": "j", "labels": [{"trace_id": "t", "faithful": true, '
                        b'"claims": [{"index": 0.0, "verdict": "supported"}]}]}', CalibrationRequest)
    assert label.labels[0].claims[0].index == 0


@pytest.mark.parametrize("value", ["12.5", '"12"', "true", "1e999", "-1.0"])
def test_only_a_whole_float_is_read_as_an_integer(value: str) -> None:
    body = '{"traces": [{"query": "q", "usage": {"prompt_tokens": %s}}]}' % value
    with pytest.raises(InvalidBody) as caught:
        decode_batch(body.encode())
    assert [e["path"] for e in caught.value.errors] == ["$.traces[0].usage.prompt_tokens"]


def test_a_whole_float_is_no_error_beside_a_real_one() -> None:
    body = {"traces": [{"query": "q", "usage": {"prompt_tokens": 12.0}}, {"query": ""}]}
    with pytest.raises(InvalidBody) as caught:
        decode_batch(json.dumps(body).encode())
    assert [e["path"] for e in caught.value.errors] == ["$.traces[1].query"]


def test_unstorable_metadata_is_named_by_its_full_path_however_it_nests() -> None:
    deep: dict = {}
    node = deep
    for _ in range(70):                  # 1 (metadata) + 1 ("deep") + 70 levels: past the 64 allowed
        node["x"] = {}
        node = node["x"]
    metadata = {"ok": [1, 2**64 - 1, -(2**63)], "a": [0, {"b": [2**64]}], "c.d": {"n": -(2**63) - 1}, "deep": deep}
    body = json.dumps({"traces": [{"query": "q"}, {"query": "q", "metadata": metadata,
                                                 "retrieved_docs": [{"id": "d", "metadata": {"big": [2**70]}}]}]})
    with pytest.raises(InvalidBody) as caught:
        decode_batch(body.encode())
    found = {error["path"] for error in caught.value.errors}
    assert found == {
        "$.traces[1].metadata.a[1].b[0]",
        '$.traces[1].metadata["c.d"].n',
        "$.traces[1].metadata.deep" + ".x" * 63,      # depth 65 (metadata 1, deep 2, each x one more) is past 64
        "$.traces[1].retrieved_docs[0].metadata.big[0]",
    }


@pytest.mark.parametrize(("decode", "body", "path"), [
    (decode_post, {"traces": [{"query": "q", "session_id": "s", "session_evidence": [
        {"id": "d", "metadata": {"k": 10**23}}]}]}, "$.traces[0].session_evidence[0].metadata.k"),
    (decode_batch, {"traces": [{"query": "q", "session_evidence": [{"id": "d"}, {"id": "e", "metadata": {
        "k": [-(2**63) - 1]}}]}]}, "$.traces[0].session_evidence[1].metadata.k[0]"),
    (lambda body: decode_body(body, DatasetVersionPost), {"items": [{"item_id": "i", "query": "q", "metadata": {
        "k": 10**23}}]}, "$.items[0].metadata.k"),
    (lambda body: decode_body(body, CalibrationRequest), {"job_id": "j", "labels": [{"trace_id": "t", "faithful": True,
        "claims": [{"index": 2**64, "verdict": "supported"}]}]}, "$.labels[0].claims[0].index"),
], ids=["session-evidence-online", "session-evidence-batch", "dataset-item", "calibration-claim-index"])
def test_every_decoder_names_an_integer_past_64_bits_wherever_it_sits(decode, body, path) -> None:
    with pytest.raises(InvalidBody) as caught:
        decode(json.dumps(body).encode())
    assert [error["path"] for error in caught.value.errors] == [path]


def test_integers_at_the_edges_of_64_bits_are_stored() -> None:
    body = {"items": [{"item_id": "i", "query": "q", "metadata": {"max": 2**64 - 1, "min": -(2**63), "t": True}}]}
    assert decode_body(json.dumps(body).encode(), DatasetVersionPost).items[0].metadata == body["items"][0]["metadata"]
