"""A plain RAG app that logs every answer to ragpulse with the Python SDK, without ever waiting on it.

    ./scripts/run &                                   # a local ragpulse on :8080
    .venv/bin/python examples/sdk_app.py --server http://127.0.0.1:8080 [--api-key KEY]

Retrieval and generation are fakes (keyword overlap over four documents, an answer that repeats the best one);
what matters is where the SDK sits: one client for the process, one `log_trace` per answered request."""

from __future__ import annotations

import argparse
import os
import time

from ragpulse.sdk import RagpulseClient

DOCS = {
    "doc-warranty": "The Nimbus Thermostat warranty lasts two years from the date of purchase.",
    "doc-returns": "Unopened products can be returned within 30 days for a full refund.",
    "doc-wifi": "To pair the thermostat with Wi-Fi, hold the dial for five seconds and choose your network.",
    "doc-e14": "Error E14 means the C-wire is missing; power the thermostat with the adapter.",
}


def retrieve(question: str, k: int = 2) -> list[dict]:
    """The k documents sharing the most words with the question, best first, with that overlap as the score."""
    words = set(question.lower().split())
    scored = sorted(((len(words & set(text.lower().split())), doc_id, text) for doc_id, text in DOCS.items()),
                    reverse=True)
    return [{"id": doc_id, "text": text, "score": float(score)} for score, doc_id, text in scored[:k]]


def generate(question: str, docs: list[dict]) -> str:
    """A stand-in for the LLM call: answers with the best passage."""
    return docs[0]["text"] if docs and docs[0]["score"] > 1 else "I don't know."


def answer(client: RagpulseClient, question: str) -> str:
    """Serve one question, then hand its trace to the SDK (a queue put: the user never waits for ragpulse)."""
    start = time.perf_counter()
    docs = retrieve(question)
    retrieved = time.perf_counter()
    reply = generate(question, docs)
    done = time.perf_counter()
    client.log_trace(app="nimbus-support", source="production", query=question, retrieved_docs=docs,
                     answer=reply, latency_ms={"retrieval": (retrieved - start) * 1000,
                                               "generation": (done - retrieved) * 1000,
                                               "total": (done - start) * 1000},
                     usage={"prompt_tokens": sum(len(d["text"]) // 4 for d in docs) + len(question) // 4,
                            "completion_tokens": len(reply) // 4})
    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default=f"http://127.0.0.1:{os.environ.get('RAGPULSE_PORT', '8080')}")
    parser.add_argument("--api-key", default=os.environ.get("RAGPULSE_API_KEY"))
    args = parser.parse_args()
    questions = ["How long is the warranty?", "What does error E14 mean?", "How do I pair with Wi-Fi?",
                 "Can I return an opened product?", "What colour is the box?"]
    with RagpulseClient(args.server, args.api_key, flush_interval_ms=200) as client:
        for question in questions:
            print(f"{question} -> {answer(client, question)}")
        client.flush(timeout=10)
        print(client.stats())


if __name__ == "__main__":
    main()
