"""Package layering, read from the source (AST, nothing imported): service/ and worker/ share RQ code through
dispatch/ only, and ragpulse/, the domain, imports none of them nor Litestar nor RQ."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imports(package: str) -> list[tuple[str, str]]:
    """(`file:line`, imported module) for every import under `package`/, relative imports made absolute."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        where = path.relative_to(ROOT)
        parts = list(where.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(f"{where}:{node.lineno}", alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the package of the file, `level - 1` packages up
                    package_parts = parts if path.name == "__init__.py" else parts[:-1]
                    base = package_parts[:len(package_parts) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                found.append((f"{where}:{node.lineno}", module))
    return found


def offenders(package: str, forbidden: set[str]) -> list[str]:
    """`file:line imports module` for each import under `package`/ of a forbidden top-level package."""
    return sorted({f"{where} imports {module}" for where, module in imports(package)
                   if module.split(".")[0] in forbidden})


def test_the_scan_sees_imports() -> None:
    """Guard against a scan that silently finds nothing (a wrong root, a renamed package)."""
    assert ("worker/janitor.py", "dispatch.chunks") in {(w.split(":")[0], m) for w, m in imports("worker")}
    assert any(m.startswith("dispatch.") for _, m in imports("service"))


def test_worker_never_imports_service() -> None:
    bad = offenders("worker", {"service"})
    assert not bad, "worker/ must not import service/ (share code through dispatch/):\n" + "\n".join(bad)


def test_service_never_imports_worker() -> None:
    bad = offenders("service", {"worker"})
    assert not bad, "service/ must not import worker/ (enqueue by dotted path, dispatch/):\n" + "\n".join(bad)


def test_ragpulse_imports_no_app_layer_nor_web_or_queue_framework() -> None:
    bad = offenders("ragpulse", {"service", "worker", "dispatch", "litestar", "rq"})
    assert not bad, "ragpulse/ is the domain; it imports no app layer, Litestar or RQ:\n" + "\n".join(bad)


def test_dispatch_imports_neither_service_nor_worker() -> None:
    bad = offenders("dispatch", {"service", "worker"})
    assert not bad, "dispatch/ is shared by service/ and worker/ and imports neither:\n" + "\n".join(bad)
