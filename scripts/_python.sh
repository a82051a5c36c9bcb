# Sourced by scripts/run and scripts/test: pick a Python >= 3.11 and keep a virtualenv in .venv up to date.
# Progress goes to stderr in short lines; pip's own output (notices, setuptools' editable-install banner) goes to
# .venv/pip.log and is shown only when pip fails.
say() { echo "$*" >&2; }

pick_python() {
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  say "ragpulse needs Python 3.11 or newer on PATH (or set PYTHON=...)"
  return 1
}

fresh() {  # $1: a stamp file; true when it exists and is newer than pyproject.toml
  [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ]
}

ensure_venv() {  # $1: extras to install, e.g. "test" or ""
  local py extras stamp log started
  stamp=".venv/.ragpulse-installed${1:+-$1}"
  # Reinstall only when the dependency list changed since the last install; the test install includes the plain one.
  if fresh "$stamp" || { [ -z "$1" ] && fresh .venv/.ragpulse-installed-test; }; then
    return 0
  fi
  started=$SECONDS
  py=$(pick_python) || exit 1
  if [ ! -x .venv/bin/python ]; then
    say "setting up .venv (first run, about a minute)..."
    "$py" -m venv .venv || { say "could not create .venv with $py"; exit 1; }
  elif [ -f "$stamp" ]; then
    say "updating .venv (pyproject.toml changed)..."
  else
    say "installing ${1:+$1 }dependencies into .venv..."
  fi
  extras=${1:+[$1]}
  log=.venv/pip.log
  say "  installing ragpulse${extras} and its dependencies with pip (details in $log)"
  if ! { .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip &&
         .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"; } >"$log" 2>&1; then
    cat "$log" >&2
    say "pip failed (output above, also in $log)"
    exit 1
  fi
  touch "$stamp"
  say "  .venv ready ($((SECONDS - started)) s)"
}
