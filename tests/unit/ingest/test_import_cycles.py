"""No import cycle inside ``ingest``, type-only (``TYPE_CHECKING``) and lazy imports included.

A cycle hidden behind ``TYPE_CHECKING`` still couples both modules (each must change with the
other); the replica's collaborators depend on narrow Protocols instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

INGEST = Path(__file__).resolve().parents[3] / "ingest"


def _module_name(path: Path) -> str:
    parts = path.relative_to(INGEST.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in INGEST.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path start -> ... -> start, if one exists (depth-first)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in graph[node]:
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_graph_sees_type_only_imports():
    graph = _import_graph()
    assert "ingest.admin.node_view" in graph["ingest.admin.streams"]
    assert "ingest.replication.partition_state" in graph["ingest.produce.write_path"]


def test_no_module_of_ingest_imports_itself_back():
    graph = _import_graph()
    cycles = [c for m in sorted(graph) if (c := _cycle_from(m, graph)) is not None]
    assert cycles == [], " | ".join(" -> ".join(c) for c in cycles)
