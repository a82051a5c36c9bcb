"""The README's example outputs, produced from a real run of the example files so that they cannot go stale.

Each block of README.md between `<!-- readme-output: NAME -->` and `<!-- /readme-output -->` is what `ragpulse eval`
prints for one run of examples/acme_support_traces.jsonl against a fresh service (its own Redis: no labels, no
qualification), with the job id replaced by `…` and the sections the README does not discuss cut to `…`.
tests/test_readme_outputs.py checks every block against a run; `python -m tests.readme_outputs` rewrites them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragpulse.ops.redis_server import PrivateRedis
from tests.support import ROOT, child_env, start_api, start_worker

README = ROOT / "README.md"
EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
BLOCK = re.compile(r"(<!-- readme-output: (?P<name>[a-z-]+) -->\n```\n)(?P<body>.*?)(```\n<!-- /readme-output -->)",
                   re.S)


@dataclass(frozen=True)
class Run:
    """One README block: the `ragpulse eval` flags and the report sections it keeps (by their heading's start)."""

    flags: tuple[str, ...]
    sections: tuple[str, ...]


RUNS = {
    "eval-not-judged": Run((), ("RETRIEVAL", "GENERATION", "SECURITY")),
    "eval-heuristic": Run(("--judge", "heuristic"), ("GENERATION", "DIAGNOSTIC MATRIX")),
}
"""Block name -> how it is produced."""

STACK_ENV = {"RAGPULSE_QUEUE": "readme", "RAGPULSE_JUDGE": "", "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}
"""A new user's service: no judge configured (RAGPULSE_JUDGE="" reads as unset)."""


def evaluate(server: str, run: Run) -> str:
    """`ragpulse eval` of the examples against `server`, cut to the block's sections."""
    done = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "eval", str(EXAMPLES), "--server", server,
                           *run.flags], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=child_env("unused"))
    if done.returncode != 0:
        raise RuntimeError(f"ragpulse eval exited {done.returncode}: {done.stderr[-2000:]}")
    return cut(done.stdout, run.sections)


def cut(report: str, sections: tuple[str, ...]) -> str:
    """The report's first three lines (job, counts, method), then each kept section, `…` where anything is cut."""
    head, *rest = report.strip("\n").split("\n\n")
    lines = head.splitlines()
    kept = [re.sub(r"^job [0-9a-f]{32}", "job …", lines[0]), *lines[1:3], "…"]
    for section in rest:
        if section.startswith(sections):
            kept += [section, "…"]
    return "\n".join(kept) + "\n"


def readme_blocks(text: str | None = None) -> dict[str, str]:
    """Block name -> the output the README shows."""
    return {m["name"]: m["body"] for m in BLOCK.finditer(README.read_text() if text is None else text)}


@contextmanager
def fresh_service() -> Iterator[str]:
    """A new user's service on its own Redis, with one worker; its URL."""
    server = PrivateRedis().start()
    procs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url, api = start_api(server.url, Path(tmp), STACK_ENV)
            procs.append(api)
            procs.append(start_worker(server.url, Path(tmp), STACK_ENV, name="readme"))
            yield url
    finally:
        for proc in procs:
            proc.stop()
        server.stop()


def main() -> None:
    """Rewrite every block of README.md from a fresh run."""
    with fresh_service() as url:
        outputs = {name: evaluate(url, run) for name, run in RUNS.items()}
    text = README.read_text()
    missing = set(RUNS) - set(readme_blocks(text))
    if missing:
        raise SystemExit(f"README.md has no block for {', '.join(sorted(missing))}")
    README.write_text(BLOCK.sub(lambda m: m[1] + outputs[m["name"]] + m[4], text))
    print(f"rewrote {len(outputs)} blocks of {README}")


if __name__ == "__main__":
    main()
