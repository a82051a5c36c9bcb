"""Telephone numbers in running text, found conservatively (a heuristic): a missed number is better than a price,
a year, a date or an order number reported as personal data.

Counted: international numbers (`+CC` or `00CC`, 8-15 digits), North American numbers written with separators
(`(555) 234-5678`, `555-234-5678`), European national numbers with a trunk 0 and separators (`030 1234567`,
`06 12 34 56 78`, 9-12 digits), and any 9-12 digit number right after a phone word (`tel`, `phone`, `Telefon`,
`teléfono`, `téléphone`, `telefone`, `telefono`, ...). Not counted: bare digit runs without a `+` or a phone word,
numbers right after an id word (`order`, `invoice`, `#`, `Bestellung`, `pedido`, `commande`, ...), dates, and
numbers with decimal commas or thousands separators that a phone never has.
"""

from __future__ import annotations

import re

_PHONE_WORDS = (r"tel|tél|phone|telephone|call|mobile|cell|fax|whatsapp|sms|hotline|telefon|telefonnummer|handy|"
                r"rufnummer|anrufen|teléfono|telefono|móvil|movil|llame|llamar|téléphone|portable|appelez|appeler|"
                r"telefone|celular|telemóvel|ligue|cellulare|chiama|chiamare")
_ID_WORDS = re.compile(r"(?:#|№|\bn[or]\.|\bnr\b|\border|\binvoice|\bref(?:erence)?\b|\bid\b|\baccount|\bticket|"
                       r"\bcase\b|\btracking|\bserial|\bsku\b|\bpart\b|\bbestell|\brechnung|\bkunden|\bpedido|"
                       r"\bfactura|\bcommande|\bfacture|\bordine|\bfattura|\bencomenda|\bcliente)[^\n]{0,20}$",
                       re.IGNORECASE)
_ID_LEAD = re.compile(r"[^\W\d_]|[#№]")
"""A letter, `#` or `№`: every id word holds one, and text between numbers often none (the id words' search costs
tens of microseconds a number)."""
_CUE_BEFORE = re.compile(rf"\b(?:{_PHONE_WORDS})\b[^\n]{{0,25}}$", re.IGNORECASE)
_DATE_SHAPE = re.compile(r"(?:^|[ /-])\d{1,2}[/-](?:\d{1,2}[/-])?(?:19|20)\d\d(?:$|[ /-])")

PHONE = re.compile("|".join((
    r"(?<![\w+])(?P<intl>(?:\+|00)[1-9][\d ().\-/]{6,22}\d)(?![\w])",
    r"(?<![\w+\-./])(?P<nanp>(?:\([2-9]\d\d\) ?|[2-9]\d\d[-. ])[2-9]\d\d[-. ]\d{4})(?![\w\-]|[./]\d)",
    r"(?<![\w+\-./,])(?P<trunk>0[1-9]\d{0,4}(?:[ /-]\d{2,8}){1,4})(?![\w\-]|[.,/]\d)",
    rf"\b(?:{_PHONE_WORDS})\b\W{{0,3}}(?:[^\W\d]+\W{{1,3}}){{0,3}}"
    rf"(?P<cued>[1-9][\d ().\-/]{{7,16}}\d)(?![\w\-]|[.,]\d)",
)), re.IGNORECASE)
"""Candidate phone numbers; `phone_ok` decides. The number is in the named group that matched."""

_DIGITS = {"intl": (8, 15), "nanp": (10, 10), "trunk": (9, 12), "cued": (9, 12)}
"""Digit count range of each form (for `00CC` numbers the `00` is not counted)."""


def phone_span(match: re.Match[str]) -> tuple[int, int]:
    """Where the number itself is in the text (a cued match also holds its phone word)."""
    return match.span(match.lastgroup or 0)


def phone_ok(match: re.Match[str]) -> bool:
    """True when the candidate reads as a telephone number rather than an id, a date or an amount."""
    form = match.lastgroup or ""
    number = match.group(form)
    digits = re.sub(r"\D", "", number)
    if form == "intl" and number.startswith("00"):
        digits = digits[2:]
    low, high = _DIGITS[form]
    if not low <= len(digits) <= high or _DATE_SHAPE.search(number):
        return False
    before = match.string[max(0, match.start(form) - 30):match.start(form)]
    return form in ("intl", "cued") or not after_id_word(before) or bool(_CUE_BEFORE.search(before))


def after_id_word(before: str) -> bool:
    """True when the text `before` a number closes with an id word ("order number", "tracking", "part no.") within
    its last 20 characters: the number is that id (the rule bare phone numbers follow)."""
    return bool(_ID_LEAD.search(before)) and bool(_ID_WORDS.search(before))
