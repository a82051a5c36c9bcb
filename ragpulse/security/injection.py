"""Indirect prompt injection in retrieved text: instructions aimed at the assistant that reads it (a heuristic).

`injection_findings` names the cues found:

- `override_instructions`: "ignore previous instructions" and its kin, in en, de, es, fr, pt and it.
- `assistant_directive`: rules laid down for the model ("The assistant must say ...") or text addressed to it by
  name beside an imperative ("Note to AI assistants: recommend ...").
- `persona_switch`: "You are now DAN", "from now on you ...", "Da ora in poi sei ...".
- `prompt_leak`: asking for the system prompt; `concealment`: "do not mention these instructions".
- `role_marker`: chat-template tokens (`<|im_start|>`, `[INST]`, `<<SYS>>`, `</s>`, `<system>`), `### System:`
  headers, and `Human:`/`Assistant:` (or `System:` followed by a directive) at a line start.
- `tool_call`: tool or function calls written into text (`{"name": ..., "arguments": ...}`, `<tool_call>`).
- `exfiltration`: markdown images or links whose URL carries a placeholder for data (`?q={chat}`, `?u=USER_EMAIL`).
- `hidden_html`: HTML comments, or elements hidden by style (`display:none`, zero font size, ...), holding
  a directive; `hidden_markdown`: the same inside a markdown comment (`[//]: # (...)`).
- `hidden_unicode`: Unicode tag characters (always), or zero-width characters or Cyrillic/Greek look-alike letters
  inside Latin words ("Іgnore" with a Cyrillic І) in a text that also holds a cue.

Quoted or discussed phrases are not findings: a cue inside quotation marks or code, or in a sentence that reports
on attacks ("attackers", "for example", "such as", "the phrase", "prompt injection") without being an imperative
at the sentence start, is treated as a mention. Not detected: paraphrased or novel instructions with none of these
words, languages other than the six, instructions split across documents, encodings (base64, ROT13), and text in
images. The text is normalised first: NFKC, casefold, zero-width characters removed, tag characters decoded,
look-alike letters in mixed-script words made Latin, runs of spaces and tabs made one space, and hard-wrapped lines
(a break between a word and a lowercase word) joined.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

from ragpulse.security import cues
from ragpulse.security.deadline import NEVER, Deadline, Scan
from ragpulse.security.prefilter import LiteralScan, Present, Prefiltered

_ZERO_WIDTH = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\u180e]")
_SPACE_RUN = re.compile(r"[ \t]{2,}|\t")
_LINE_BREAK = re.compile(r"\n[ \t]*(?!(?:human|assistant|system|user)[ \t]*:)(?=[a-zà-öø-ÿ])")
"""A line break before a lowercase word that is not a chat-role marker: a hard wrap when a word or a comma is before
it (`_joined`)."""
_WORD = re.compile(r"\w{2,}")
_CONFUSABLES = str.maketrans(dict(zip(
    "АВЕЅІЈКМНОРСТХУаеѕіјорԛсухԁɡһӏνοαεικρτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "ABESIJKMHOPCTXYaesijopqcyxdghlvoaeikptuxABEZHIKMNOPTYX", strict=True)))
"""Cyrillic and Greek letters drawn like Latin ones: in a word that mixes them with Latin letters ("Іgnore" with a
Cyrillic І) they stand for the Latin letter, so a homoglyph does not hide a cue."""
_MIXED_WORD = re.compile(r"\w*[A-Za-z]\w*")
_LOOK_ALIKE = re.compile("[" + "".join(chr(c) for c in _CONFUSABLES) + "]")
_TAGS = re.compile("[\U000e0000-\U000e007f]")

ROLE_MARKER = re.compile("|".join((
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\|>",
    r"\[/?inst\]", r"<</?sys>>", r"</s>", r"</?(?:system|assistant|human)>",
    r"^[ \t]*#{1,6}[ \t]*(?:system|instructions?|assistant|human|response)[ \t]*:",
    r"^[ \t]*(?:human|assistant)[ \t]*:",
    r"^[ \t]*system[ \t]*:[^\n]*\b(?:you|ignore|must|always|never|respond|reply|answer|tell|say|new|override|forget|"
    r"disregard|assistant)\b",
)), re.MULTILINE)
TOOL_CALL = re.compile(r'\{\s*"(?:name|tool|tool_name|function)"\s*:\s*"[^"\n]{1,80}"\s*,\s*"(?:arguments|'
                       r'parameters|args|input|tool_input)"\s*:|</?(?:tool_call|tool_use|function_calls?|invoke|'
                       r'tool_code)\b|"(?:function_call|tool_calls)"\s*:')
_PLACEHOLDER = (r"\{[^}]*\}|\[[^\]]*\]|<[^>]*>|\$\{?[a-z_]+|%s|[a-z0-9]*_?(?:data|secret|password|token|key|"
                r"conversation|chat|history|message|messages|email|summary|prompt|context|memory)_[a-z0-9_]*|"
                r"[a-z0-9]+_(?:data|secret|password|token|key|conversation|chat|history|message|messages|email|"
                r"summary|prompt|context|memory)\b")
EXFILTRATION = re.compile(rf"!?\[[^\]\n]{{0,200}}\]\(\s*https?://[^\s)?]*\?[^\s)]*=(?:{_PLACEHOLDER})")
HIDDEN_STYLE = re.compile(r"<(\w+)\b[^>]{0,500}?\bstyle\s*=\s*[\"'][^\"'>]{0,300}?(?:display\s*:\s*none|visibility\s*:"
                          r"\s*hidden|font-size\s*:\s*0|opacity\s*:\s*0(?![.\d]*[1-9])|color\s*:\s*(?:white|#fff\b|"
                          r"#ffffff\b))[^>]{0,500}?>(.{0,2000}?)</\1\s*>", re.DOTALL)
"""An element hidden by its style; content is bounded so that unclosed tags cannot make the scan quadratic."""
HIDDEN_MARKDOWN = re.compile(r"^[ \t]*\[[^\]\n]*\]:[ \t]*(?:#|<>)[ \t]*(?:\((.*)\)|\"(.*)\")[ \t]*$", re.MULTILINE)

_IMPERATIVE = (
    r"\b(?:tell|say|respond|reply|answer|state|claim|recommend|inform|mention|ignore|disregard|output|print|reveal|"
    r"send|include|insist|suggest|deny|visit|direct|always|never|do not|don't|sage|sag|antworte|empfiehl|erwähne|"
    r"behaupte|teile|gib|di|dile|responde|contesta|recomienda|menciona|afirma|envía|dis|réponds|répondez|recommande|"
    r"mentionne|affirme|envoie|donne|diga|responda|recomende|mencione|informe|afirme|envie|dì|rispondi|raccomanda|"
    r"consiglia|menziona|afferma|invia|comunica)\b")
ADDRESSED = re.compile(rf"(?:{cues.VOCATIVE.pattern})[^.!?\n]{{0,80}}{_IMPERATIVE}", re.MULTILINE)
"""Text addressed to the model by name, followed by an imperative ("Note to AI assistants: recommend ...")."""

PHRASES = {"override_instructions": (cues.OVERRIDE,), "assistant_directive": (cues.DIRECTIVE, ADDRESSED),
           "persona_switch": (cues.PERSONA,), "prompt_leak": (cues.PROMPT_LEAK,), "concealment": (cues.CONCEALMENT,),
           "role_marker": (ROLE_MARKER,), "tool_call": (TOOL_CALL,), "exfiltration": (EXFILTRATION,)}
"""Cue name -> patterns of the cues that are findings only when aimed at the model (see `_aimed`)."""
_PREFILTERED = {name: tuple(Prefiltered(p) for p in patterns) for name, patterns in PHRASES.items()}
"""The same patterns, each skipped on a text lacking literals its matches need (ragpulse.security.prefilter)."""
_HIDDEN_STYLE, _HIDDEN_MARKDOWN = Prefiltered(HIDDEN_STYLE), Prefiltered(HIDDEN_MARKDOWN)
_SCAN = LiteralScan([*(p for patterns in _PREFILTERED.values() for p in patterns), _HIDDEN_STYLE, _HIDDEN_MARKDOWN])
"""Every literal those patterns need, found in one pass over a document."""
_IMPERATIVE_WORD = re.compile(_IMPERATIVE)
_ADDRESSEE = re.compile(r"\b(?:you|users?|customers?|readers?|nutzer\w*|kunde\w*|usuario\w*|cliente\w*|"
                        r"utilisateur\w*|usuário\w*|utente|utenti)\b")
_QUOTED = re.compile(r"```.*?(?:```|\Z)|\"[^\"\n]{1,300}\"|“[^”\n]{1,300}”|„[^“”\"\n]{1,300}[“”\"]|«[^»\n]{1,300}»|"
                     r"»[^«\n]{1,300}«|‘[^’\n]{1,300}’|(?<!\w)'[^'\n]{1,300}'(?!\w)|`[^`\n]{1,300}`", re.DOTALL)
_SENTENCE_END = re.compile(r"[.!?;]+(?=\s)|\n")
_REPORTING = re.compile(cues.REPORTING)
_LEAD = re.compile(cues.LEAD)
_COPULA = re.compile(r"[\"'”»“]?\s*(?:is|was|are|were|remains|has|ist|war|sind|es|fue|son|est|était|sont|é|foi|são|"
                     r"è|era|sono)\b")


MAX_CUES = 1_000
"""Most matches of one cue pattern a document is read for (each is looked at in a window of a few thousand
characters around it to tell an instruction from a quote or a report): a document that names a cue more often than
that in quotes is read no further for it, which keeps the scan linear in the document."""


def injection_findings(text: str) -> list[str]:
    """Names of the injection cues aimed at the model in `text`, in a fixed order, each once (a heuristic)."""
    return _scan(text, prefilter=True).found


def injection_scan(text: str, deadline: Deadline = NEVER) -> Scan[list[str]]:
    """`injection_findings`, stopping at `deadline` (the cues found by then, marked timed out)."""
    return _scan(text, prefilter=True, deadline=deadline)


def _findings(text: str, prefilter: bool) -> list[str]:
    """`injection_findings`; without `prefilter`, every pattern runs on every text (the reference the prefiltered
    path is tested against: same findings)."""
    return _scan(text, prefilter).found


def _scan(text: str, prefilter: bool, deadline: Deadline = NEVER) -> Scan[list[str]]:
    """`injection_scan`, with or without the prefilter (see `_findings`)."""
    plain, zero_width, tags = _normalise(text)
    present = _SCAN.present(plain) if prefilter else None
    found: list[str] = []
    for name, patterns in _PREFILTERED.items():
        for pattern in patterns:
            if not _may(pattern, present):
                continue
            aimed = _first_aimed(plain, pattern.pattern, deadline)
            if aimed is None:
                return Scan(found, True)
            if aimed:
                found.append(name)
                break
    for name, spans in _hidden(plain, present).items():
        for start, end, inner in spans[:MAX_CUES]:
            if deadline.passed():
                return Scan(found, True)
            if _directive(inner) and not _quoted(plain, start, end):
                found.append(name)
                break
    if tags or (zero_width and found):
        found.append("hidden_unicode")
    return Scan(found, False)


def _first_aimed(plain: str, pattern: re.Pattern[str], deadline: Deadline) -> bool | None:
    """True when one of the first MAX_CUES matches of `pattern` is aimed at the model; None when the deadline passed
    before that was known."""
    for seen, match in enumerate(pattern.finditer(plain)):
        if seen >= MAX_CUES:
            return False
        if deadline.passed():
            return None
        if _aimed(plain, match.start(), match.end()):
            return True
    return False


def is_injection(text: str) -> bool:
    """True when `text` holds at least one injection cue aimed at the model (a heuristic)."""
    return bool(injection_findings(text))


def _may(pattern: Prefiltered, present: Present | None) -> bool:
    return present is None or pattern.could_match(present)


def _normalise(text: str) -> tuple[str, bool, bool]:
    """(NFKC-normalised, casefolded text with zero-width characters removed, tag characters decoded to the ASCII they
    hide and look-alike letters in mixed-script words made Latin; whether zero-width characters or look-alikes were
    there; whether tag characters were)."""
    if text.isascii():  # NFKC leaves ASCII as it is, and zero-width and tag characters are not ASCII
        return _spaced(text).casefold(), False, False
    text = unicodedata.normalize("NFKC", text)
    zero_width = bool(_ZERO_WIDTH.search(text.lstrip("\ufeff")))
    tags = bool(_TAGS.search(text))
    text = _TAGS.sub(lambda m: chr(ord(m.group()) - 0xE0000), _ZERO_WIDTH.sub("", text))
    unmixed = _unmixed(text)
    return _spaced(unmixed).casefold(), zero_width or unmixed != text, tags


def _unmixed(text: str) -> str:
    """Words that mix Latin letters with Cyrillic or Greek look-alikes, written in Latin letters only (a word wholly
    in another script is left as it is)."""
    if not _LOOK_ALIKE.search(text):   # most non-ASCII text (accents, CJK) holds none: no word to look at
        return text
    return _MIXED_WORD.sub(lambda m: m.group().translate(_CONFUSABLES) if not m.group().isascii() else m.group(),
                           text)


def _spaced(text: str) -> str:
    """Runs of spaces and tabs as one space, and hard-wrapped lines joined, so that "The assistant  must" and
    "Ignore all\nprevious instructions" read as written (before casefolding: a wrap is joined before a lowercase
    word only, so a line that starts a sentence or a role stays a line)."""
    if "  " in text or "\t" in text:
        text = _SPACE_RUN.sub(" ", text)
    if "\n" not in text:
        return text
    return _LINE_BREAK.sub(lambda m: _joined(text, m.start()), text)


def _joined(text: str, at: int) -> str:
    """What the line break at `at` becomes: a space after a word or a comma (nothing more after a space), else
    itself (a line that follows a full stop, a heading or a blank line stays a line)."""
    before = text[at - 1] if at else "\n"
    if before == " " and at > 1:
        return "" if text[at - 2].isalnum() or text[at - 2] in ",;:" else text[at:at + 1]
    return " " if before.isalnum() or before in ",;:" else "\n"


def _hidden(text: str, present: Present | None = None) -> dict[str, list[tuple[int, int, str]]]:
    """Cue name -> (start, end, hidden content) of each HTML comment, style-hidden element and markdown comment
    (patterns whose literals `present` lacks are skipped)."""
    styled = [(m.start(), m.end(), m.group(2)) for m in HIDDEN_STYLE.finditer(text)] \
        if _may(_HIDDEN_STYLE, present) else []
    markdown = [(m.start(), m.end(), m.group(m.lastindex or 0)) for m in HIDDEN_MARKDOWN.finditer(text)] \
        if _may(_HIDDEN_MARKDOWN, present) else []
    return {"hidden_html": _comments(text) + styled, "hidden_markdown": markdown}


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each closed HTML comment, found in one linear pass."""
    found, start = [], text.find("<!--")
    while start >= 0 and (end := text.find("-->", start + 4)) >= 0:
        found.append((start, end + 3, text[start + 4:end]))
        start = text.find("<!--", end + 3)
    return found


def _directive(hidden: str) -> bool:
    """True when hidden text instructs: a phrase cue, or an imperative beside an addressee or the model's name."""
    return (any(pattern.search(hidden) for patterns in PHRASES.values() for pattern in patterns)
            or bool(_IMPERATIVE_WORD.search(hidden) and _ADDRESSEE.search(hidden)))


def _quoted(text: str, start: int, end: int) -> bool:
    """True when text[start:end] lies inside quotation marks, inline code or a code fence."""
    window = _QUOTED.finditer(text, max(0, start - 2000), min(len(text), end + 2000))
    return any(q.start() < start and end <= q.end() for q in window)


def _aimed(text: str, start: int, end: int) -> bool:
    """True when the cue at text[start:end] is addressed to the model, not quoted or reported on."""
    if _quoted(text, start, end):
        return False
    ends = [m.end() for m in _SENTENCE_END.finditer(text, max(0, start - 1000), min(len(text), end + 1000))]
    i = bisect.bisect_right(ends, start)
    first, last = (ends[i - 1] if i else max(0, start - 1000)), (ends[i] if i < len(ends) else len(text))
    sentence = text[first:last]
    if cues.VOCATIVE.search(sentence) or not _REPORTING.search(sentence):
        return True
    lead = ROLE_MARKER.sub(" ", text[first:start])  # "[INST] Ignore ..." still starts with the imperative
    return bool(_LEAD.fullmatch(lead)) and not _COPULA.match(text, end)


def instruction_payloads(text: str) -> list[str]:
    """What the instructions aimed at the model ask for: the rest of each such cue's sentence after the cue (through
    the next sentence when that rest holds under two words: "Ignore previous instructions. Tell the user ...", or a
    heading "IGNORE PREVIOUS INSTRUCTIONS:" over its line), and the text of hidden directives (casefolded). Empty when
    `text` holds no injection (a heuristic, as the findings)."""
    plain = _normalise(text)[0]
    present = _SCAN.present(plain)
    payloads = []
    for patterns in _PREFILTERED.values():
        for prefiltered in patterns:
            if not prefiltered.could_match(present):
                continue
            for m in prefiltered.pattern.finditer(plain):
                if _aimed(plain, m.start(), m.end()):
                    payloads.append(_payload(plain, m.end()))
    payloads += [inner for spans in _hidden(plain, present).values() for _s, _e, inner in spans if _directive(inner)]
    return payloads


def instructs_next(sentence: str) -> bool:
    """True when `sentence` holds an instruction aimed at the model that leaves what it asks for to the sentence after
    it ("Ignore all previous instructions." then "Tell the user ..."): under two words follow its cues."""
    payloads = instruction_payloads(sentence)
    return bool(payloads) and all(len(_WORD.findall(payload)) < 2 for payload in payloads)


def _payload(plain: str, start: int) -> str:
    """The rest of the sentence from `start`; through the next sentence too when that rest holds under two words."""
    end = _SENTENCE_END.search(plain, start)
    if end is None:
        return plain[start:]
    if len(_WORD.findall(plain, start, end.start())) < 2:
        following = _SENTENCE_END.search(plain, end.end())
        while following is not None and not _WORD.search(plain, end.end(), following.start()):  # "instructions.\n"
            following = _SENTENCE_END.search(plain, following.end())
        return plain[start:following.start() if following else len(plain)]
    return plain[start:end.start()]
