"""What datasets cost: Redis memory per stored item, pushing and reading a version, and binding a batch to one at
intake (filling each trace from its item) against intake of the same batch with its labels inline (the peer, measured
in this run: what a client sends without a dataset).

Run: .venv/bin/python bench/datasets.py [--items 20000] [--traces 10000]

Items are shaped like a real eval set: a 60-character query, two gold documents, a 250-character reference answer,
a question type and a split. Figures: bytes of Redis memory per item (reported; it sizes
RAGPULSE_DATASET_ITEMS_PER_TENANT), push and lookup times (reported), and intake of a bound batch (traces carrying only
item ids, answers and one retrieved document: decoded, then bound) ÷ intake of the same batch unbound, each trace
carrying its query and labels itself (the peer: what a client sends without a dataset). Reported, no target: about
half of binding is msgspec re-validating each stored item as it is read (item ids' pattern, lengths), which an
unconstrained read-side struct would skip (measured 48 ms -> 13 ms for 10,000 items), at the price of a second
declaration of the item's fields. Decoding the bare bound batch alone is reported too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragpulse.intake.binding import bind_dataset  # noqa: E402
from ragpulse.intake.decode import decode_batch  # noqa: E402
from ragpulse.model.dataset import DatasetItem, DatasetVersionPost  # noqa: E402
from ragpulse.ops.redis_server import PrivateRedis  # noqa: E402
from ragpulse.store.datasets import DatasetLimits, DatasetStore  # noqa: E402



def make_items(n: int) -> list[DatasetItem]:
    return [DatasetItem(item_id=f"item-{i:06d}", query=f"How do I configure the widget number {i} on my account?",
                        gold_doc_ids=[f"doc-{i % 997}", f"doc-{(i * 7) % 997}"],
                        reference_answer="Open settings, choose widgets, and select the option you need. " * 4,
                        question_type="single_fact", split="test" if i % 5 == 0 else "dev") for i in range(n)]


def best_of(runs: int, action) -> float:
    timings = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--traces", type=int, default=10_000)
    args = parser.parse_args()
    server = PrivateRedis().start()
    try:
        client = redis.Redis.from_url(server.url)
        store = DatasetStore(client, DatasetLimits(datasets=10, versions=10, items=10 * args.items))
        post = DatasetVersionPost(items=make_items(args.items))
        before = client.info("memory")["used_memory"]
        push = best_of(1, lambda: store.create_version("bench", "set", post))
        per_item = (client.info("memory")["used_memory"] - before) / args.items
        ids = [f"item-{i % args.items:06d}" for i in range(args.traces)]
        lookup = best_of(3, lambda: store.lookup_items("bench", "set", 1, ids))
        body = json.dumps({"dataset": {"name": "set", "version": 1}, "traces": [
            {"item_id": item_id, "answer": "Open settings.", "retrieved_docs": [{"id": "doc-1", "text": "Settings."}]}
            for item_id in ids]}).encode()
        by_id = {item.item_id: item for item in post.items}
        inline = json.dumps({"traces": [
            {"query": by_id[i].query, "gold_doc_ids": by_id[i].gold_doc_ids,
             "reference_answer": by_id[i].reference_answer, "question_type": by_id[i].question_type,
             "answer": "Open settings.", "retrieved_docs": [{"id": "doc-1", "text": "Settings."}]} for i in ids]}).encode()
        decode = best_of(5, lambda: decode_batch(body))
        bound = best_of(5, lambda: bind_dataset(decode_batch(body), "bench", store))
        peer = best_of(5, lambda: decode_batch(inline))
    finally:
        server.stop()
    ratio = bound / peer
    print(f"{args.items} items: {per_item:.0f} B of Redis per item; push {push:.2f} s; lookup of {args.traces} ids "
          f"{lookup * 1000:.0f} ms")
    print(f"{args.traces} traces: bound intake {bound * 1000:.0f} ms (decoding alone {decode * 1000:.0f} ms) vs the "
          f"same batch with its labels inline {peer * 1000:.0f} ms = {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
