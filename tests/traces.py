"""Small synthetic trace sets for comparisons and gates: labelled retrieval with grounded answers, and the same
set with retrieval or answers made worse in a known way."""

from __future__ import annotations

import copy

PRODUCTS = ["kettle", "toaster", "blender", "heater", "scanner", "router", "monitor", "speaker", "printer", "camera"]


def _fact(i: int, what: str) -> str:
    product = PRODUCTS[i % len(PRODUCTS)]
    return {"gold": f"The {product} model {i} has a warranty of {i % 4 + 2} years from the date of purchase.",
            "a": f"The {product} model {i} weighs {i % 5 + 1} kilograms and ships in a recycled box.",
            "b": f"Replacement filters for the {product} model {i} are sold in packs of {i % 3 + 2}.",
            "c": f"The {product} model {i} is available in {i % 6 + 2} colours in most regions."}[what]


def faithful_traces(n: int) -> list[dict]:
    """n labelled traces: the gold document first, two distractors, an answer that repeats the gold passage."""
    return [{"trace_id": f"q{i}", "query": f"How long is the warranty of the {PRODUCTS[i % len(PRODUCTS)]} model {i}?",
             "retrieved_docs": [{"id": f"d{i}", "text": _fact(i, "gold")}, {"id": f"x{i}a", "text": _fact(i, "a")},
                                {"id": f"x{i}b", "text": _fact(i, "b")}],
             "answer": _fact(i, "gold"), "gold_doc_ids": [f"d{i}"], "question_type": "single_fact",
             "source": "synthetic"} for i in range(n)]


def dropped_for_a_third(traces: list[dict]) -> list[dict]:
    """Every third trace (0, 3, 6...) loses its relevant document to a distractor, and answers from what is left."""
    changed = copy.deepcopy(traces)
    for i, trace in enumerate(changed):
        if i % 3 == 0:
            trace["retrieved_docs"] = [trace["retrieved_docs"][1], trace["retrieved_docs"][2],
                                       {"id": f"x{i}c", "text": _fact(i, "c")}]
            trace["answer"] = trace["retrieved_docs"][0]["text"]
    return changed


def unfaithful_every_other(traces: list[dict]) -> list[dict]:
    """Every other trace answers with claims no retrieved document supports."""
    changed = copy.deepcopy(traces)
    for i, trace in enumerate(changed):
        if i % 2 == 0:
            trace["answer"] = (f"The warranty of model {i} lasts a lifetime and covers flood damage. It also includes "
                               "free yearly servicing at any authorised dealer in Antarctica.")
    return changed
