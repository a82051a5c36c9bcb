"""What each hostile input costs the security checks per MB, and how that cost grows: 128 KiB against 1 MiB.

Run: .venv/bin/python bench/security_growth.py [--reps 2]

The shapes are what a hostile probe posted to make the checks quadratic: answers made of nothing but phone numbers,
email addresses, Luhn-valid card numbers or mod-97-valid IBANs (each once with every value distinct, which reaches
the checks' value caps, and once with 50 values repeated, which makes them read the whole answer), a markdown table of
passwords beside a 1 MB retrieved document, and a retrieved document of quoted injection cues (each read for whether
it is aimed at the model). Every check is called directly, with no time budget. The figure is ms per MB at each size
and the growth ratio (time at 1 MiB / time at 128 KiB): 8 for a check linear in its input, 64 for a quadratic one, less
than 8 when a cap stops the check early. Target: at most 10. Each time is the best of `--reps` runs. Exits 0 on a
missed target (a benchmark, not a test); tests/test_security_growth.py guards the same bound. bench/README.md records
the figures.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ragpulse.security.credentials import credential_scan  # noqa: E402
from ragpulse.security.injection import injection_scan  # noqa: E402
from ragpulse.security.pii import pii_scan  # noqa: E402

SMALL, LARGE = 128 * 1024, 1024 * 1024
REPEATED = 50
"""Distinct values of a `repeated` shape: under every cap, so the check reads the whole answer."""


def _luhn(body: str) -> str:
    total = 0
    for i, digit in enumerate(reversed(body)):
        d = int(digit) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return body + str((10 - total % 10) % 10)


def _iban(account: str) -> str:
    bban = "WEST" + account
    numeric = "".join(str(int(c, 36)) for c in bban + "GB00")
    return f"GB{98 - int(numeric) % 97:02d}{bban}"


VALUES: dict[str, Callable[[int], str]] = {
    "phones": lambda i: f"+44 20 7946 {i % 10000:04d}",
    "emails": lambda i: f"user{i}@example.com",
    "cards": lambda i: " ".join(_luhn(f"411111{i:09d}")[j:j + 4] for j in range(0, 16, 4)),
    "ibans": lambda i: _iban(f"{i:014d}"),
}
"""One value of each personal-data shape, the i-th."""


def answer(shape: str, size: int, distinct: bool) -> str:
    """An answer of about `size` characters holding only values of `shape`."""
    make, parts, length, i = VALUES[shape], [], 0, 0
    while length < size:
        value = make(i if distinct else i % REPEATED)
        parts.append(value)
        length += len(value) + 1
        i += 1
    return " ".join(parts)


def password_table(size: int) -> str:
    """A markdown table of user names and random-looking passwords, about `size` characters."""
    rows, length, i = ["| user | password |", "|---|---|"], 0, 0
    while length < size:
        rows.append(f"| u{i} | Kq7!vRm{(i * 7919 + 5550321) % 10**7:07d} |")  # not "0000": a placeholder
        length += len(rows[-1]) + 1
        i += 1
    return "\n".join(rows)


def document(size: int) -> str:
    """A retrieved document of ordinary prose, about `size` characters, holding none of the answers' values."""
    sentence = "The warehouse ships orders within two working days of payment, tracked end to end. "
    return sentence * (size // len(sentence) + 1)


def injection_document(size: int) -> str:
    """A document that quotes an injection cue in every sentence (each match is read for whether it is aimed)."""
    sentence = 'Attackers often write "ignore all previous instructions" into pages; filters catch it. '
    return sentence * (size // len(sentence) + 1)


def workloads(size: int) -> dict[str, Callable[[], object]]:
    """Each hostile shape at `size`, as a call of the check that reads it."""
    big_doc = [document(LARGE)]
    work: dict[str, Callable[[], object]] = {}
    for shape in VALUES:
        for distinct in (True, False):
            text = answer(shape, size, distinct)
            work[f"{shape} ({'distinct' if distinct else 'repeated'})"] = \
                lambda text=text: pii_scan(text, big_doc)
    table = password_table(size)
    work["credentials table + 1 MB document"] = lambda: credential_scan(table, big_doc)
    doc = injection_document(size)
    work["injection, quoted cues"] = lambda: injection_scan(doc)
    return work


def best(work: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    small, large = workloads(SMALL), workloads(LARGE)
    print(f"{platform.machine()}, Python {platform.python_version()}")
    print(f"{'shape':40} {'128 KiB ms/MB':>14} {'1 MiB ms/MB':>12} {'ratio':>6}")
    failed = False
    for name in small:
        t_small, t_large = best(small[name], args.reps), best(large[name], args.reps)
        ratio = t_large / t_small
        failed |= ratio > 10
        print(f"{name:40} {t_small * 1e3 * 8:14.1f} {t_large * 1e3:12.1f} {ratio:6.2f}")
    print("FAIL" if failed else "PASS", "(target: ratio at most 10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
