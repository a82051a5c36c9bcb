"""The answer's fold (ragpulse.judges.spans), read a run at a time, equals the fold a character at a time: the same
folded text and the same offset for every folded character, on ASCII, odd whitespace and characters that NFKC
expands, drops or turns into a space."""

from __future__ import annotations

import random

from ragpulse.judges import spans
from ragpulse.judges.quotes import fold_char, normalise

DECORATION = frozenset("*_`#")


def fold_by_character(text: str) -> tuple[str, list[int]]:
    """The reference: the fold as it was first written, one character at a time."""
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch in DECORATION:
            continue
        folded = " " if ch.isspace() else fold_char(ch)
        if folded == " " and (not out or out[-1] == " "):
            continue
        out.extend(folded)
        origin.extend([i] * len(folded))
    return "".join(out), origin


ALPHABET = [*"abcXYZ 019.,;:'\"-*_`#\t\n\r\x0b\x0c\x1c\x1f", "\u00a0", "\u2019", "\u201c", "\u2013", "ß", "ﬁ", "\u00a8",
            "É", "\u200b", "\u00ad", "İ", "\u3000", "①", "\u2028", "Ω", "ǅ"]


def test_run_fold_equals_the_character_fold_on_random_text() -> None:
    rng = random.Random(28)
    for _ in range(20_000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
        assert spans._fold(text) == fold_by_character(text), repr(text)


def test_fold_of_an_answer_matches_the_quote_check() -> None:
    answer = "  The **refund** window — 30 days,\u00a0“not” 60.\n\nSee `policy` #2 ﬁnal."
    folded, origin = spans._fold(answer)
    assert folded == normalise(answer.translate(str.maketrans("", "", "*_`#")))
    assert origin == sorted(origin)


def test_locate_finds_a_sentence_after_an_offset_and_anywhere() -> None:
    answer = spans.AnswerText("Refunds take 30 days [1]. Refunds take 30 days. Shipping is free [2].")
    first = answer.locate("Refunds take 30 days.")
    second = answer.locate("Refunds take 30 days.", first[1])
    assert first == (0, 21) and second[0] > first[0]
    assert answer.locate("shipping is FREE") is not None
    assert answer.locate("Returns are never accepted.") is None


def test_answer_text_is_read_once_per_answer() -> None:
    assert spans.answer_text("One sentence.") is spans.answer_text("One sentence.")
