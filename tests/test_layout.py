"""Package layering, read from the source (AST, nothing imported): service/ and worker/ share RQ code through
dispatch/ only; ragpulse/, the domain, imports none of them nor Litestar nor RQ; and ragpulse's subpackages import
each other in no circle. Each row below may import from the rows above it, never from its own row's other members
or below (every import counts, lazy and `if TYPE_CHECKING:` ones too):

    exceptions                          the one error hierarchy
    config                              settings, defaults, Redis keys, prices, allowlist entries
    model                               structs shared by everyone (wire schema, results, estimates, scores, metric
                                        keys, Prometheus family definitions)
    metrics, security, store            pure per-query functions and the metric registry; checks; Redis state
    judges                              judge kinds, the judge's input, prompts, the LLM loop
    intake, monitoring, reporting       body decoding; Prometheus counters and sampling; the typed report, built
    gate, labels                        gate config and checks; the review loop
    evaluation                          one trace, one chunk of a job
    ops                                 the `ragpulse` command (`eval`, `gate`, `up`), the HTTP client
    online                              the production-trace consumer
    otlp                                OpenTelemetry intake, handed over to online

sdk/ ships to apps on its own: it imports only ragpulse's `__version__` and `exceptions`. Shared structs go down to
model/; something generated from the metric registry (the report's generation section) lives at or above metrics/.
"""

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
                # `from ragpulse import model` imports ragpulse.model, not only ragpulse's __init__
                submodules = {f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")}
                found += [(f"{where}:{node.lineno}", m) for m in sorted(submodules) or [module]]
    return found


def _is_module(dotted: str) -> bool:
    """Whether `dotted` names a package or module file in this repository."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


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


def subpackage_of(module: str) -> str | None:
    """The node of ragpulse's package graph that `module` belongs to: `ragpulse.X` for a subpackage or top-level
    module X, `ragpulse` for the package's own __init__, None outside ragpulse."""
    parts = module.split(".")
    if parts[0] != "ragpulse":
        return None
    if len(parts) > 1 and _is_module(f"ragpulse.{parts[1]}"):
        return f"ragpulse.{parts[1]}"
    return "ragpulse"


def subpackage_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) subpackage pairs of ragpulse/, each with the `file:line`s that make it.

    Every import counts: module-level, function-level (lazy) and `if TYPE_CHECKING:` ones, since each is a
    dependency a reader must follow and a lazy import is how a circle usually hides."""
    edges: dict[tuple[str, str], list[str]] = {}
    for where, module in imports("ragpulse"):
        source = subpackage_of(where.split(":")[0].removesuffix(".py").replace("/", ".").removesuffix(".__init__"))
        target = subpackage_of(module)
        if target is not None and source != target:
            edges.setdefault((source, target), []).append(where)
    return edges


def strongly_connected(edges: set[tuple[str, str]]) -> list[set[str]]:
    """The graph's strongly connected components of more than one node (Tarjan): each holds at least one cycle."""
    successors: dict[str, list[str]] = {}
    for source, target in sorted(edges):
        successors.setdefault(source, []).append(target)
        successors.setdefault(target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in successors[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while not component or member != node:
                member = stack.pop()
                component.add(member)
            if len(component) > 1:
                components.append(component)

    for node in successors:
        if node not in index:
            visit(node)
    return components


def test_cycle_finder_finds_a_known_cycle() -> None:
    """Guard the finder itself: a → b → c → a is one component, d hanging off it is not in it."""
    assert strongly_connected({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [{"a", "b", "c"}]
    assert strongly_connected({("a", "b"), ("b", "c")}) == []


def test_the_package_graph_sees_lazy_and_type_checking_imports() -> None:
    """Guard the graph: it has the edges one expects, including ones made only inside functions."""
    edges = subpackage_edges()
    assert ("ragpulse.store", "ragpulse.config") in edges
    lazy = next(n for n, line in enumerate((ROOT / "ragpulse/judges/kinds.py").read_text().splitlines(), start=1)
                if line.startswith("    from ragpulse.store.connection import"))
    assert f"ragpulse/judges/kinds.py:{lazy}" in edges["ragpulse.judges", "ragpulse.store"]  # lazy, in a function
    typed = next(n for n, line in enumerate((ROOT / "ragpulse/judges/kinds.py").read_text().splitlines(), start=1)
                 if line.startswith("    from ragpulse.config.settings import"))
    assert f"ragpulse/judges/kinds.py:{typed}" in edges["ragpulse.judges", "ragpulse.config"]  # if TYPE_CHECKING:
    assert ("ragpulse.sdk", "ragpulse") in edges  # transport reads ragpulse.__version__


def shortest_cycle(start: str, edges: set[tuple[str, str]]) -> list[str]:
    """The nodes of a shortest path from `start` back to itself (breadth first), [] when there is none."""
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for source, target in sorted(edges):
                if source != node or target in parent:
                    continue
                parent[target] = node
                if target == start:
                    path = [start]
                    while path[-1] != start or len(path) == 1:
                        path.append(parent[path[-1]])
                    return path[::-1]
                following.append(target)
        frontier = following
    return []


def test_shortest_cycle_walks_back_to_its_start() -> None:
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("b", "a"), ("c", "d")}
    assert shortest_cycle("a", edges) == ["a", "b", "a"]
    assert shortest_cycle("c", edges) == ["c", "a", "b", "c"]
    assert shortest_cycle("d", edges) == []


def test_ragpulse_subpackages_import_no_circle() -> None:
    """No circle between ragpulse's subpackages (and top-level modules such as ragpulse.exceptions); on failure,
    a shortest circle through each package caught in one, every edge with the `file:line`s that make it."""
    edges = subpackage_edges()
    report, seen = [], set()
    for component in strongly_connected(set(edges)):
        report.append("packages caught in circles: " + ", ".join(sorted(component)))
        for node in sorted(component):
            cycle = shortest_cycle(node, set(edges))
            steps = list(zip(cycle, cycle[1:]))
            if frozenset(steps) in seen:
                continue
            seen.add(frozenset(steps))
            report.append("  circle: " + " -> ".join(cycle))
            report += [f"    {source} -> {target}: {', '.join(edges[source, target])}" for source, target in steps]
    assert not report, "ragpulse/ subpackages import each other in a circle:\n" + "\n".join(report)
