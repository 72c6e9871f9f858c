"""The first-party import graph, as the code can execute it: every module of the packages and
every import it can make, lazy ones and ``importlib``/``__import__`` calls with a literal
name included (a non-literal one is the target ``"?"``), resolved to the module it names.

The import-rule, floor and cycle tests all read this one graph, so a checker cannot see an
import another misses.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# every first-party package of the repository (the tests are not part of the house)
PACKAGES = (
    "spark_log",
    "coordinator",
    "ingest",
    "datasource",
    "liftlog",
    "pyspark_liftlog",
    "bench",
)
DYNAMIC_IMPORTERS = frozenset({"import_module", "__import__"})
UNRESOLVABLE = "?"


@dataclass(frozen=True)
class Import:
    """One import a module can execute: where it stands and the dotted name it reaches."""

    path: str
    line: int
    target: str

    @property
    def top(self) -> str:
        return self.target.split(".")[0]


def module_name(path: Path, root: Path = ROOT) -> str:
    """``ingest/replica/replica.py`` -> ``ingest.replica.replica``; a package's ``__init__``
    is the package itself."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _literal_import(node: ast.Call) -> str | None:
    """The module named by ``importlib.import_module("x")`` / ``__import__("x")``, or ``"?"``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in DYNAMIC_IMPORTERS:
        return None
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return UNRESOLVABLE


def _base_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` starts from (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(path: Path, root: Path = ROOT) -> Iterator[Import]:
    """Every import of one file, as dotted names (``from a import b`` yields ``a.b``, which
    ``resolve`` narrows to ``a`` when ``b`` is a name rather than a module)."""
    rel = str(path.relative_to(root))
    module = module_name(path, root)
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(rel, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = _base_of(node, module, is_package)
            for alias in node.names:
                yield Import(rel, node.lineno, f"{base}.{alias.name}" if base else alias.name)
        elif isinstance(node, ast.Call) and (target := _literal_import(node)) is not None:
            yield Import(rel, node.lineno, target)


def resolve(target: str, known: Iterable[str]) -> str | None:
    """The longest known module that ``target`` names or lies in (None: not first-party)."""
    names = set(known)
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in names:
            return candidate
    return None


@cache
def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every first-party module by dotted name."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(path, root)] = path
    return found


@cache
def graph(root: Path = ROOT) -> dict[str, frozenset[str]]:
    """module -> the first-party modules it imports (itself left out)."""
    known = modules(root)
    edges: dict[str, frozenset[str]] = {}
    for name, path in known.items():
        targets = {resolve(i.target, known) for i in imports(path, root)}
        edges[name] = frozenset(t for t in targets if t is not None and t != name)
    return edges


def circles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in edges.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def collapse(edges: dict[str, frozenset[str]], room: dict[str, str]) -> dict[str, frozenset[str]]:
    """The graph with each module replaced by its room (``room[module]``), self-edges dropped."""
    collapsed: dict[str, set[str]] = {}
    for source, targets in edges.items():
        here = room[source]
        bucket = collapsed.setdefault(here, set())
        bucket.update(room[t] for t in targets if room[t] != here)
    return {k: frozenset(v) for k, v in collapsed.items()}


def floors(edges: dict[str, frozenset[str]]) -> dict[str, int]:
    """Each module's floor: 1 for a module importing no first-party module, else one above
    the highest it imports (modules in a circle share the circle's floor)."""
    memo: dict[str, int] = {}

    def floor(node: str, path: frozenset[str]) -> int:
        if node in memo:
            return memo[node]
        below = [floor(t, path | {node}) for t in edges.get(node, ()) if t not in path]
        memo[node] = 1 + max(below, default=0)
        return memo[node]

    return {node: floor(node, frozenset()) for node in sorted(edges)}


def summary(root: Path = ROOT) -> str:
    """Files and floors per folder, the rooms a maintainer walks through (``python -m
    tests.support.imports``)."""
    edges = graph(root)
    found = floors(edges)
    lines = []
    folders: dict[str, list[str]] = {}
    for name, path in modules(root).items():
        folders.setdefault(str(path.parent.relative_to(root)), []).append(name)
    for package in PACKAGES:
        names = [n for n in edges if n.split(".")[0] == package]
        folders[f"{package}/ (whole)"] = names
    for folder, names in sorted(folders.items()):
        inside = {n: frozenset(t for t in edges[n] if t in names) for n in names}
        depth = max(floors(inside).values())
        lines.append(f"{folder:<32} {len(names):>3} files {depth:>3} floors")
    lines.append(f"{'(every package)':<32} {len(found):>3} files {max(found.values()):>3} floors")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(summary(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
