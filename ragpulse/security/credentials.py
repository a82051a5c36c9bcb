"""Credentials in an answer that none of the retrieved documents holds: API keys, tokens, private keys and passwords
that the generator took from its prompt, its tools, its training data or another user's conversation.

Kinds, each found by its published shape and confirmed (a candidate that fails is not counted):

- `private_key`: a `-----BEGIN ... PRIVATE KEY-----` block (PEM, OpenSSH, PGP; in a JSON string too) with at least 64
  characters of base64 body. A public key or a certificate is not one.
- `aws_access_key`: `AKIA`, `ASIA`, `ABIA` or `ACCA` and 16 base-32 characters. `aws_secret_key`: 40 base-64
  characters named as an AWS secret access key (`aws_secret_access_key`, "secret access key", a bare `secret_key`;
  the string has no shape of its own).
- `github_token` (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), `gitlab_token` (`glpat-`), `slack_token`
  (`xoxb-`... with a digit, and incoming-webhook URLs), `stripe_key` (live secret and restricted keys only: test and
  publishable keys are not secrets), `google_api_key` (`AIza`), `anthropic_key` (`sk-ant-`), `openai_key`
  (`sk-proj-`, `sk-svcacct-`, `sk-admin-`, and the older `sk-` keys), `azure_key` (`AccountKey=`/`SharedAccessKey=`
  of a connection string).
- `jwt`: three base64url parts whose first decodes to a JSON header naming its `alg` or `typ`, with a signature that
  looks random.
- `url_password`: a password in a URL's user part (`postgres://app:s3cret9@db`) that reads as a stated password
  below: documentation defaults (`scott:tiger`, `guest:guest`, `mypass`) do not.
- `password`: a value stated as a password ("the admin password is ...", `DB_PASSWORD=...`, `"password": "..."`, a
  table's password column, in English, German, French, Spanish, Portuguese, Italian and Dutch) that holds a digit or a
  symbol and is at least 6 characters long, and is not code, a path, a URL, a date, a phone number or a quantity
  ("90-day", "SHA-256"); or a stronger value right after the word ("with the password Xy7kLm29Q"). A heuristic: a
  password made of words only, given before the word ("X as the password"), behind a clause or as a positional
  argument is missed; a password named as an example ("the password Tr0ub4dor&3 is hard to remember") counts. Text
  in decomposed Unicode (NFD accents) is not read.

Every value must also look random: documented examples and placeholders (`AKIAIOSFODNN7EXAMPLE`, `sk-...`,
`<YOUR_API_KEY>`, `${DB_PASSWORD}`, `xxxx`, `****`, `changeme`) are not credentials. A credential a retrieved document
holds is left out, as personal data is (ragpulse.security.pii): a helpdesk answer quoting the guest Wi-Fi password
from its article is the app at work; a live key in the corpus is a finding for the corpus, not for this answer. An
answer is searched for at most MAX_VALUES credentials, and each anchored kind at MAX_ANCHORS places: the time is
linear in the answer. Only kinds and counts leave this module: the values are never returned or logged.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ragpulse.security.deadline import NEVER, Deadline, Scan

_PLACEHOLDER_WORDS = re.compile(
    r"(?i)example|sample|dummy|placeholder|redacted|changeme|change_me|your|here|fake|secret_?key|api_?key|token|"
    r"password|passwd|xxxx|0000|1234|abcd|\.\.\.|\*\*")
_SEQUENCES = ("0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_MIN_DISTINCT_SHARE = 0.3
"""A random token of n characters holds more than 0.3 n distinct ones (a 20-character base-62 token holds ~17)."""


PUBLISHED_EXAMPLES = frozenset({
    # Azurite's (the Azure Storage emulator's) account key, the same in every installation and in Microsoft's docs.
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    # jwt.io's sample token, signed with the key "your-256-bit-secret".
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIy"
    "fQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
})
"""Values of a credential's shape that their vendors publish for everyone to use (AWS's examples carry the word
EXAMPLE, which the placeholder check finds)."""


def _random_looking(value: str, minimum_distinct: int = 8) -> bool:
    """True when `value` is not a placeholder: no example word, no run of one character, no alphabet run, and enough
    distinct characters."""
    if _PLACEHOLDER_WORDS.search(value) or re.search(r"(.)\1{4}", value):
        return False
    if any(sequence[i:i + 6] in value for sequence in _SEQUENCES for i in range(len(sequence) - 5)):
        return False
    distinct = len(set(value))
    return distinct >= minimum_distinct and distinct >= _MIN_DISTINCT_SHARE * min(len(value), 40)


def _token(group: int = 0, minimum_distinct: int = 8) -> Callable[[re.Match[str]], str | None]:
    """A check that keeps group `group` of the match when it looks random."""
    def valid(match: re.Match[str]) -> str | None:
        value = match.group(group)
        return value if _random_looking(value, minimum_distinct) else None
    return valid


_BASE64_LINE = re.compile(r"^[A-Za-z0-9+/=]{16,}$")
_KEY_LINE_BREAK = re.compile(r"\r?\n|\\n")
"""A key's lines end in a newline, or in the two characters `\\n` inside a JSON string (a service-account file)."""
KEY_BODY_DISTINCT = 20
"""Fewest distinct characters of a key body's first 200: random base64 holds ~50 (runs of `A` in the key's
structure included, as an OpenSSH key's `AAAAAB` prefix), a placeholder far fewer."""


def _private_key(match: re.Match[str]) -> str | None:
    """The block's longest base64 line (a document holding the same key holds that line as written), when the body
    (header lines such as `Proc-Type:` left out) holds 64 characters or more and enough distinct characters. No
    placeholder-word search: random base64 holds "herE" or "FAke" often enough to drop one real key in 200."""
    lines = [line.strip() for line in _KEY_LINE_BREAK.split(match.group("body"))]
    lines = [line for line in lines if _BASE64_LINE.match(line)]
    body = "".join(lines)
    if len(body) < 64 or len(set(body[:200])) < KEY_BODY_DISTINCT:  # base64 lines only: "...your key..." is no line
        return None
    return max(lines, key=len)


def _jwt(match: re.Match[str]) -> str | None:
    """The token, when its header (at most 1,000 characters: a real one is under 200) decodes to a JSON object naming
    `alg` or `typ`, and its signature looks random (`xxxx...`, `dummysignature` are examples); a header nested too
    deep to decode is not one."""
    header = match.group("header")
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (binascii.Error, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    if not (isinstance(decoded, dict) and ("alg" in decoded or "typ" in decoded)):
        return None
    return match.group() if _random_looking(match.group("signature"), 12) else None


def _url_password(match: re.Match[str]) -> str | None:
    """The password of a URL's user part when it reads as a stated password (`_password_value`: 6+ characters, a
    digit or a symbol, no placeholder or variable; the documentation defaults `mypass`, `tiger`, `guest`,
    `my-secret-pw`, `${DB_PASS}` are not) and is not the user name again (`postgres:postgres`)."""
    user, password = match.group("user"), match.group("password")
    return None if password == user else _password_value(password, stated=True, strip=False)


_STATED_PLACEHOLDER = re.compile(r"(?i)^(?:\*+|x+|\.+|-+|<.*|\{.*|\[.*|\$.*|%.*|![a-z]\w*|vault:.*)$")
"""Not a value: masks, template variables, and YAML tags or vault references (`!vault |`, `vault:secret/db`)."""
_SYMBOL = re.compile(r"[^\w\s.-]")
"""A symbol that is not a word joiner: "case-sensitive" and "e.g." are words."""
_VALUE_END = ".,;:'\"`"
"""Sentence punctuation and quotes after a value, stripped (`!` and `?` end passwords often enough to be kept)."""
_NOT_A_PASSWORD = re.compile(
    r"[\s\[\](){}]|&\w+=|://|^/|:/|^\+?[\d\s()./:+-]*[\d][\d\s()./:+-]*[./:+-][\d\s()./:+-]*$"
    r"|^(?:\d+|[A-Z0-9]{1,4})-[^\W\d_]+$|^[A-Z]{2,8}-\d{1,5}$")
"""Values that are something else: code (`os.environ[`, `config[`), a query string (`secret&ssl=true`), a path or
URL (`/home/runner`, `//sso.acme.com/reset`), a date, time or phone number (`3/15/2024`, `+1-800-555-0199`: digits
and separators only), a quantity or a standard (`90-day`, `12-stellig`, `2FA-protected`, `SHA-256`)."""


def _password_value(value: str, stated: bool, strip: bool = True) -> str | None:
    """`value` when it reads as a password. Stated (after `:`, `=` or "is"): 6-64 characters, a digit or a symbol
    (not `-`, `_` or `.`) among them, not a placeholder, not a short number or range ("8-64"), not code, a path, a
    date or a quantity (_NOT_A_PASSWORD). Not stated ("with the password Xy..."): 8 characters or more, letters and
    digits, and mixed case or a symbol."""
    value = value.rstrip(_VALUE_END) if strip and len(value) > 1 else value
    if not 6 <= len(value) <= 64:
        return None
    digits, letters = any(c.isdigit() for c in value), any(c.isalpha() for c in value)
    if stated:
        shaped = digits or _SYMBOL.search(value) is not None
    else:
        mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
        shaped = len(value) >= 8 and digits and letters and (mixed or _SYMBOL.search(value) is not None)
    if not shaped:  # the cheap tests first: most words after "password" end here
        return None
    if _STATED_PLACEHOLDER.match(value) or _PLACEHOLDER_WORDS.search(value) or _NOT_A_PASSWORD.search(value):
        return None
    if stated and re.fullmatch(r"[\d\s,.-]+", value) and len(re.sub(r"\D", "", value)) < 6:
        return None
    return value


def _stated_password(match: re.Match[str]) -> str | None:
    """The stated value; else the word right after the password word read as a value not stated ("use the password
    Xy7kLm29Q and the username is jsmith": the stated reading took `jsmith`)."""
    stated = match.group("op") is not None
    if stated and _NOT_BETWEEN.search(match.group("between")):
        value = None
    else:
        value = _password_value(match.group("value"), stated)
    if value is None and stated and match.group("first"):
        value = _password_value(match.group("first"), stated=False)
    return value


_PASSWORD_WORD = (r"(?:password|passwort|passwd|passphrase|pwd|kennwort|wachtwoord|mot de passe|contrase[ñn]a|"
                  r"senha)")
_NOT_BETWEEN = re.compile(
    r"(?i)\b(?:reset|code|policy|hint|length|expir\w*|manager|hash\w*|field|requirements?|rules?|change\w*|token|"
    r"must|should|can|cannot|will|needs?|has|have|may|muss|doit|debe|https?|ftp)\b")
"""Words between a password word and "is" that say the value is something else: "password reset code is 482913" and
"password must be 12 characters" state no password (checked after the match: a lookahead per word cost 5 us a
password word)."""
_STATED = (r"(?i)(?<![^\W_])(?<![/$])" + _PASSWORD_WORD + r"[\w.-]{0,20}?[\"'`]?"
           r"(?:[ \t]{0,8}\[[^\]\n]{0,20}\])?"
           r"(?=[ \t]{1,8}[\"'`(]?(?P<first>[^\s\"'`<>()]{1,80}))?"
           r"(?:(?P<between>(?:[ \t]{1,8}[^\s:=.!?]{1,30}){0,8}?)[ \t]{0,8}"
           r"(?P<op>[:=]|=>|\b(?:is|was|ist|lautet|luidt|est|es|é|è)\b(?:[ \t]{0,8}:)?)|[ \t]{1,8})"
           r"[ \t]{0,8}[\"'`(]?(?P<value>[^\s\"'`<>()]{1,80})")
"""A password word not inside another word (`DB_PASSWORD`, `Passwort`; not `bypassword`), a CLI prompt's default
(`[None]`), up to eight words of what it is for ("for the staging Grafana", "this quarter"), then `:`, `=` or "is"
and the value; or the value right after the word ("con la contraseña Xy7..."), which must then look stronger."""
_TABLE_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_PASSWORD_HEADER = re.compile(r"(?i)^\W*" + _PASSWORD_WORD + r"\W*$")


def _table_passwords(answer: str) -> Iterator[tuple[tuple[int, int], str]]:
    """(span, value) of each password in a markdown table: in the column a header cell names (`| user | password |`),
    or in the cell after one that names it (`| Password | Kq7!vRm2x |`)."""
    column, offset = None, 0
    for line in answer.splitlines(keepends=True):
        row = _TABLE_ROW.match(line)
        if row is None:
            column = None
        else:
            cells = [cell.strip() for cell in row.group(1).split("|")]
            named = [i for i, cell in enumerate(cells) if _PASSWORD_HEADER.match(cell)]
            values = [cells[i + 1] for i in named if i + 1 < len(cells)]
            if column is None:
                column = named[0] if named else None
            elif column < len(cells) and not set(cells[column]) <= set(":- "):
                values.append(cells[column])
            for cell in values:
                value = _password_value(cell.strip("`"), stated=True)
                if value is not None:
                    start = offset + line.index(value)
                    yield (start, start + len(value)), value
        offset += len(line)


@dataclass(frozen=True)
class _Kind:
    """How one kind of credential is found and confirmed."""

    pattern: re.Pattern[str]
    valid: Callable[[re.Match[str]], str | None]
    """The credential's value for a match that passes the kind's check, else None."""
    needs: tuple[str, ...]
    """Literals one of which every match holds (as written; `folded` compares them with the lower-cased answer): an
    answer with none of them is not searched for this kind."""
    folded: bool = False
    anchored: bool = False
    """Every match starts at one of `needs` (in the folded answer): the pattern is tried only there (a scan of the
    whole answer with a case-blind alternation costs ~16 us for 220 characters, the literals' `find` ~1 us)."""

    def matches(self, answer: str, folded: str) -> list[re.Match[str]]:
        """The pattern's matches in `answer`, in order (call it once a needed literal is known to be present); an
        anchored kind is tried at its first MAX_ANCHORS literals."""
        if not self.anchored:
            return list(self.pattern.finditer(answer))
        if len(folded) == len(answer):
            text = folded if self.folded else answer
            starts: list[int] = sorted({i for literal in self.needs for i in _positions(text, literal)})
        else:  # lower() lengthened the text (a Turkish İ): its positions are not the answer's
            starts = [found.start() for found in self.literals.finditer(answer)]
        tried = (self.pattern.match(answer, start) for start in starts[:MAX_ANCHORS])
        return [match for match in tried if match is not None]

    @functools.cached_property
    def literals(self) -> re.Pattern[str]:
        """`needs` found in the answer as written, case-blind."""
        return re.compile("(?i)" + "|".join(re.escape(literal) for literal in self.needs))


MAX_ANCHORS = 1_000
"""Most places an anchored kind is tried in one answer: a megabyte of "pwd pwd ..." cost 3.7 s of matching."""


def _positions(text: str, literal: str) -> Iterator[int]:
    start = text.find(literal)
    while start != -1:
        yield start
        start = text.find(literal, start + 1)


_B = r"(?<![A-Za-z0-9_])"
_E = r"(?![A-Za-z0-9_])"

_KINDS: dict[str, _Kind] = {
    # The body runs to the next `-----` (its END line, or the next block: a lazy scan for END from every BEGIN was
    # quadratic in an answer of many BEGIN lines).
    "private_key": _Kind(re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                                    r"(?P<body>(?:(?!-----)[\s\S]){0,8000})"), _private_key, ("PRIVATE KEY",)),
    "aws_access_key": _Kind(re.compile(_B + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}" + _E), _token(), ("AKIA", "ASIA",
                                                                                                     "ABIA", "ACCA")),
    # Named as AWS names it: `aws_secret_access_key`, "secret access key", or a bare `secret_key` (Terraform's and
    # boto3's argument; `WEBHOOK_SECRET_KEY` is another secret).
    "aws_secret_key": _Kind(re.compile(r"(?i)(?:secret[ _-]?access[ _-]?key|aws[ _-]?secret(?:[ _-]?key)?|"
                                       r"(?<![\w-])secret_key)[\"'`]?"
                                       r"(?:[ \t]{0,8}\[[^\]\n]{0,20}\])?(?:[ \t]{0,8}(?:[:=]|=>|\bis\b))?"
                                       r"[ \t]{0,8}[\"'`]?"
                                       r"(?P<v>[A-Za-z0-9/+]{40})"
                                       r"(?![A-Za-z0-9/+=])"), _token("v", 16), ("secret",), folded=True),
    "github_token": _Kind(re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})"
                                     + _E), _token(), ("_",)),
    "gitlab_token": _Kind(re.compile(_B + r"glpat-[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])"), _token(), ("glpat-",)),
    "slack_token": _Kind(re.compile(_B + r"(?:xox[abprse]-(?=[0-9A-Za-z-]{0,40}\d)[0-9A-Za-z-]{20,}|"
                                    r"https://hooks\.slack\.com/services/"
                                    r"T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,})"), _token(),
                         ("xox", "hooks.slack.com")),
    "stripe_key": _Kind(re.compile(_B + r"[rs]k_live_[0-9A-Za-z]{24,}" + _E), _token(), ("_live_",)),
    "google_api_key": _Kind(re.compile(_B + r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"), _token(), ("AIza",)),
    "anthropic_key": _Kind(re.compile(_B + r"sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}"), _token(), ("sk-ant-",)),
    "openai_key": _Kind(re.compile(_B + r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{48})"
                                   r"(?![A-Za-z0-9_-])"), _token(), ("sk-",)),
    "azure_key": _Kind(re.compile(r"(?i)(?:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{40,86}={0,2})"),
                       _token("v", 16), ("key=",), folded=True),
    "jwt": _Kind(re.compile(r"(?<![A-Za-z0-9_-])(?P<header>eyJ[A-Za-z0-9_-]{8,1000})\.eyJ[A-Za-z0-9_-]{8,}\."
                            r"(?P<signature>[A-Za-z0-9_-]{16,})"), _jwt, ("eyJ",)),
    "url_password": _Kind(re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://(?P<user>[^\s:/@?#'\"<>]*):"
                                     r"(?P<password>[^\s/@?#'\"<>]+)@[A-Za-z0-9\[]"), _url_password, ("://",)),
    "password": _Kind(re.compile(_STATED), _stated_password,
                      ("pass", "pwd", "kennwort", "wachtwoord", "contrase", "senha", "mot de passe"), folded=True,
                      anchored=True),
}
"""Kinds in the order they claim text: a span one has taken (a key in a URL) is not read again by a later one."""

MAX_VALUES = 100
"""Most credentials one answer is searched for, table cells included: past it the answer is a finding anyway, and
each value found is searched for in the documents' text (an answer of thousands of keys beside a large document cost
values x document size)."""
_SEARCH = tuple((name, kind, kind.needs, kind.folded) for name, kind in _KINDS.items())
KINDS: tuple[str, ...] = tuple(_KINDS)
"""Every kind `credential_kinds` can report: the `credential` label values of
ragpulse_security_credential_answers_total."""
_SEPARATOR = "\x00"
"""Joins the documents into one text: a value holding it is compared with each document on its own instead."""


def credential_kinds(answer: str, documents: Sequence[str]) -> dict[str, int]:
    """Kind -> number of distinct credentials in `answer` that no document contains; empty when none leaked. Counts
    only: never the values."""
    return credential_scan(answer, documents).found


def credential_scan(answer: str, documents: Sequence[str], deadline: Deadline = NEVER) -> Scan[dict[str, int]]:
    """`credential_kinds`, stopping at `deadline` (what was found by then, marked timed out). Linear in the answer
    and the documents: at most MAX_VALUES values, each searched for once in the documents joined into one text."""
    found: dict[str, set[str]] = {}
    corpus: str | None = None
    scan = _Candidates(answer, deadline)
    for name, value in scan:
        if name in found and value in found[name]:
            continue
        if _SEPARATOR in value:
            held = any(value in doc for doc in documents)
        else:
            corpus = corpus if corpus is not None else _SEPARATOR.join(documents)
            held = value in corpus
        if not held:
            found.setdefault(name, set()).add(value)
    return Scan({name: len(values) for name, values in found.items()}, scan.timed_out)


class _Candidates:
    """(kind, value) of each confirmed credential, kind by kind in claiming order, at most MAX_VALUES of them; a kind
    none of whose literals the answer holds is not searched. Text a value has taken is marked in a byte mask, so
    that telling whether a later match overlaps one costs its own length, not the number of values before it."""

    def __init__(self, answer: str, deadline: Deadline) -> None:
        self.answer, self.deadline = answer, deadline
        self.claimed = bytearray(len(answer))
        self.timed_out = False

    def __iter__(self) -> Iterator[tuple[str, str]]:
        answer, claimed = self.answer, self.claimed
        folded = answer.lower()
        values = 0
        for name, kind, needs, in_folded in _SEARCH:
            text = folded if in_folded else answer
            for literal in needs:  # a loop, not any(), over plain tuples: this runs for every kind of every answer
                if literal in text:
                    break
            else:
                continue
            for match in kind.matches(answer, folded):
                if self.deadline.passed():
                    self.timed_out = True
                    return
                start, end = match.span()
                if claimed.find(1, start, end) != -1:
                    continue
                value = kind.valid(match)
                if value is not None and value not in PUBLISHED_EXAMPLES:
                    claimed[start:end] = b"\x01" * (end - start)
                    yield name, value
                    values += 1
                    if values >= MAX_VALUES:
                        return
        if "|" in answer:
            for (start, end), value in _table_passwords(answer):
                if self.deadline.passed():
                    self.timed_out = True
                    return
                if claimed.find(1, start, end) == -1:
                    yield "password", value
                    values += 1
                    if values >= MAX_VALUES:
                        return
