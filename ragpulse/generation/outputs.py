"""What each generation call answers: the tools' inputs as msgspec structs, from which the tool schemas are generated
(prompts) and against which every output is decoded (run)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

Text = Annotated[str, Meta(min_length=1, max_length=32_768)]


class Written(msgspec.Struct, forbid_unknown_fields=True):
    """write_question's input."""

    question: Annotated[Text, Meta(description="The question, as a user would ask it.")]
    answer: Annotated[Text, Meta(description="The reference answer, from the passages only.")]
    key_facts: Annotated[list[Annotated[str, Meta(min_length=1, max_length=4096)]], Meta(
        max_length=100, description="The facts a correct answer states, each short.")]


class WrittenUnanswerable(msgspec.Struct, forbid_unknown_fields=True):
    """write_unanswerable's input."""

    question: Annotated[Text, Meta(description="The question no passage answers.")]
    why_unanswerable: Annotated[str, Meta(description="What the passages do not say.")]


class ClosedBook(msgspec.Struct, forbid_unknown_fields=True):
    """answer_closed_book's input."""

    answer: Annotated[str | None, Meta(description="Your answer, or null when you do not know.")]


class Verdict(msgspec.Struct, forbid_unknown_fields=True):
    """verify_question's input."""

    passage_answers: Annotated[bool, Meta(description="The passages alone fully answer the question.")]
    closed_book_correct: Annotated[bool, Meta(description=(
        "The closed-book answer is correct; false when it is wrong, incomplete or absent."))]
    reason: Annotated[str, Meta(description="One short sentence.")]
