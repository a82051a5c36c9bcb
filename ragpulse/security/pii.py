"""Personal data in an answer that none of the retrieved documents contains: a privacy leak from the generator's
memory or from another user's data.

Kinds, and how each is confirmed (a candidate that fails its check is not counted):

- `email`: address syntax.
- `phone`: see `ragpulse.security.phones` (a conservative heuristic).
- `payment_card`: 13-19 digits, known issuer prefix, Luhn-valid.
- `iban`: country code, check digits, mod-97 valid.
- `us_ssn`: written `123-45-6789`; area not 000/666/9xx, group not 00, serial not 0000 (no check digit exists).
- `uk_nino`: National Insurance number format, with HMRC's prefix rules (no check digit exists).
- `de_steuer_id`: German tax id, 11 digits, digit-repeat rule and ISO 7064 check digit.
- `fr_nir`: French social security number, 15 characters, mod-97 key.
- `es_dni`: Spanish DNI/NIE, check letter.
- `it_codice_fiscale`: Italian tax code, check character.

A card number, German tax id or Spanish DNI after an id word ("order number", "tracking", "part no.") is read as
that id unless a word naming its kind is as near ("card", "Steuer-ID", "DNI"), as bare phone numbers are. A card
number or IBAN followed by more groups ("... 1111 12/25", "... 0130 00 BIC ...") is tried without its last one or
two.

Not detected: names, postal addresses, dates of birth, passport and licence numbers, and identifiers without a
checkable structure. Credentials (API keys, tokens, passwords, private keys) are ragpulse.security.credentials'. Values are compared with the documents in a
normalised form (digits and letters only, upper case; emails casefolded; phones by their last nine digits, so
`+49 30 1234567` matches `030/1234567`). Only kinds and counts leave this module: the values themselves are never
returned or logged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ragpulse.security import checksums, phones
from ragpulse.security.deadline import NEVER, Deadline, Scan


@dataclass(frozen=True)
class _Kind:
    """How one kind of personal data is found and confirmed."""

    pattern: re.Pattern[str]
    valid: Callable[[str], bool]
    """Takes the compact value (letters and digits only, upper case)."""
    shaped: bool = False
    """A candidate failing `valid` still claims its text: an IBAN-shaped string with a wrong check digit is not
    read again as a phone number either."""
    digits: int = 0
    """Fewest digits (`\\d`) any match of `pattern` holds: an answer with fewer is not searched for this kind."""
    needs: str = ""
    """A character every match holds ("@" for an email), or nothing."""
    trims: bool = False
    """A candidate failing `valid` is tried again without its last one or two groups (text after a space or a dash):
    the pattern is greedy, so a valid IBAN or card number followed by more letters or digits ("... 0130 00 BIC", "...
    1111 12/25") matched past its end and failed its check."""
    cue: re.Pattern[str] | None = None
    """Words naming this kind ("card", "DNI", "Steuer-ID"): with a cue, a number after an id word ("order number",
    "tracking", "part") is that id, not this kind (as bare phone numbers), unless a cue is as near."""


_NOT_ALNUM = re.compile(r"[\W_]+")


def _compact(value: str) -> str:
    """Upper-cased letters and digits only."""
    return _NOT_ALNUM.sub("", value.upper())


_KINDS: dict[str, _Kind] = {
    "email": _Kind(re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}(?![\w-])"),
                   lambda value: True, needs="@"),
    "iban": _Kind(re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b"), checksums.iban, shaped=True, digits=2,
                  trims=True),
    "payment_card": _Kind(re.compile(r"(?<![\w+.,-])\d(?:[ -]?\d){12,18}(?![\w-]|[.,]\d)"), checksums.payment_card,
                          digits=13, trims=True, cue=re.compile(r"(?i)\b(?:card|visa|mastercard|amex|karte|"
                                                                r"kreditkarte|tarjeta|carte|cartão|carta)\b")),
    "fr_nir": _Kind(re.compile(r"\b[1-8] ?\d\d ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d\d|2[AB]) ?\d{3} ?\d{3} ?\d\d\b"),
                    checksums.fr_nir, shaped=True, digits=13),
    "de_steuer_id": _Kind(re.compile(r"(?<![\w+.,-])[1-9]\d(?: ?\d{3}){3}(?![\w-]|[.,]\d)"), checksums.de_steuer_id,
                          digits=11, cue=re.compile(r"(?i)\b(?:steuer|steuer-?id|idnr|tax)\w*")),
    "it_codice_fiscale": _Kind(re.compile(r"\b[A-Z]{6}[\dLMNP-V]{2}[ABCDEHLMPRST][\dLMNP-V]{2}[A-Z]"
                                          r"[\dLMNP-V]{3}[A-Z]\b", re.IGNORECASE),
                               checksums.it_codice_fiscale, shaped=True),
    "es_dni": _Kind(re.compile(r"\b(?:\d{8}|[XYZ]-?\d{7})-?[A-Z]\b", re.IGNORECASE), checksums.es_dni, shaped=True,
                    digits=7, cue=re.compile(r"(?i)\b(?:dni|nie|nif)\b")),
    "us_ssn": _Kind(re.compile(r"(?<![\w-])\d{3}-\d\d-\d{4}(?![\w-])"), checksums.us_ssn, digits=9, needs="-"),
    "uk_nino": _Kind(re.compile(r"\b[A-Z]{2} ?\d\d ?\d\d ?\d\d ?[A-D]\b"), checksums.uk_nino, digits=6),
}
"""Kinds in the order they claim text: a span taken by one (an IBAN) is not read again by a later one (a phone)."""

KINDS: tuple[str, ...] = (*_KINDS, "phone")
"""Every kind `pii_kinds` can report: the `kind` label values of ragpulse_security_pii_answers_total."""
PHONE_DIGITS = 2
"""Fewest digits any candidate of `phones.PHONE` holds (an international or cued number: a first digit and a last)."""
_NOT_DIGIT = re.compile(r"\D+")


MAX_VALUES = 200
"""Most distinct values of personal data one answer compares with the documents: past it the answer is a finding
anyway (no legitimate answer quotes hundreds of people's numbers), and each comparison reads the documents' whole
text, so without a cap an answer of thousands of numbers beside a large document cost values x document size."""


def pii_kinds(answer: str, documents: Sequence[str]) -> dict[str, int]:
    """Kind -> number of distinct values of personal data in `answer` that no document contains.

    Kinds with no such value are absent, so an empty dict means nothing leaked. Counts only: never the values.
    """
    return pii_scan(answer, documents).found


def pii_scan(answer: str, documents: Sequence[str], deadline: Deadline = NEVER) -> Scan[dict[str, int]]:
    """`pii_kinds`, stopping at `deadline` (what was found by then, marked timed out) and after MAX_VALUES distinct
    values. Linear in the answer and the documents: claimed text is a byte mask, the documents one joined string."""
    claimed = bytearray(len(answer))
    corpus = _Corpus(documents)
    seen: dict[tuple[str, str], bool] = {}
    found: dict[str, int] = {}
    for name, value, span, valid in _candidates(answer):
        if deadline.passed():
            return Scan(found, True)
        start, end = span
        if claimed.find(1, start, end) != -1:
            continue
        if valid or (name in _KINDS and _KINDS[name].shaped):
            claimed[start:end] = b"\x01" * (end - start)
        if not valid:
            continue
        key = (name, value.casefold() if name == "email" else _compact(value)[-9:] if name == "phone"
               else _compact(value))
        if key in seen:
            continue
        if len(seen) >= MAX_VALUES:
            break
        seen[key] = leaked = not corpus.holds(*key)
        if leaked:
            found[name] = found.get(name, 0) + 1
    return Scan(found, False)


class _Corpus:
    """The documents' text in the two normalised forms values are compared in, each built once, on first use, as one
    string (a separator no normalised value holds keeps a value from matching across two documents)."""

    def __init__(self, documents: Sequence[str]) -> None:
        self.documents = documents
        self.folded: str | None = None
        self.compact: str | None = None

    def holds(self, kind: str, key: str) -> bool:
        """True when a document holds `key`, normalised as `kind`'s values are."""
        if not self.documents:
            return False
        if kind == "email":
            if self.folded is None:
                self.folded = "\x00".join(doc.casefold() for doc in self.documents)
            return key in self.folded
        if self.compact is None:
            self.compact = "\x00".join(_compact(doc) for doc in self.documents)
        return key in self.compact


def _an_id(cue: re.Pattern[str], answer: str, start: int) -> bool:
    """True when the number at `start` follows an id word and no word naming its kind is as near ("Steuer-ID",
    "account card" stay personal data)."""
    before = answer[max(0, start - 30):start]
    return phones.after_id_word(before) and not cue.search(before)


_GROUP_END = re.compile(r"[ -](?=[A-Za-z0-9])")


def _trimmed(kind: _Kind, value: str, span: tuple[int, int]) -> tuple[str, tuple[int, int], bool]:
    """The candidate without its last one or two groups when that is a whole match of the kind and valid; else the
    candidate as it was (invalid)."""
    cuts = [m.start() for m in _GROUP_END.finditer(value)][-2:]
    for cut in reversed(cuts):
        shorter = value[:cut]
        if kind.pattern.fullmatch(shorter) and kind.valid(_compact(shorter)):
            return shorter, (span[0], span[0] + cut), True
    return value, span, False


def _candidates(answer: str, prefilter: bool = True) -> Iterator[tuple[str, str, tuple[int, int], bool]]:
    """(kind, value, span, valid) of each candidate that may claim text, kind by kind in claiming order, phones
    last. A kind whose pattern needs more digits than the answer holds, or a character it lacks, is not searched: it
    has no candidate (without `prefilter` every pattern runs: the reference the tests compare with)."""
    digits = len(_NOT_DIGIT.sub("", answer)) if prefilter else len(answer) + PHONE_DIGITS
    for name, kind in _KINDS.items():
        if digits < kind.digits or (prefilter and kind.needs and kind.needs not in answer):
            continue
        for match in kind.pattern.finditer(answer):
            value, span = match.group(), match.span()
            valid = kind.valid(_compact(value))
            if not valid and kind.trims:
                value, span, valid = _trimmed(kind, value, span)
            if not (valid or kind.shaped):  # it would claim no text and count nothing: the id test is not needed
                continue
            if kind.cue is not None and _an_id(kind.cue, answer, match.start()):
                continue
            yield name, value, span, valid
    if digits < PHONE_DIGITS:
        return
    for match in phones.PHONE.finditer(answer):
        span = phones.phone_span(match)
        yield "phone", answer[span[0]:span[1]], span, phones.phone_ok(match)
