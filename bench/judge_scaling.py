"""How the local judge's time grows with its input: seconds per MB on a large trace against a small one.

Run: .venv/bin/python bench/judge_scaling.py [--quick]

Two shapes of input, each measured small (the reference) and large in the same run, on the same machine:

- many documents: 1,000 retrieved documents of 30 KB each (30 MB of context) and a five-sentence answer,
  against 10 documents of 30 KB;
- a long answer: a 1 MiB answer against five 2 KB documents, against a 16 KiB answer.

The text is built from the sentences of tests/data/judge_labels*.jsonl with a third of their words replaced by words of a
made-up vocabulary and their numbers redrawn, so that documents differ while reading like the real ones; a fixed
seed makes every run judge the same traces. The judge is called directly (LocalJudge.evaluate): no truncation
(RAGPULSE_JUDGE_MAX_* caps what a worker hands the judge; this bench measures the judge itself).

Each time is the best of several runs (5 of each small input, 2 or 3 of each large one): on a shared machine the
quickest run is the least disturbed. The figure is the ratio of seconds per MB, large / small: 1 for a judge linear
in its input, about the size ratio (100 and 64 here) for a quadratic one. Target: at most 2 for both shapes. Exits 0
on a missed target (it is a benchmark, not a test); tests/test_judge_scaling.py guards the same property on smaller
inputs. bench/README.md records the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragpulse.judges.local import LocalJudge  # noqa: E402
from ragpulse.judges.text import split_sentences  # noqa: E402
from ragpulse.model.trace import Trace  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
TARGET_RATIO = 2.0
"""Seconds per MB of the large input over that of the small one."""
SYLLABLES = ("ka", "lo", "mi", "ra", "ven", "tor", "sel", "dun", "pra", "qui", "zo", "bel", "nar", "fex", "ul", "tri")


class TextMaker:
    """Deterministic text that reads like the labelled traces' documents and answers."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        rows = [json.loads(line)["trace"] for path in sorted(DATA.glob("judge_labels*.jsonl"))
                for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        self.queries = [row["query"] for row in rows]
        self.sentences = [s for row in rows for doc in row["retrieved_docs"] for s in split_sentences(doc.get("text") or "")]
        self.answers = [s for row in rows for s in split_sentences(row.get("answer") or "")]
        self.vocabulary = ["".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 4)))
                           for _ in range(20_000)]

    def sentence(self, pool: list[str]) -> str:
        """A sentence of `pool` with about a third of its words replaced and its numbers redrawn."""
        words = self.rng.choice(pool).split()
        for i, word in enumerate(words):
            if re.fullmatch(r"\d+", word):
                words[i] = str(self.rng.randint(1, 999))
            elif word.isalpha() and self.rng.random() < 0.33:
                words[i] = self.rng.choice(self.vocabulary)
        return " ".join(words)

    def text(self, chars: int, pool: list[str]) -> str:
        parts, size = [], 0
        while size < chars:
            parts.append(self.sentence(pool))
            size += len(parts[-1]) + 1
        return " ".join(parts)[:chars]


def many_documents(maker: TextMaker, docs: int, doc_chars: int) -> Trace:
    """`docs` documents of `doc_chars` characters; the answer repeats two of their sentences and adds three."""
    texts = [maker.text(doc_chars, maker.sentences) for _ in range(docs)]
    picked = [split_sentences(maker.rng.choice(texts))[1] for _ in range(2)]
    answer = " ".join(picked + [maker.sentence(maker.answers) for _ in range(3)])
    return msgspec.convert({"trace_id": "many-docs", "query": maker.rng.choice(maker.queries), "answer": answer,
                            "retrieved_docs": [{"id": f"d{i}", "text": text} for i, text in enumerate(texts)]}, Trace)


def long_answer(maker: TextMaker, answer_chars: int) -> Trace:
    """Five 2 KB documents and an answer of `answer_chars` characters, a tenth of its sentences taken from them."""
    texts = [maker.text(2000, maker.sentences) for _ in range(5)]
    quotable = [s for text in texts for s in split_sentences(text)]
    parts, size = [], 0
    while size < answer_chars:
        parts.append(maker.rng.choice(quotable) if maker.rng.random() < 0.1 else maker.sentence(maker.answers))
        size += len(parts[-1]) + 1
    return msgspec.convert({"trace_id": "long-answer", "query": maker.rng.choice(maker.queries),
                            "answer": " ".join(parts)[:answer_chars],
                            "retrieved_docs": [{"id": f"d{i}", "text": text} for i, text in enumerate(texts)]}, Trace)


def size_mb(trace: Trace) -> float:
    return len(msgspec.json.encode(trace)) / 1e6


def timed(trace: Trace, repeats: int) -> float:
    """Best of `repeats` runs, in seconds: on a shared machine the quickest run is the one least disturbed."""
    judge, best = LocalJudge(), float("inf")
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        judge.evaluate(trace)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="large inputs a tenth of the size (a smoke run)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    maker = TextMaker(seed=20261130)
    shapes = {  # (small, large, runs of the large one): the small one is judged 5 times
        "many documents": (many_documents(maker, 10, 30_000), many_documents(maker, 1000 // scale, 30_000), 2),
        "long answer": (long_answer(maker, 16 * 1024), long_answer(maker, 1024 * 1024 // scale), 3),
    }
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"{'shape':16} {'input':>6} {'MB':>8} {'seconds':>9} {'s/MB':>8}")
    failed = []
    for name, (small, large, large_runs) in shapes.items():
        rows = []
        for label, trace, repeats in (("small", small, 5), ("large", large, large_runs)):
            mb, seconds = size_mb(trace), timed(trace, repeats)
            rows.append(seconds / mb)
            print(f"{name:16} {label:>6} {mb:8.3f} {seconds:9.3f} {seconds / mb:8.3f}")
        ratio = rows[1] / rows[0]
        verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
        failed += [name] if verdict == "FAIL" else []
        print(f"{name:16} ratio of s/MB, large / small: {ratio:.2f} (target <= {TARGET_RATIO}): {verdict}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print("all targets met" if not failed else f"missed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
