"""A sound prefilter for regular expressions: which literal strings a match must contain, checked in one pass.

Python's `re` tries a large alternation at every position of a text, which makes the injection cues cost ~0.5 ms per
KB. Most documents hold none of the words a cue needs, so a pattern runs only when the literals its matches need
occur in the text. The requirement is read off the parsed pattern:

- a run of items with a small finite language (literals, small character classes, alternations and optional parts
  of those, zero-width assertions such as `\\b`) requires one of the run's strings: `(?:dear|hi),? (?:ai|bot)`
  requires one of "dear ai", "dear, ai", "hi ai", ... (at most `MAX_STRINGS` of them, else the run is cut);
- a sequence requires every one of its runs' and items' requirements (all must hold);
- an alternation requires one of its branches' requirements (none when a branch requires nothing);
- a repeat at least once requires what its body requires; anything else (`\\s*`, `.`, `[^.]`) requires nothing.

So a pattern is skipped only when some literal that every match contains is absent: never a match missed, which
`tests/test_security_checks.py` also checks on the labelled snippets and on random texts. The literals of several
patterns are found in one pass with an Aho-Corasick automaton (pyahocorasick) when it can be imported, else by a
substring search per literal asked for (slower, same answers).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from re import _constants as c  # type: ignore[attr-defined]  # the parser's opcodes (CPython's own, stable in 3.11+)
from re import _parser  # type: ignore[attr-defined]
from typing import Union

try:  # C Aho-Corasick: every literal of every pattern found in one pass over the text
    import ahocorasick
except ImportError:  # pragma: no cover - a plain `in` per literal gives the same answers, slower
    ahocorasick = None

MAX_STRINGS = 256
"""Largest finite language kept for one run of a pattern (more strings are cut into shorter runs)."""
MAX_CLASS = 16
"""Largest character class (`[1-9]`, `[:,]`) read as a set of one-character strings."""

Requirement = Union[frozenset[str], tuple[str, tuple["Requirement", ...]], None]
"""A set of strings one of which must occur; ("and" | "or", parts); or None: nothing is required."""
Required = frozenset[str] | None
"""The older, flat form: strings one of which every match contains (the union of the requirement's literals)."""

_ZERO_WIDTH = (c.AT, c.ASSERT, c.ASSERT_NOT)
_REPEATS = tuple(op for op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) if op is not None)


class Present:
    """Which literals occur in one text: found all at once (Aho-Corasick), or asked one by one and remembered."""

    __slots__ = ("_found", "_text")

    def __init__(self, text: str, found: set[str] | None = None) -> None:
        self._text = text
        self._found = found

    def any_of(self, literals: frozenset[str]) -> bool:
        """Whether one of `literals` occurs in the text."""
        if self._found is not None:
            return not literals.isdisjoint(self._found)  # a set operation over the smaller of the two
        return any(literal in self._text for literal in literals)


class Prefiltered:
    """A compiled pattern with the requirement its matches meet."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.requirement: Requirement = (None if pattern.flags & re.IGNORECASE
                                         else _simplified(requirement(_parser.parse(pattern.pattern, pattern.flags))))
        self.required: Required = _flat(self.requirement)
        self._holds = _compiled(self.requirement)

    def could_match(self, text: str | Present) -> bool:
        """False only when no match can exist in `text` (a literal every match contains is absent from it)."""
        present = text if isinstance(text, Present) else Present(text)
        if self.required is None:
            return True
        # A met requirement has one of its literals present: most texts are turned away by this one set operation.
        return present.any_of(self.required) and self._holds(present)

    def literals(self) -> frozenset[str]:
        """Every literal the requirement names."""
        return _literals(self.requirement)


class LiteralScan:
    """Finds, in one pass over a text, which of the literals of some patterns occur in it."""

    def __init__(self, patterns: Iterable[Prefiltered]) -> None:
        literals = frozenset().union(*(p.literals() for p in patterns))
        self.automaton = None
        if ahocorasick is not None and literals:
            self.automaton = ahocorasick.Automaton()
            for literal in literals:
                self.automaton.add_word(literal, literal)
            self.automaton.make_automaton()

    def present(self, text: str) -> Present:
        """The literals of `text`, for `Prefiltered.could_match`."""
        if self.automaton is None:
            return Present(text)
        return Present(text, {literal for _end, literal in self.automaton.iter(text)})


def holds(req: Requirement, present: Present) -> bool:
    """Whether `present` meets the requirement (None always does)."""
    if req is None:
        return True
    if isinstance(req, frozenset):
        return present.any_of(req)
    kind, parts = req
    if kind == "and":
        return all(holds(part, present) for part in parts)
    return any(holds(part, present) for part in parts)


def _compiled(req: Requirement) -> Callable[[Present], bool]:
    """`holds` for one requirement as a generated expression: no recursion per text, and the parts of an "and"
    tested rarest first (longest shortest literal), so a text usually fails on its first test."""
    sets: list[frozenset[str]] = []

    def expression(part: Requirement) -> str:
        if part is None:
            return "True"
        if isinstance(part, frozenset):
            sets.append(part)
            return f"p.any_of(s[{len(sets) - 1}])"
        kind, parts = part
        ordered = sorted(parts, key=_rarity, reverse=True) if kind == "and" else parts
        return "(" + f" {kind} ".join(expression(x) for x in ordered) + ")"

    code = f"lambda p: {expression(req)}"
    return eval(code, {"s": tuple(sets)})  # noqa: S307 - built here from the pattern's own literals, not from input


def _rarity(part: Requirement) -> int:
    """How unlikely a part is to hold on a text: the length of its shortest literal."""
    literals = _literals(part)
    return min(map(len, literals)) if literals else 0


def required(sequence: _parser.SubPattern) -> Required:
    """The union of the literals a sequence of regex items requires (None when none is required)."""
    return _flat(requirement(sequence))


def requirement(sequence: Iterable[tuple[object, object]]) -> Requirement:
    """What every match of a sequence of parsed regex items contains."""
    parts: list[Requirement] = []
    run: set[str] | None = {""}

    def flush() -> None:
        nonlocal run
        if run is not None and "" not in run:
            parts.append(frozenset(run))
        run = {""}

    for op, av in sequence:
        strings = _language(op, av)
        if strings is not None and run is not None and len(run) * len(strings) <= MAX_STRINGS:
            run = {a + b for a, b in itertools.product(run, strings)}
            continue
        flush()
        if strings is not None:
            run = set(strings)
            continue
        part = _item(op, av)
        if part is not None:
            parts.append(part)
    flush()
    return _all(parts)


def _language(op: object, av: object) -> frozenset[str] | None:
    """Every string the item can match, when that set is finite and small; None otherwise."""
    if op is c.LITERAL:
        return frozenset({chr(av)})  # type: ignore[arg-type]
    if op in _ZERO_WIDTH:
        return frozenset({""})  # consumes nothing: the strings around it meet
    if op is c.IN:
        return _class(av)  # type: ignore[arg-type]
    if op is c.SUBPATTERN:
        return None if _case_blind(av) else _sequence_language(av[-1])  # type: ignore[index]
    if op is c.BRANCH:
        branches = [_sequence_language(branch) for branch in av[1]]  # type: ignore[index]
        if any(b is None for b in branches):
            return None
        union = frozenset().union(*branches)  # type: ignore[arg-type]
        return union if len(union) <= MAX_STRINGS else None
    if op in _REPEATS:
        low, high, body = av  # type: ignore[misc]
        if high > 3:
            return None
        inner = _sequence_language(body)
        if inner is None:
            return None
        out: set[str] = set()
        for times in range(low, high + 1):
            out.update("".join(p) for p in itertools.product(inner, repeat=times))
            if len(out) > MAX_STRINGS:
                return None
        return frozenset(out)
    return None


def _sequence_language(sequence: Iterable[tuple[object, object]]) -> frozenset[str] | None:
    strings: frozenset[str] = frozenset({""})
    for op, av in sequence:
        item = _language(op, av)
        if item is None or len(strings) * len(item) > MAX_STRINGS:
            return None
        strings = frozenset(a + b for a, b in itertools.product(strings, item))
    return strings


def _class(items: list[tuple[object, object]]) -> frozenset[str] | None:
    chars: set[str] = set()
    for op, av in items:
        if op is c.LITERAL:
            chars.add(chr(av))  # type: ignore[arg-type]
        elif op is c.RANGE and av[1] - av[0] < MAX_CLASS:  # type: ignore[index,operator]
            chars.update(chr(i) for i in range(av[0], av[1] + 1))  # type: ignore[index,operator]
        else:  # NEGATE, CATEGORY, a wide range
            return None
    return frozenset(chars) if 0 < len(chars) <= MAX_CLASS else None


def _item(op: object, av: object) -> Requirement:
    """The requirement of an item whose language is not small: its body's, when it must occur."""
    if op is c.SUBPATTERN:
        return None if _case_blind(av) else requirement(av[-1])  # type: ignore[index]
    if op is c.BRANCH:
        branches = [requirement(branch) for branch in av[1]]  # type: ignore[index]
        if any(b is None for b in branches):
            return None
        return ("or", tuple(branches))
    if op in _REPEATS and av[0] >= 1:  # type: ignore[index]
        return requirement(av[2])  # type: ignore[index]
    return None


def _case_blind(av: object) -> bool:
    """A group with inline flags that change how literals match (`(?i:...)`): its literals are not required as
    written."""
    add_flags = av[1] if isinstance(av, tuple) and len(av) == 4 else 0  # type: ignore[index]
    return bool(add_flags & (re.IGNORECASE | re.VERBOSE))


def _all(parts: list[Requirement]) -> Requirement:
    kept = [p for p in parts if p is not None]
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else ("and", tuple(kept))


def _simplified(req: Requirement) -> Requirement:
    """The same requirement with nested parts of one kind flattened and the literal sets of an "or" merged."""
    if req is None or isinstance(req, frozenset):
        return req
    kind, parts = req
    flat: list[Requirement] = []
    for part in (_simplified(p) for p in parts):
        if isinstance(part, tuple) and part[0] == kind:
            flat.extend(part[1])
        else:
            flat.append(part)
    if kind == "or":
        merged = frozenset().union(*(p for p in flat if isinstance(p, frozenset)))
        flat = [p for p in flat if not isinstance(p, frozenset)] + ([merged] if merged else [])
    return flat[0] if len(flat) == 1 else (kind, tuple(flat))


def _literals(req: Requirement) -> frozenset[str]:
    if req is None:
        return frozenset()
    if isinstance(req, frozenset):
        return req
    return frozenset().union(*(_literals(part) for part in req[1]))


def _flat(req: Requirement) -> Required:
    literals = _literals(req)
    return literals or None
