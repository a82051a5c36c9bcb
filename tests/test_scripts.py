"""scripts/_python.sh, which ./scripts/run and ./scripts/test use to set up .venv: short progress lines instead of
a silent minute, pip's noise (setuptools' editable-install banner) hidden, pip's errors shown.

pip is replaced by a stand-in (a `python` whose `-m venv` and `-m pip` only pretend), so nothing is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support import ROOT

BANNER = "Please be careful with folders in your working directory with the same"
FAKE_PYTHON = f"""#!/bin/sh
# A python that creates .venv and runs pip only in pretence, printing what setuptools prints on an editable install.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "pip $*" >> "$(dirname "$0")/../pip-calls"
  case "$*" in *" -e "*)
    echo "  editable_wheel.py:354: BuildBackendWarning: Editable installation." >&2
    echo "          {BANNER}" >&2
    if [ -n "$FAKE_PIP_ERROR" ]; then echo "ERROR: $FAKE_PIP_ERROR" >&2; exit 1; fi;;
  esac
  exit 0
fi
exec {sys.executable} "$@"
"""


def project(tmp: Path) -> Path:
    """A copy of the scripts and pyproject.toml, with no .venv, and the stand-in python."""
    (tmp / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "_python.sh", tmp / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp)
    fake = tmp / "fake-python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return tmp


def ensure_venv(root: Path, extras: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f'source scripts/_python.sh && ensure_venv "{extras}"'], cwd=root,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHON": str(root / "fake-python"), **env})


def test_first_run_says_what_it_does_and_hides_the_editable_install_banner(tmp_path: Path) -> None:
    root = project(tmp_path)
    first = ensure_venv(root)
    assert first.returncode == 0, first.stderr
    assert "setting up .venv (first run, about a minute)..." in first.stderr
    assert ".venv ready" in first.stderr
    assert BANNER not in first.stderr + first.stdout and "BuildBackendWarning" not in first.stderr
    assert BANNER in (root / ".venv" / "pip.log").read_text()       # kept for whoever wants the details

    again = ensure_venv(root)
    assert again.returncode == 0 and again.stderr == "" and again.stdout == ""   # up to date: silent

    later = time.time() + 5
    os.utime(root / "pyproject.toml", (later, later))
    changed = ensure_venv(root)
    assert changed.returncode == 0 and "updating .venv (pyproject.toml changed)..." in changed.stderr


def test_the_test_install_serves_run_too(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert ensure_venv(root, "test").returncode == 0
    calls = (root / ".venv" / "pip-calls").read_text()
    plain = ensure_venv(root)
    assert plain.returncode == 0 and plain.stderr == ""
    assert (root / ".venv" / "pip-calls").read_text() == calls       # no second install


def test_a_pip_failure_is_shown_and_fails(tmp_path: Path) -> None:
    root = project(tmp_path)
    failed = ensure_venv(root, FAKE_PIP_ERROR="No matching distribution found for litestar")
    assert failed.returncode == 1
    assert "ERROR: No matching distribution found for litestar" in failed.stderr
    assert "pip failed" in failed.stderr
    assert not (root / ".venv" / ".ragpulse-installed").exists()    # the next run tries again
