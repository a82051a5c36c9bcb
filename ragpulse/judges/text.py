"""How the offline judge reads text: Unicode tokens, language, stems, anchors (numbers with units, codes, dates,
names) and negation, per sentence and clause.

A heuristic reading, not understanding: see docs/local_judge.md for what it cannot do.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any

import snowballstemmer

from ragpulse.judges import lexicon

Anchor = tuple[str, Any]
"""(kind, value): ("qty", (dimension, base amount, number as written)), ("num", 30.0), ("code", "e1045"),
("month", 3), ("weekday", 1), ("name", "nova")."""

_TOKEN = re.compile(r"[^\W_]+(?:[.,:'’\-/][^\W_]+)*|[$€£%°]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_GLUED = re.compile(r"(\d+(?:[.,]\d+)?)([^\W\d_]+)")
_WORD_NUMBER = re.compile(r"([^\W\d_]{3,})-(\d+)")
""""Priority-1" is the word and the number of "Priority 1"; a short prefix stays a code ("PA-1", "E-14")."""
_ELISION = re.compile(r"^(?:[ldcjmnst]|qu|dell|dall|nell|sull|all|un|quell|quest)['’](.+)$")
_BOUNDARY = re.compile(r"[.!?][\"')\]]*(?P<gap>\s+)|[。！？][」』）\"')]*(?P<cjk>\s*)|(?P<newline>\n+)")
_CLAUSE = re.compile(r"[,;:](?=\s)|[;()]|\s(?:but|whereas|while|although|except|unless|aber|jedoch|während|pero|mientras|"
                     r"excepto|mais|tandis|sauf|mas|enquanto|exceto|ma|mentre|tranne)\s|"
                     r"\s(?:and|or)\s(?=(?:is|are|was|were|does|do|did|can|cannot|can't|must|has|have|will|won't|"
                     r"should|may|isn't|aren't|doesn't|don't|never)\b)")
"""Clause boundaries: punctuation, contrastive conjunctions, and "and"/"or" before a second verb ("requires a 24 V
supply and is not compatible with ..." negates only the second predicate)."""
_ABBREVIATIONS = frozenset("e.g. i.e. etc. vs. approx. no. fig. dr. mr. mrs. ms. st. inc. ltd. cf. incl. z.b. "
                           "bzw. ca. usw. p.ex. ej. sr. sra.".split())
_TIME_ABBREVIATIONS = frozenset("a.m. p.m. am. pm.".split())
""""9 p.m. on weekdays" goes on; "closes at 9 p.m. On Sundays ..." starts a sentence (a capital that is no weekday
or month)."""
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
"""Kana, CJK ideographs and Hangul: written without spaces, so a run of them is read as character pairs."""
_CJK_RUNS = re.compile(r"\d+(?:[.,]\d+)*|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+|"
                       r"[^\W\d_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_CLAUSE_KEPT = re.compile(f"({_CLAUSE.pattern})")
"""The clause boundaries, kept: which delimiter opens a clause decides what negation it inherits."""
_VERBS_AFTER_SUBJECT = frozenset("can could must may might should will would shall are is were was have has need "
                                  "kann können muss müssen darf sind ist puede pueden debe deben son es peut peuvent "
                                  "doit doivent sont est pode podem deve devem são é può possono deve devono sono è "
                                  "kan kunnen moet moeten zijn is".split())
"""A verb right after a "without" phrase: the phrase restricts the subject before the verb."""
_ARTICLES = frozenset("a an the any ein eine einen der die das un una el la los las une le les um uma o os il lo gli".split())
_ENGLISH_CLITICS = ("n't", "'s", "'re", "'ve", "'ll", "'d", "'m")


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, verbatim; no split after "e.g." and the like, nor inside "2.5" or "v3.2.1"."""
    sentences, start = [], 0
    for boundary in _BOUNDARY.finditer(text):
        end = boundary.start(next(g for g in ("gap", "cjk", "newline") if boundary.group(g) is not None))
        if boundary.group("gap") and not _ends_sentence(_last_word(text, start, end), text, boundary.end()):
            continue
        sentences.append(text[start:end].strip())
        start = boundary.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _ends_sentence(last_word: str, text: str, after: int) -> bool:
    """Whether a full stop after `last_word` ends the sentence: not after "e.g." and the like, nor after "No." before
    a number ("No. 5"), nor after "p.m." when the next word is lower case, a number, a weekday or a month."""
    word = last_word.lower().lstrip("(\"'[")
    nxt = text[after:after + 40].split(maxsplit=1)[0] if text[after:after + 40].strip() else ""
    if word == "no.":
        return not nxt[:1].isdigit()
    if word in _TIME_ABBREVIATIONS:
        bare = nxt.strip(",.;:").casefold()
        return nxt[:1].isupper() and bare not in lexicon.WEEKDAYS and bare not in lexicon.MONTHS
    return word not in _ABBREVIATIONS


def _last_word(text: str, start: int, end: int) -> str:
    """The last whitespace-separated word of text[start:end] ("" if none), found from the end: a run of "e.g."
    does not make each boundary re-read the sentence so far."""
    stop = end
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    begin = stop
    while begin > start and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:stop]


def clauses(sentence: str) -> list[str]:
    """Parts of a sentence between commas, semicolons and contrastive conjunctions: the scope of a negation."""
    return [c for c in _CLAUSE.split(sentence) if c and c.strip()]


def _delimited_clauses(sentence: str) -> list[tuple[str, str]]:
    """Each clause of a sentence with the delimiter before it ("" for the first)."""
    out, delimiter = [], ""
    for i, part in enumerate(_CLAUSE_KEPT.split(sentence)):
        if i % 2:
            delimiter = part.strip()
        elif part.strip():
            out.append((part, delimiter))
    return out


class _Scope:
    """The negation a clause inherits (0 or 1), walking a sentence's clauses in order: the items of a list after a
    negated lead inherit its negation ("does not cover: A; B" denies A and B), and the text after a parenthesis
    continues the clause before it ("is not compatible with line-voltage (120/240 V) baseboard heaters")."""

    def __init__(self) -> None:
        self.listed = self.before_paren = self.last = 0
        """Parity a list's items inherit; of the clause before an open parenthesis; of the last clause."""

    def enter(self, delimiter: str) -> int:
        if delimiter == ":":
            self.listed = self.last
        elif delimiter not in (";", ",", "(", ")", ""):
            self.listed = 0  # "but", "except", ...: a new clause
        if delimiter == "(":
            self.before_paren = self.last
        return self.before_paren if delimiter == ")" else 0 if delimiter == "(" else self.listed


def _narrow_scope(tokens: list[_Token], language: str) -> tuple[frozenset[str], int]:
    """Content stems negated by "without" and its kin alone, and how many such words there were.

    "systems without a C wire can use the adapter": a "without" phrase followed by a verb ("can", "must", "are")
    restricts the subject, so it denies the wire, not the adapter. Anywhere else ("visit without a visa for 90 days")
    it negates its clause like "not" (count 1 for each such word).
    """
    scoped: set[str] = set()
    clause_wide = 0
    for i, token in enumerate(tokens):
        if token.word not in lexicon.NARROW_NEGATIONS:
            continue
        phrase: set[str] = set()
        end = None
        for later in tokens[i + 1:]:
            if later.word in _ARTICLES or not later.word:
                continue
            if later.word in lexicon.STOPWORDS[language] or later.word in lexicon.STOPWORDS["en"]:
                end = later.word
                break
            phrase.add(stem(later.word, language))
        if end in _VERBS_AFTER_SUBJECT:
            scoped |= phrase
        else:
            clause_wide += 1
    return frozenset(scoped), clause_wide


def fold(text: str) -> str:
    """NFKC, casefold, and one kind of apostrophe."""
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold()


def detect_language(text: str) -> str:
    """The language (of lexicon.LANGUAGES) whose function words occur most in `text`; English on a tie."""
    words = Counter(_TOKEN.findall(fold(text)))
    hits = {lang: sum(n for w, n in words.items() if w in stop) for lang, stop in lexicon.STOPWORDS.items()}
    return max(lexicon.LANGUAGES, key=lambda lang: (hits[lang], lang == "en"))


@functools.lru_cache(maxsize=65536)
def stem(word: str, language: str) -> str:
    """Snowball stem of a casefolded word: "submitted" and "submit", "Rücksendungen" and "Rücksendung" meet."""
    return _stemmer(language).stemWord(word)


@functools.lru_cache(maxsize=8)
def _stemmer(language: str) -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer(lexicon.STEMMER_NAMES[language])


@dataclass(frozen=True)
class Reading:
    """One piece of text as the heuristic sees it: stems, content stems, anchors and negation."""

    text: str
    stems: frozenset[str]
    content: tuple[str, ...]
    anchors: tuple[Anchor, ...]
    negated: bool
    """An odd number of negations: "SSO is not available" reads negated, "not unavailable" does not."""
    negated_stems: frozenset[str]
    """Content stems inside a negated clause."""
    plain_stems: frozenset[str]
    """Content stems inside a clause without negation."""


READ_CACHE_SIZE = 16384
"""Readings remembered (text.read): a trace reads its query and answer sentences more than once, and production apps
retrieve the same passages again and again. A Reading is immutable, so sharing one is safe."""
READ_CACHE_MAX_CHARS = 2000
"""Longer texts are read afresh each time, so the cache holds at most READ_CACHE_SIZE x this many characters."""


def read(text: str, language: str) -> Reading:
    """Tokenise, stem and find the anchors and negations of `text` (one sentence or a few); remembered for texts up
    to READ_CACHE_MAX_CHARS characters."""
    return _read_cached(text, language) if len(text) <= READ_CACHE_MAX_CHARS else _read(text, language)


def clear_read_cache() -> None:
    """Forget every remembered reading (benchmarks and scaling tests time a cold judge)."""
    _read_cached.cache_clear()


def _read(text: str, language: str) -> Reading:
    stems: set[str] = set()
    content: list[str] = []
    anchors: list[Anchor] = []
    negations = 0
    negated_stems: set[str] = set()
    plain_stems: set[str] = set()
    for sentence in split_sentences(text):
        scope = _Scope()
        for clause, delimiter in _delimited_clauses(sentence):
            inherited = scope.enter(delimiter)
            tokens = _tokens(clause, first=sentence.startswith(clause))
            clause_negations = _negations(clause, tokens)
            clause_content = _content(tokens, language)
            narrow, clause_wide = _narrow_scope(tokens, language)
            # A list inherits a negated verb ("does not cover: A; B"), not a "without" ("get by without it: A is free").
            scope.last = (clause_negations + inherited) % 2
            clause_negations += clause_wide
            parity = (clause_negations + inherited) % 2
            for word in clause_content:
                (negated_stems if parity ^ (word in narrow) else plain_stems).add(word)
            negations += clause_negations
            content += clause_content
            stems.update(stem(t.word, language) for t in tokens if t.word)
            anchors += _anchors(tokens, language)
    return Reading(text, frozenset(stems), tuple(dict.fromkeys(content)), tuple(dict.fromkeys(anchors)),
                   negations % 2 == 1, frozenset(negated_stems), frozenset(plain_stems))


_read_cached = functools.lru_cache(maxsize=READ_CACHE_SIZE)(_read)


@dataclass(frozen=True)
class _Token:
    raw: str
    word: str
    """Casefolded, elision stripped; "" for a number or symbol."""
    number: float | None
    position: int


def _tokens(text: str, first: bool) -> list[_Token]:
    tokens: list[_Token] = []
    for position, raw in enumerate(_TOKEN.findall(unicodedata.normalize("NFKC", text).replace("\u2019", "'"))):
        for part in _cjk_pieces(raw) if _CJK.search(raw) else _split_glued(raw):
            tokens.append(_make_token(part, position if first else position + 1))
    return tokens


def _cjk_pieces(raw: str) -> list[str]:
    """A run of CJK text as words: numbers apart, a counter right after a number on its own ("30日" -> "30", "日"),
    and the rest as overlapping character pairs, so it is compared piece by piece rather than as one code token."""
    pieces: list[str] = []
    for run in _CJK_RUNS.findall(raw):
        if not _CJK.match(run):
            pieces.append(run)
            continue
        if pieces and _NUMBER.fullmatch(pieces[-1]) and run[0] in lexicon.UNITS:
            pieces.append(run[0])
            run = run[1:]
        pieces += [run[i:i + 2] for i in range(len(run) - 1)] or ([run] if run else [])
    return pieces


def _split_glued(raw: str) -> list[str]:
    """"30GB" -> "30", "GB"; "l'assistente" -> "assistente"; "three-year" -> "three", "year"."""
    if glued := _GLUED.fullmatch(raw):
        if glued.group(2).casefold() in lexicon.UNITS:
            return [glued.group(1), glued.group(2)]
    lowered = raw.casefold()
    if "'" in raw and not lowered.endswith(_ENGLISH_CLITICS):
        if lowered.startswith("n'"):
            return ["ne", raw[2:]]
        if elided := _ELISION.match(raw):
            return [elided.group(1)]
    if "-" in raw and not any(c.isdigit() for c in raw):
        return [part for part in raw.split("-") if part]
    if "-" in raw and _NUMBER.fullmatch(raw.split("-")[0]):
        return [part for part in raw.split("-") if part]
    if worded := _WORD_NUMBER.fullmatch(raw):
        return [worded.group(1), worded.group(2)]
    if "/" in raw:
        parts = raw.split("/")
        if any(_NUMBER.fullmatch(p) for p in parts) and all(_NUMBER.fullmatch(p) or p.casefold() in lexicon.UNITS
                                                            for p in parts):
            return [p for part in parts for p in _split_glued(part)]
    return [raw]


def _make_token(raw: str, position: int) -> _Token:
    if _NUMBER.fullmatch(raw) and (number := _number(raw)) is not None:
        return _Token(raw, "", number, position)
    return _Token(raw, fold(raw), None, position)  # a word, or a version such as "4.2.0": a code with its value


def _number(raw: str) -> float | None:
    """"1,000" and "1.000" -> 1000; "2.5" and "2,5" -> 2.5; "2.4.0" is a version, not a number (None)."""
    parts = re.split(r"[.,]", raw)
    if len(parts) == 1:
        return float(raw)
    if all(len(p) == 3 for p in parts[1:]):
        return float("".join(parts))
    if len(parts) == 2:
        return float(f"{parts[0]}.{parts[1]}")
    return None


def _negations(clause: str, tokens: list[_Token]) -> int:
    lowered = fold(clause)
    count = sum(1 for t in tokens if (t.word in lexicon.NEGATIONS and t.word not in lexicon.NARROW_NEGATIONS)
                or t.word.endswith("n't"))
    return max(0, count - len(lexicon.NOT_NEGATIONS.findall(lowered)))


def _content(tokens: list[_Token], language: str) -> list[str]:
    excluded = _not_content(language)
    return [stem(t.word, language) for t in tokens
            if t.word and len(t.word) > 1 and t.word not in excluded and not t.word.endswith("n't")
            and not any(c.isdigit() for c in t.word)]


@functools.lru_cache(maxsize=8)
def _not_content(language: str) -> frozenset[str]:
    """Words that are never content: the language's and English stopwords, negations, number words, units, months
    and weekdays (one set, built once per language rather than per clause)."""
    return frozenset().union(lexicon.STOPWORDS[language], lexicon.STOPWORDS["en"], lexicon.NEGATIONS,
                             lexicon.NUMBER_WORDS, lexicon.UNITS, lexicon.MONTHS, lexicon.WEEKDAYS)


def _anchors(tokens: list[_Token], language: str) -> list[Anchor]:
    """Numbers (with the unit beside them), codes, months, weekdays and names, in order of appearance."""
    anchors: list[Anchor] = []
    for i, token in enumerate(tokens):
        value = token.number if token.number is not None else lexicon.NUMBER_WORDS.get(token.word)
        if value is not None and (token.number is not None or _counts(tokens, i)):
            anchors.append(_quantity(float(value), tokens, i))
        elif token.number is None and any(c.isdigit() for c in token.raw):
            anchors.append(("code", token.word))
        elif token.word in lexicon.MONTHS and (token.raw[0].isupper() or _near_number(tokens, i)) \
                and token.word not in ("may", "mar", "mai") or token.word in ("may", "mai") and _near_number(tokens, i):
            anchors.append(("month", lexicon.MONTHS[token.word]))
        elif token.word in lexicon.WEEKDAYS:
            anchors.append(("weekday", lexicon.WEEKDAYS[token.word]))
        elif _is_name(token, language):
            anchors.append(("name", stem(token.word, language)))
    return anchors


def _counts(tokens: list[_Token], i: int) -> bool:
    """A number word counts as a quantity before a unit or a noun ("two weeks"), not as "the next one"."""
    nxt = tokens[i + 1].word if i + 1 < len(tokens) else ""
    if tokens[i].word in ("ein", "eine", "einen"):
        return False
    if i + 1 < len(tokens) and tokens[i + 1].number is not None:
        return True  # "two 6 mm anchors": a count before a measure
    if not nxt.isalpha():
        return False
    return nxt in lexicon.UNITS or not any(nxt in stop for stop in lexicon.STOPWORDS.values())


def _near_number(tokens: list[_Token], i: int) -> bool:
    return any(t.number is not None for t in tokens[max(0, i - 1): i + 2])


def _quantity(value: float, tokens: list[_Token], i: int) -> Anchor:
    """A number with the currency before it ("$4.99/month" is dollars), else the unit after it (skipping one word:
    "30 calendar days")."""
    if i > 0 and (tokens[i - 1].raw in lexicon.CURRENCY_SIGNS or tokens[i - 1].word in ("usd", "eur", "gbp")):
        return ("qty", (lexicon.UNITS[tokens[i - 1].raw.casefold()][0], value, value))
    for j in (i + 1, i + 2):
        if j < len(tokens) and tokens[j].word in lexicon.UNITS:
            dimension, factor = lexicon.UNITS[tokens[j].word]
            return ("qty", (dimension, round(value * factor, 6), value))
    return ("num", value)


def _is_name(token: _Token, language: str) -> bool:
    """A capitalised word that is not a sentence's first, or a word with an inner capital (SSO, NovaBank).

    German capitalises every noun, so there only inner capitals count.
    """
    raw = token.raw
    if not token.word or len(raw) < 2 or not raw[0].isalpha():
        return False
    if token.word in lexicon.STOPWORDS[language] or token.word in lexicon.STOPWORDS["en"]:
        return False
    inner = any(c.isupper() for c in raw[1:])
    return inner or (language != "de" and token.position > 0 and raw[0].isupper())


def anchor_matches(claim: Anchor, available: frozenset[Anchor] | set[Anchor]) -> bool:
    """True when a claim's anchor is among `available`, converting units ("2 weeks" is "14 days").

    A bare number matches that number with or without a unit; a quantity matches the same amount in any unit of
    its dimension, or the same bare number when the text names no unit beside it.
    """
    kind, value = claim
    if kind == "num":
        return any((k == "num" and v == value) or (k == "qty" and v[2] == value) for k, v in available)
    if kind == "qty":
        dim, base, raw = value
        return any((k == "qty" and v[0] == dim and abs(v[1] - base) <= 1e-6 * max(1.0, abs(base)))
                   or (k == "num" and v == raw) for k, v in available)
    return claim in available


def anchor_found(anchor: Anchor, anchors: frozenset[Anchor], stems: frozenset[str]) -> bool:
    """`anchor_matches`, and names are looked up among stems too, wherever they sit ("the pro plan" names "Pro")."""
    return anchor_matches(anchor, anchors) or (anchor[0] == "name" and anchor[1] in stems)


def rival(claim: Anchor, available: frozenset[Anchor] | set[Anchor]) -> Anchor | None:
    """An anchor of the same kind (and dimension) with another value: 60 days against 30 days, May against June."""
    kind, value = claim
    if kind == "name":
        return None
    for other in available:
        other_kind, other_value = other
        if kind == "qty" and other_kind == "qty" and other_value[0] == value[0] and not anchor_matches(claim, {other}):
            return other
        if kind == "num" and other_kind in ("num", "qty") and not anchor_matches(claim, {other}):
            return other
        if kind in ("month", "weekday", "code") and other_kind == kind and other_value != value:
            return other
    return None


def describe(anchor: Anchor) -> str:
    """An anchor for a reason string: "'60' (time)", "'E1045'", "month 3"."""
    kind, value = anchor
    if kind == "qty":
        return f"'{value[2]:g}' ({value[0]})"
    if kind == "num":
        return f"'{value:g}'"
    if kind in ("month", "weekday"):
        return f"{kind} {value}"
    return f"{kind} '{value}'"
