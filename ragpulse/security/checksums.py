"""Check-digit and structure rules of the identifiers the PII check validates: exact rules, no guessing.

Each validator takes the compact value (separators removed, upper case) and says whether it is well formed. A
number that fails its check is not a real identifier, so the PII check does not count it.
"""

from __future__ import annotations

from collections import Counter

_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_CF_ODD = dict(zip("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                   [1, 0, 5, 7, 9, 13, 15, 17, 19, 21] + [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6,
                                                          8, 12, 14, 16, 10, 22, 25, 24, 23]))
"""Codice fiscale: value of a character in an odd (1st, 3rd, ...) position."""
_CF_EVEN = {**{str(d): d for d in range(10)}, **{chr(65 + i): i for i in range(26)}}
"""Codice fiscale: value of a character in an even position."""


def luhn(digits: str) -> bool:
    """Payment cards: the Luhn sum (every second digit from the right doubled, digits summed) is 0 mod 10."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def iban(value: str) -> bool:
    """IBAN (ISO 13616): the first four characters moved to the end, letters as 10..35, is 1 mod 97."""
    moved = value[4:] + value[:4]
    return 15 <= len(value) <= 34 and int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def us_ssn(digits: str) -> bool:
    """US SSN structure (no check digit exists): area not 000, 666 or 900-999; group not 00; serial not 0000."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def de_steuer_id(digits: str) -> bool:
    """German Steuer-ID: first digit not 0; in the first ten one digit occurs two or three times, the others at
    most once; the eleventh is the ISO 7064 MOD 11,10 check digit."""
    counts = Counter(digits[:10]).values()
    if digits[0] == "0" or sorted(counts, reverse=True)[:2] not in ([2, 1], [3, 1]):
        return False
    product = 10
    for ch in digits[:10]:
        total = (int(ch) + product) % 10 or 10
        product = total * 2 % 11
    return (11 - product) % 10 == int(digits[10])


def fr_nir(value: str) -> bool:
    """French NIR (numéro de sécurité sociale): the 2-digit key is 97 - (first 13 digits mod 97), with Corsica's
    departments 2A and 2B read as 19 and 18."""
    body = value[:13].replace("2A", "19").replace("2B", "18")
    return body.isdigit() and 97 - int(body) % 97 == int(value[13:])


def es_dni(value: str) -> bool:
    """Spanish DNI (8 digits) or NIE (X, Y or Z then 7 digits, read as 0, 1, 2): the letter is the number mod 23
    looked up in the official table."""
    number = str("XYZ".index(value[0])) + value[1:-1] if value[0] in "XYZ" else value[:-1]
    return _DNI_LETTERS[int(number) % 23] == value[-1]


def it_codice_fiscale(value: str) -> bool:
    """Italian codice fiscale: the 16th character is the sum of the first 15, weighted by position, mod 26."""
    total = sum((_CF_ODD if i % 2 == 0 else _CF_EVEN)[ch] for i, ch in enumerate(value[:15]))
    return chr(65 + total % 26) == value[15]


def uk_nino(value: str) -> bool:
    """UK National Insurance number (no check digit exists): two prefix letters, neither D, F, I, Q, U or V, the
    second not O, the pair not BG, GB, KN, NK, NT, TN or ZZ; six digits; suffix A-D."""
    first, second = value[0], value[1]
    return (first not in "DFIQUV" and second not in "DFIQUVO"
            and value[:2] not in ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ"))


_CARD_PREFIXES = ("4", "34", "37", "35", "36", "38", "300", "301", "302", "303", "304", "305", "51", "52", "53", "54",
                  "55", "6011", "644", "645", "646", "647", "648", "649", "65", "62")
"""Issuer prefixes of Visa, Amex, JCB, Diners, Mastercard (51-55; 2221-2720 below), Discover and UnionPay."""


def payment_card(digits: str) -> bool:
    """Payment card number: 13-19 digits, a known issuer prefix, and a valid Luhn sum."""
    known = digits.startswith(_CARD_PREFIXES) or 2221 <= int(digits[:4]) <= 2720
    return 13 <= len(digits) <= 19 and known and luhn(digits)
