"""`ragpulse dataset push` without a service: a JSONL file's bad lines are named by their line numbers, and the
service's item paths are mapped back to lines; `--dataset` parses NAME:VERSION."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragpulse.exceptions import TraceFileError
from ragpulse.ops import cli
from ragpulse.ops.dataset_commands import describe, read_items, where
from ragpulse.store.datasets import count
from ragpulse.model.dataset import DatasetItem, DatasetVersion


def test_bad_lines_are_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({"item_id": "a", "query": "q?"}) + "\n\n"
                    + json.dumps({"item_id": "b", "query": "q?", "split": "train"}) + "\n"
                    + json.dumps({"item_id": "c"}) + "\n")
    with pytest.raises(TraceFileError) as caught:
        read_items(path)
    message = str(caught.value)
    assert "line 3: Invalid enum value 'train' - at `$.split`" in message   # line 2 is blank
    assert "line 4: Object missing required field `query`" in message and "line 1" not in message


def test_only_jsonl_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "set.json"
    path.write_text("[]")
    with pytest.raises(TraceFileError, match="JSONL"):
        read_items(path)


def test_service_paths_map_to_lines(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(json.dumps({"item_id": str(n), "query": "q?"}) for n in range(3)) + "\n\n")
    file = read_items(path)
    assert where(file, "$.items[2].item_id") == "line 3: $.items[2].item_id"
    assert where(file, "$.items[7]") == "$.items[7]" and where(file, "path.name") == "path.name"


def test_describe_prints_counts() -> None:
    items = [DatasetItem(item_id="a", query="q?", split="test"), DatasetItem(item_id="b", query="q?", answerable=False)]
    version = DatasetVersion(name="faq", version=2, content_hash="ab" * 32, status="published",
                             created_at="2026-12-02T00:00:00.000Z", counts=count(items))
    text = describe(version, created=False)
    assert "dataset faq version 2 published (unchanged" in text
    assert "2 items: 1 answerable, 1 unanswerable" in text and "by split: dev 1, test 1" in text


@pytest.mark.parametrize(("given", "expected"), [("faq:3", {"name": "faq", "version": 3}),
                                                 ("a:b:1", {"name": "a:b", "version": 1})])
def test_dataset_flag(given: str, expected: dict) -> None:
    assert cli._parser().parse_args(["eval", "f.jsonl", "--dataset", given]).dataset == expected


@pytest.mark.parametrize("given", ["faq", "faq:0", ":3", "faq:x"])
def test_dataset_flag_refuses(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli._parser().parse_args(["gate", "f.jsonl", "--dataset", given])
    assert exited.value.code == 2 and "NAME:VERSION" in capsys.readouterr().err
