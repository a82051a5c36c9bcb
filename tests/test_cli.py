"""`ragpulse eval` and `ragpulse up` as a user meets them: options, their help, and the README's account of them."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ragpulse.ops import cli
from tests.fake_anthropic import FakeAnthropic, Fault
from tests.support import ROOT, child_env, start_api, start_worker

if TYPE_CHECKING:
    from tests.conftest import LiveStack

EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
README = (ROOT / "README.md").read_text()


def ragpulse_eval(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "eval", *map(str, args)], capture_output=True,
                          text=True, timeout=180, cwd=ROOT, env=env or child_env("unused"))


def subparsers() -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options_of(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


# -- options, help and the README -------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["up", "eval"])
def test_every_option_has_help_showing_its_default(command: str) -> None:
    parser = subparsers()[command]
    formatter = parser.formatter_class(prog=parser.prog)
    for action in [*options_of(parser), *[a for a in parser._actions if not a.option_strings]]:
        assert action.help, f"{command} {action.dest} has no help"
    for action in options_of(parser):
        shown = formatter._get_help_string(action) % {"default": action.default}
        assert "default" in shown, f"`ragpulse {command} --help` does not show the default of {action.dest}"
    assert "(default: 10000)" in re.sub(r"\s+", " ", subparsers()["eval"].format_help())


def test_help_never_shows_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_API_KEY", "s3cret-key")
    assert "s3cret-key" not in subparsers()["eval"].format_help()


def test_eval_server_defaults_to_ragpulse_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGPULSE_PORT", raising=False)
    assert cli._parser().parse_args(["eval", "f.jsonl"]).server == "http://127.0.0.1:8080"
    monkeypatch.setenv("RAGPULSE_PORT", "9123")
    assert cli._parser().parse_args(["eval", "f.jsonl"]).server == "http://127.0.0.1:9123"


def test_readme_synopsis_names_every_eval_and_up_option() -> None:
    for command in ("eval", "up"):
        synopsis = re.search(rf"`ragpulse {command} ([^`]*)`", README).group(1)
        for action in options_of(subparsers()[command]):
            assert action.option_strings[-1] in synopsis, f"README's `ragpulse {command}` lacks {action.option_strings}"


def test_readme_settings_table_lists_every_variable_the_cli_reads() -> None:
    table = README[README.index("## Configuration"):README.index("## Tests")]
    sources = "".join((ROOT / "ragpulse" / "ops" / name).read_text() for name in ("cli.py", "stack.py"))
    read = set(re.findall(r"environ\.get\(\s*[\"'](RAGPULSE_\w+)", sources)) | {"RAGPULSE_LOG_LEVEL"}
    assert {"RAGPULSE_API_KEY", "RAGPULSE_PORT", "RAGPULSE_HOST"} <= read
    assert not [name for name in read if f"`{name}`" not in table]
