"""Repair-turn and judge_error rates of the OpenAI-compatible judge against a sloppy model simulated on loopback.

The fake (tests/fake_openai.py) judges literally; here each call's output is spoilt at fixed rates, as a small
self-hosted model spoils it:
- a schema fault (SCHEMA_RATE): a required field left out, a score written as a string, an unknown field added;
- a relevance fault (RELEVANCE_RATE): the last document's relevance entry left out (valid JSON, caught in code);
- a dropped sentence (DROP_RATE, answers of two or more sentences): the last claim left out (prompt v2) or the last
  sentence with its claims (v3).
When the request asks for `strict` output, schema faults cannot happen (constrained decoding, as OpenAI's strict mode
and vLLM's guided decoding do); the other two are schema-valid and still can. A repair call is a fresh sample.

So the figures show what each version's checks and strictness do with this fault mix; they are not a real model's
rates. Run it on any tree that has tests/fake_openai.py (the same script measures main's prompt v2):

    python bench/judge_strict.py [traces] [seed] [--ignore-strict]

`--ignore-strict` makes the fake ignore `strict` (a server without constrained decoding): v3's checks without it.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import threading
from pathlib import Path
from typing import Any

import openai

sys.path.insert(0, str(Path.cwd()))

from ragpulse.exceptions import JudgeOutputInvalid  # noqa: E402
from ragpulse.judges.openai_judge import OpenAIJudge  # noqa: E402
from ragpulse.judges.structured import RetryPolicy  # noqa: E402
from ragpulse.model.trace import RetrievedDoc, Trace  # noqa: E402
from tests import fake_openai  # noqa: E402

SCHEMA_RATE = 0.15
RELEVANCE_RATE = 0.05
DROP_RATE = 0.10
STRICT = threading.local()
literal = fake_openai.literal_verdicts


def spoilt(trace: dict[str, Any]) -> dict[str, Any]:
    """The literal verdicts, spoilt at the module's rates (schema faults only when the request is not strict)."""
    output = literal(trace)
    if not getattr(STRICT, "on", False) and random.random() < SCHEMA_RATE:
        fault = random.choice(["missing", "string", "unknown"])
        if fault == "missing":
            output.pop("answer_relevance_reason")
        elif fault == "string":
            output["answer_relevance"] = str(output["answer_relevance"])
        else:
            output["confidence"] = 0.9
    if random.random() < RELEVANCE_RATE and output["context_relevance"]:
        output["context_relevance"].pop()
    listed = "sentences" if "sentences" in output else "claims"
    if random.random() < DROP_RATE and len(output[listed]) >= 2:
        output[listed].pop()
    return output


class SloppyOpenAI(fake_openai.FakeOpenAI):
    """The loopback fake, told per request whether the output is constrained to the schema."""

    def respond(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        tools = body.get("tools") or []
        schema = (body.get("response_format") or {}).get("json_schema") or {}
        asked = bool(schema.get("strict") or any(t["function"].get("strict") for t in tools))
        STRICT.on = asked and "--ignore-strict" not in sys.argv
        return super().respond(path, body, headers)


def traces(n: int) -> list[Trace]:
    """Answers of two to four sentences, each in a document, over three documents."""
    docs = [RetrievedDoc(id=f"d{i}", text=f"Plan {i} costs {10 * i} dollars. Plan {i} has {i + 2} seats. "
                                          f"Plan {i} renews yearly.") for i in range(1, 4)]
    return [Trace(query=f"Plan {n}?", retrieved_docs=docs, answer=" ".join(
        [f"Plan {1 + k % 3} costs {10 * (1 + k % 3)} dollars.", f"Plan {1 + k % 3} has {3 + k % 3} seats.",
         f"Plan {1 + k % 3} renews yearly."][:2 + k % 2])) for k in range(n)]


async def run(n: int) -> dict[str, Any]:
    fake_openai.literal_verdicts = spoilt
    with SloppyOpenAI() as fake:
        client = openai.AsyncOpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
        judge = OpenAIJudge(client, fake.model, 2048, structured="tools", retry=RetryPolicy(max_retries=0))
        repaired = errors = silent = 0
        for trace in traces(n):
            try:
                judgment = await judge.ajudge(trace)
            except JudgeOutputInvalid:
                errors += 1
                continue
            repaired += len(judgment.calls) > 1
            silent += len(judgment.output.claims) < (trace.answer or "").count(".")
        await client.close()
    return {"traces": n, "repair_rate": repaired / n, "judge_error_rate": errors / n,
            "silently_dropped_claim_rate": silent / n}


if __name__ == "__main__":
    numbers = [int(a) for a in sys.argv[1:] if a.isdigit()]
    random.seed(numbers[1] if len(numbers) > 1 else 1)
    print(json.dumps(asyncio.run(run(numbers[0] if numbers else 400))))
