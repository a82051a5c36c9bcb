"""LocalJudge: an offline, deterministic HEURISTIC judge built on word overlap and exact anchors, not an LLM.

It needs no network and no model. It lets ragpulse judge traces in tests, in CI and on air-gapped installs,
and it sets the floor that an LLM judge must beat. It cannot follow paraphrase, negation or inference.
bench/judge_agreement.py measures its agreement with human labels, and docs/local_judge.md records it.
Retrieved text is only ever counted and compared, never obeyed, so an instruction inside a passage is just
more words.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass

import msgspec

from ragpulse.judges.verdicts import Claim, DocRelevance, JudgeCall, JudgeOutput, Judgment, KeyFact
from ragpulse.schema import Trace

HEURISTIC_VERSION = "local-heuristic-v1"
"""Bump when the rules change, so that old and new judgments never share a prompt_version."""
SUPPORT_OVERLAP = 0.6
"""Share of a claim's content words that one passage must contain. A majority, with slack for one or two rewordings."""
RELEVANCE_HIGH = 0.6
"""Share of the query's content words that makes a passage or an answer score 3 ("covers most of the question")."""
RELEVANCE_LOW = 0.3
"""Share that makes it score 2 ("touches the question"); anything below scores 1."""
KEY_FACT_OVERLAP = 0.6
"""A reference fact is covered at the same bar a claim must meet to be supported."""
CHECKED_KINDS = ("number", "code", "month")
"""Anchor kinds whose substitution counts as a contradiction. A different name may be another entity, not a change."""

_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:['._,][A-Za-z0-9]+)*")
_BOUNDARY_RE = re.compile(r"[.!?][\"')\]]*(?P<gap>\s+)|(?P<newline>\n+)")
_NUMBER_RE = re.compile(r"v?(\d+(?:[.,]\d+)*)")
_ABBREVIATIONS = frozenset("e.g. i.e. etc. vs. approx. no. fig. dr. mr. mrs. ms. st. inc. ltd. cf. incl.".split())
_MONTHS = frozenset("january february march april may june july august september october november december".split())
_STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be been before being below between both but by can
could did do does doing down during each few for from further had has have having he her here hers him his how
i if in into is it its itself just me more most my no nor not of off on once only or other our out over own same
she should so some such than that the their them then there these they this those through to too under until up
very was we were what when where which while who whom why will with would you your yours yes may might must
shall let get got don't doesn't didn't isn't aren't wasn't weren't can't cannot couldn't won't wouldn't
shouldn't haven't hasn't hadn't i'm i've you're you've it's there's that's what's let's they're we're
""".split())
_ABSTENTION_RE = re.compile("|".join((
    r"\bi (?:do not|don't) know\b",
    r"\bnot (?:sure|certain)\b",
    r"\b(?:couldn't|could not|can't|cannot|unable to|not able to) (?:find|answer|confirm|tell|say|determine|help)\b",
    r"\b(?:doesn't|does not|don't|do not|didn't|did not) (?:mention|say|specify|describe|state)\b",
    # "does not cover/contain/include" is a claim ("the warranty does not cover water damage") unless it is
    # said of the sources themselves.
    r"\b(?:documentation|documents?|docs|context|sources?|passages?|manual|leaflet|excerpts?)\b"
    r"[^.]*\b(?:doesn't|does not|don't|do not) (?:cover|contain|include)\b",
    r"\b(?:don't|do not|doesn't|does not) have (?:any )?(?:\w+ )?(?:information|details|data)\b",
    r"\b(?:no|not enough|insufficient) (?:information|details|mention)\b",
    r"\bnot (?:mentioned|covered|specified|stated|documented)\b",
)))
"""Phrases that admit the context lacks the answer; a sentence holding one is an abstention, not a claim."""
_REFERRAL_RE = re.compile(r"^(?:please |you (?:may|might|could|can|should) (?:want to |wish to )?)?"
                          r"(?:ask|consult|contact|check with|speak (?:to|with)|talk to)\b")
"""An "ask HR" sentence beside an abstention belongs to the abstention, not to the claims."""


@dataclass(frozen=True)
class _Profile:
    """What the heuristic sees of a text: normalised words, content words and anchors in order of appearance."""

    words: frozenset[str]
    content: tuple[str, ...]
    anchors: tuple[tuple[str, str], ...]


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, verbatim; no split after "e.g." and the like, nor inside "2.5" or "v3.2.1"."""
    sentences, start = [], 0
    for boundary in _BOUNDARY_RE.finditer(text):
        end = boundary.start("gap" if boundary.group("gap") else "newline")
        last_word = text[start:end].split()[-1:]
        if last_word and last_word[0].lower().lstrip("(\"'[") in _ABBREVIATIONS:
            continue
        sentences.append(text[start:end].strip())
        start = boundary.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def _stem(word: str) -> str:
    """Light normalisation: drop a possessive and a plural ending ("policies" -> "policy", "days" -> "day")."""
    word = word.removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _anchor(token: str, position: int) -> tuple[str, str] | None:
    """The (kind, value) a token pins down exactly: number, code like E1045, month, or capitalised name."""
    if number := _NUMBER_RE.fullmatch(token):
        return ("number", number.group(1).replace(",", ""))
    if any(c.isdigit() for c in token):
        return ("code", token.lower())
    if token[0].isupper() and token.lower() in _MONTHS:
        return ("month", token.lower())
    capitalised = (position > 0 and token[0].isupper()) or any(c.isupper() for c in token[1:])
    return ("name", _stem(token.lower())) if capitalised and len(token) > 1 else None


def _profile(text: str) -> _Profile:
    """Tokenise once; positions restart at each sentence so a sentence's first word is not taken for a name."""
    words, content, anchors = set(), [], []
    for sentence in split_sentences(text.replace("\u2019", "'")):
        for position, token in enumerate(_TOKEN_RE.findall(sentence)):
            lowered = _stem(token.lower())
            words.add(lowered)
            if (anchor := _anchor(token, position)) is not None:
                anchors.append(anchor)
            if not any(c.isdigit() for c in token) and token.lower() not in _STOPWORDS and len(lowered) > 1:
                content.append(lowered)
    return _Profile(frozenset(words), tuple(dict.fromkeys(content)), tuple(dict.fromkeys(anchors)))


def _overlap(claim: _Profile, passage: _Profile) -> float:
    """Share of the claim's content words found in the passage; 1.0 for a claim made only of anchors."""
    if not claim.content:
        return 1.0
    return sum(word in passage.words for word in claim.content) / len(claim.content)


def _missing(claim: _Profile, passage: _Profile) -> list[tuple[str, str]]:
    """The claim's anchors the passage lacks; names are looked up among words, wherever they sit."""
    exact = {value for _, value in passage.anchors}
    return [(kind, value) for kind, value in claim.anchors
            if value not in (passage.words if kind == "name" else exact)]


def _best_sentence(claim: _Profile, doc_text: str) -> str:
    """The passage sentence sharing most content words with the claim (the first on a tie), verbatim."""
    return max(split_sentences(doc_text), key=lambda sentence: _overlap(claim, _profile(sentence)))


def _changed(missing: list[tuple[str, str]], claim: _Profile, quote: str) -> list[tuple[str, str]]:
    """Missing anchors for which the quote holds a different anchor of the same kind: 60 days against 30 days."""
    rivals = {kind for kind, value in _profile(quote).anchors if (kind, value) not in claim.anchors}
    return [(kind, value) for kind, value in missing if kind in CHECKED_KINDS and kind in rivals]


def _scores(claim: _Profile, docs: list[tuple[str, str]]) -> list[tuple[float, list, str, str]]:
    """(overlap, missing anchors, doc id, doc text) of the claim against every passage, in rank order."""
    return [(_overlap(claim, p), _missing(claim, p), doc_id, text) for doc_id, text in docs for p in [_profile(text)]]


def _verdict(text: str, docs: list[tuple[str, str]]) -> Claim:
    """Supported by one passage, contradicted by the closest one (a changed number), or else unsupported."""
    claim = _profile(text)
    scored = _scores(claim, docs)
    if backing := [s for s in scored if s[0] >= SUPPORT_OVERLAP and not s[1]]:
        _, _, doc_id, doc_text = max(backing, key=lambda s: s[0])
        return Claim(text=text, verdict="supported", doc_id=doc_id, quote=_best_sentence(claim, doc_text))
    if not scored:
        return Claim(text=text, verdict="unsupported", reason="no retrieved passage has text")
    overlap, missing, doc_id, doc_text = max(scored, key=lambda s: s[0])
    if overlap < SUPPORT_OVERLAP:
        return Claim(text=text, verdict="unsupported",
                     reason=f"at most {overlap:.0%} of its content words are in any one passage")
    quote = _best_sentence(claim, doc_text)
    if changed := _changed(missing, claim, quote):
        return Claim(text=text, verdict="contradicted", doc_id=doc_id, quote=quote,
                     reason=f"{_names(changed)} differs from the passage")
    return Claim(text=text, verdict="unsupported", reason=f"{_names(missing)} not found in {doc_id}")


def _names(anchors: list[tuple[str, str]]) -> str:
    """Anchors for a reason string: "number '60', month 'july'"."""
    return ", ".join(f"{kind} {value!r}" for kind, value in anchors)


def _is_claim(sentence: str) -> bool:
    """A sentence states something checkable when it has a content word or an anchor ("Yes." has neither)."""
    profile = _profile(sentence)
    return bool(profile.content or profile.anchors)


def _split_answer(answer: str) -> tuple[list[str], bool]:
    """The answer's claims and whether it abstains; hedges, and referrals beside a hedge, are not claims."""
    sentences = split_sentences(answer)
    hedges = [s for s in sentences if _ABSTENTION_RE.search(s.lower().replace("\u2019", "'"))]
    claims = [s for s in sentences if s not in hedges and _is_claim(s)]
    if hedges:
        claims = [s for s in claims if not _REFERRAL_RE.match(s.lower())]
    return claims, bool(hedges) and not claims


def _coverage(query: _Profile, text: str) -> float:
    """Share of the query's content words that occur in `text`."""
    return _overlap(query, _profile(text)) if query.content else 0.0


def _grade(share: float) -> int:
    """1..3 from a coverage share, by RELEVANCE_LOW and RELEVANCE_HIGH."""
    return 3 if share >= RELEVANCE_HIGH else 2 if share >= RELEVANCE_LOW else 1


def _answer_relevance(query: _Profile, answer: str, abstained: bool) -> tuple[int, str]:
    """1..3 by query-term coverage; an abstention scores 1: it does not address the question, however apt."""
    if abstained:
        return 1, "The answer abstains, so it does not address the question."
    share = _coverage(query, answer)
    return _grade(share), f"The answer uses {share:.0%} of the query's content words."


def _key_facts(reference: str | None, answer: _Profile) -> list[KeyFact] | None:
    """Reference sentences and ;-clauses, each covered when the answer has all its anchors and most of its words."""
    if reference is None:
        return None
    facts = [part.strip() for s in split_sentences(reference) for part in s.split(";") if part.strip()]
    return [KeyFact(fact=fact, covered=_overlap(p, answer) >= KEY_FACT_OVERLAP and not _missing(p, answer))
            for fact in facts for p in [_profile(fact)]]


PROMPT_VERSION = hashlib.sha256(repr((
    HEURISTIC_VERSION, SUPPORT_OVERLAP, RELEVANCE_HIGH, RELEVANCE_LOW, KEY_FACT_OVERLAP, CHECKED_KINDS,
)).encode()).hexdigest()[:12]
"""Stands in for an LLM judge's prompt version: a hash of the rules' version and every threshold."""


class LocalJudge:
    """A deterministic offline HEURISTIC judge implementing the Judge protocol; no network, no model."""

    name = "local"
    model = HEURISTIC_VERSION

    async def aclose(self) -> None:
        """Nothing to close: the heuristic holds no connections."""

    async def ajudge(self, trace: Trace) -> Judgment:
        """The Judge protocol's entry point: pure CPU work, run inline (it never waits on I/O)."""
        return self.judge(trace)

    def judge(self, trace: Trace) -> Judgment:
        """Judge one trace by word overlap and exact anchors; same trace in, same output out."""
        started = time.perf_counter()
        output = self.evaluate(trace)
        call = JudgeCall(judge=self.name, model=self.model, prompt_version=PROMPT_VERSION,
                         raw_output=msgspec.to_builtins(output), input_tokens=0, output_tokens=0,
                         latency_ms=(time.perf_counter() - started) * 1000, request_id=None)
        return Judgment(judge=self.name, model=self.model, prompt_version=PROMPT_VERSION,
                        output=output, calls=[call])

    def evaluate(self, trace: Trace) -> JudgeOutput:
        """The verdicts alone. Context relevance has one entry per retrieved position, so duplicate ids repeat."""
        docs = [(doc.id, doc.text) for doc in trace.retrieved_docs if doc.text]
        query = _profile(trace.query)
        claims, abstained = _split_answer(trace.answer or "")
        relevance = [DocRelevance(doc_id=doc.id, score=_grade(_coverage(query, doc.text or "")))
                     for doc in trace.retrieved_docs]
        score, reason = _answer_relevance(query, trace.answer or "", abstained)
        return JudgeOutput(
            claims=[_verdict(text, docs) for text in claims],
            answer_relevance=score, answer_relevance_reason=reason, context_relevance=relevance,
            answerable_from_context=any(r.score == 3 for r in relevance), abstained=abstained,
            key_facts=_key_facts(trace.reference_answer, _profile(trace.answer or "")),
        )
