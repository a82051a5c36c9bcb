"""Write the shipped qualification suite: `python -m ragpulse.qualification.build_suite` rewrites suite/items.jsonl.

Deterministic: one seeded generator walks the classes in a fixed order, so the same code writes the same bytes (a
test checks the committed file against a fresh build). Single-turn items: SINGLE_PER_CLASS of each failure class,
their domains taken in turn and their facts and phrasings drawn. Chat items: CHAT_SESSIONS conversations of three
turns over one fact (its entity, then "what about" its other party, then whether a condition applies), each turn a
class of its own, the history carrying the earlier turns' actual answers.

The split is a hash of the item id (`split_of`), never a choice: about HELD_OUT_SHARE of the items are held out, and
prompts are tuned on `tune` items only.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ragpulse.model.trace import ChatTurn, RetrievedDoc, Trace
from ragpulse.qualification import templates
from ragpulse.qualification.facts import DOMAINS, Domain, Fact
from ragpulse.qualification.model import HALLUCINATED, FailureClass, Split, SuiteItem
from ragpulse.qualification.templates import Draft, amount, cap, fact_doc, fmt, rule, state, with_distractor

SEED = 20261208
"""The generator's seed: changing it rewrites every item."""
SINGLE_PER_CLASS = {cls: 22 if hallucinated else 20 for cls, hallucinated in HALLUCINATED.items()}
"""Single-turn items per class: 7 x 22 hallucinated, 8 x 20 faithful (314, about half each)."""
CHAT_SESSIONS = 24
"""Conversations of three turns (72 chat items)."""
HELD_OUT_SHARE = 30
"""Percent of item ids whose hash puts them in `held_out`."""
SUITE_PATH = Path(__file__).parent / "suite" / "items.jsonl"

FOLLOW_UPS = ("What about {o}?", "And for {o}?", "Is it the same for {o}?", "How does that work for {o}?")
CONDITION_QUESTIONS = ("Is there any condition to that?", "Does that always apply?", "Any catch?",
                       "Does anything have to be true for that?")
TURN_CLASSES: tuple[tuple[FailureClass, ...], ...] = (
    ("faithful", "numeric_drift", "paraphrase", "unsupported_causal_claim", "hedging", "invented_citation"),
    ("faithful", "entity_swap", "paraphrase", "numeric_drift", "hedging", "superseded_source"),
    ("faithful", "dropped_condition", "paraphrase", "dropped_condition"),
)
"""The classes each turn of a conversation cycles through (turn 0, the follow-up, the condition question)."""


def split_of(item_id: str) -> Split:
    """`held_out` for about HELD_OUT_SHARE percent of ids, by a hash of the id (stable, and no one's choice)."""
    return "held_out" if int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 100 < HELD_OUT_SHARE else "tune"


def build() -> list[SuiteItem]:
    """Every item of the suite, single-turn first."""
    rng = random.Random(SEED)
    items = list(_single(rng))
    items += list(_chats(rng))
    return items


def _single(rng: random.Random) -> Iterator[SuiteItem]:
    seen: set[tuple[str, str]] = set()
    for offset, (cls, count) in enumerate(SINGLE_PER_CLASS.items()):
        for i in range(count):
            domain = DOMAINS[(i + offset) % len(DOMAINS)]
            draft = _unique(rng, seen, lambda: templates.TEMPLATES[cls](rng, domain, rng.choice(domain.facts)))
            yield _item(f"{cls}-{i:03d}", domain, "single", cls, Trace(
                query=draft.query, trace_id=f"{cls}-{i:03d}", retrieved_docs=draft.docs, answer=draft.answer))


def _unique(rng: random.Random, seen: set[tuple[str, str]], write) -> Draft:  # noqa: ANN001 - a thunk
    """A draft whose (query, answer) no earlier item has: a reader (or a fake judge) can tell every item apart."""
    for _ in range(50):
        draft = write()
        if (draft.query, draft.answer) not in seen:
            seen.add((draft.query, draft.answer))
            return draft
    raise RuntimeError("the templates cannot write enough distinct items")


def _item(item_id: str, domain: Domain, kind: str, cls: FailureClass, trace: Trace) -> SuiteItem:
    return SuiteItem(id=item_id, domain=domain.name, kind=kind, failure_class=cls,  # type: ignore[arg-type]
                     hallucinated=HALLUCINATED[cls], split=split_of(item_id), trace=trace)


def _chats(rng: random.Random) -> Iterator[SuiteItem]:
    for s in range(CHAT_SESSIONS):
        domain = DOMAINS[s % len(DOMAINS)]
        fact = domain.facts[(s // len(DOMAINS) + s) % len(domain.facts)]
        session, history = f"chat-{s:03d}", []
        for turn, classes in enumerate(TURN_CLASSES):
            cls = classes[s % len(classes)]
            draft = _turn(rng, domain, fact, turn, cls)
            item_id = f"{session}-t{turn}"
            yield _item(item_id, domain, "chat", cls, Trace(
                query=draft.query, trace_id=item_id, retrieved_docs=draft.docs, answer=draft.answer,
                session_id=session, turn=turn, history=list(history) or None))
            history += [ChatTurn(role="user", content=draft.query), ChatTurn(role="assistant", content=draft.answer)]


def _turn(rng: random.Random, domain: Domain, fact: Fact, turn: int, cls: FailureClass) -> Draft:
    """One conversation turn of class `cls`: turn 0 asks about the entity, 1 about the other party, 2 the condition."""
    if turn == 0:
        return templates.TEMPLATES[cls](rng, domain, fact)
    docs = [fact_doc(domain, fact)]
    if turn == 1:
        query = rng.choice(FOLLOW_UPS).format(o=fact.other)
        n = {"numeric_drift": fact.other_n + rng.choice((1, 2, 5)), "entity_swap": fact.n}.get(cls, fact.other_n)
        if cls == "superseded_source":
            n = fact.other_n + 3
            docs.append(RetrievedDoc(id=f"{docs[0].id}-2019", metadata={"superseded_by": docs[0].id, "version": "2019"},
                                     text=(docs[0].text or "").replace(f" {fmt(fact.other_n)} ", f" {fmt(n)} ")))
        sentence = rule(fact, fact.other, n, cond=False)
        answer = {"paraphrase": f"For {fact.other} it's {amount(fact, n)}.",
                  "hedging": f"I believe {sentence}, but it's worth confirming.",
                  "unsupported_causal_claim": f"{cap(sentence)}, {rng.choice(domain.causes)}."}.get(
                      cls, state(rng, fact, sentence))
        return Draft(query, with_distractor(rng, domain, fact, docs), answer)
    query = rng.choice(CONDITION_QUESTIONS)
    answer = {"faithful": f"There is one: the rule applies {fact.cond}.",
              "paraphrase": f"It depends - the rule holds {fact.cond}.",
              "dropped_condition": rng.choice(("No, there is no condition: it always applies.",
                                               "No catch - it applies to everyone, no strings attached."))}[cls]
    return Draft(query, with_distractor(rng, domain, fact, docs), answer)


def encode(items: list[SuiteItem]) -> bytes:
    """The suite file: one JSON item a line."""
    encoder = msgspec.json.Encoder()
    return b"".join(encoder.encode(item) + b"\n" for item in items)


def main() -> None:
    """Rewrite the shipped suite file."""
    SUITE_PATH.parent.mkdir(exist_ok=True)
    SUITE_PATH.write_bytes(encode(build()))
    print(f"wrote {SUITE_PATH}")


if __name__ == "__main__":
    main()
