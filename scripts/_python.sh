# Sourced by scripts/run and scripts/test: pick a Python >= 3.11 and keep a virtualenv in .venv up to date.
pick_python() {
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "ragpulse needs Python 3.11 or newer on PATH (or set PYTHON=...)" >&2
  return 1
}

ensure_venv() {  # $1: extras to install, e.g. "test" or ""
  local py extras stamp
  py=$(pick_python) || exit 1
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  extras=${1:+[$1]}
  stamp=".venv/.ragpulse-installed${1:+-$1}"
  # Reinstall only when the dependency list changed since the last install.
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
    touch "$stamp"
  fi
}
