"""`ragpulse dataset push`, `list` and `delete`: send a JSONL eval set as a new dataset version, list datasets, delete
one version or a whole dataset."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import msgspec

from ragpulse.exceptions import TraceFileError, TracesRejected
from ragpulse.model.dataset import DatasetItem, DatasetVersion
from ragpulse.ops.client import Client, TraceFile, read_traces
from ragpulse.ops.exit_codes import EXIT_OK, EXIT_REJECTED, EXIT_USAGE

_item = msgspec.json.Decoder(DatasetItem)
_encode = msgspec.json.Encoder().encode
_ITEM_PATH = re.compile(r"^\$\.items\[(\d+)\](.*)$")
ERRORS_SHOWN = 20
"""The most item errors one push prints (the rest are counted)."""


def read_items(path: Path) -> TraceFile:
    """The items of a JSONL file (one DatasetItem per line), each checked against the schema here, so a bad line is
    named by its line number before anything is sent; TraceFileError listing every bad line."""
    if path.suffix != ".jsonl":
        raise TraceFileError(f"{path}: a dataset file is JSONL, one item per line, named *.jsonl")
    file = read_traces(path)
    bad = []
    for index, raw in enumerate(file.traces):
        try:
            _item.decode(_encode(raw))
        except msgspec.ValidationError as exc:
            bad.append(f"{path}, line {file.lines[index]}: {exc}")   # type: ignore[index]
    if bad:
        more = f"\n({len(bad) - ERRORS_SHOWN} more lines fail)" if len(bad) > ERRORS_SHOWN else ""
        raise TraceFileError("\n".join(bad[:ERRORS_SHOWN]) + more)
    return file


def push(client: Client, name: str, path: Path, description: str | None) -> int:
    """Push the file as the dataset's next version and print it with its counts."""
    try:
        file = read_items(path)
    except TraceFileError as exc:
        print(f"ragpulse dataset push: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        version, created = client.push_dataset(name, file.traces, description)
    except TracesRejected as exc:
        print(f"ragpulse dataset push: {exc}", file=sys.stderr)
        for error in exc.errors[:ERRORS_SHOWN]:
            print(f"  {where(file, str(error.get('path', '$')))}: {error.get('message', '')}", file=sys.stderr)
        return EXIT_REJECTED
    print(describe(version, created))
    return EXIT_OK


def where(file: TraceFile, path: str) -> str:
    """`line 7: $.items[6].split`: an error path of the service with the file line its item came from."""
    found = _ITEM_PATH.match(path)
    if found is None or file.lines is None or int(found.group(1)) >= len(file.lines):
        return path
    return f"line {file.lines[int(found.group(1))]}: {path}"


def describe(version: DatasetVersion, created: bool = True) -> str:
    """The version, its content hash and its counts, as `push` and `list` print them."""
    counts = version.counts
    state = "" if created else " (unchanged: the latest version already holds these items)"
    lines = [f"dataset {version.name} version {version.version} {version.status}{state}",
             f"  content sha256 {version.content_hash}",
             f"  {counts.items} items: {counts.answerable} answerable, {counts.unanswerable} unanswerable"]
    for label, by in (("split", counts.by_split), ("source", counts.by_source), ("type", counts.by_question_type)):
        lines.append(f"  by {label}: " + ", ".join(f"{key} {n}" for key, n in sorted(by.items())))
    return "\n".join(lines)


def list_datasets(client: Client) -> int:
    """Print every dataset of the tenant with its latest version."""
    found = client.datasets().items
    if not found:
        print("no datasets yet (`ragpulse dataset push NAME FILE.jsonl` makes one)")
    for dataset in found:
        print(f"{describe(dataset.latest)}\n  ({dataset.versions} versions)")
    return EXIT_OK


def delete(client: Client, name: str, version: int | None) -> int:
    """Delete one version of the dataset (or all of it) and print what was removed."""
    removed = client.delete_dataset(name, version)
    versions = ", ".join(str(v) for v in removed.versions) or "none"
    what = f"version {version} of dataset {name}" if version is not None else f"dataset {name}"
    print(f"deleted {what}: versions {versions}, {removed.items} items freed (jobs that ran it keep their results)")
    return EXIT_OK
