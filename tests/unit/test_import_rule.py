"""The dependency rule of the design, checked on every import the code can make.

``spark_log`` ← ``coordinator`` ← ``ingest``; ``spark_log`` ← ``datasource``; the application
layer ``liftlog`` sits above all four. The core must not reach kazoo, pyspark or fastapi even
lazily, so the walk covers imports inside functions, ``importlib.import_module("...")`` and
``__import__("...")`` calls; a dynamic import whose target is not a literal is refused because
nobody could check it.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Third-party modules the core may use: its storage and wire formats (pyarrow, numpy, crc32c),
# NATS, the Delta lake and encryption at rest (cryptography's AES-GCM). Everything above the
# core may use what the core may use.
CORE_THIRD_PARTY = frozenset({"pyarrow", "numpy", "crc32c", "nats", "deltalake", "cryptography"})

ALLOWED: dict[str, frozenset[str]] = {
    "spark_log": CORE_THIRD_PARTY | {"spark_log"},
    "coordinator": CORE_THIRD_PARTY | {"spark_log", "coordinator", "kazoo"},
    "ingest": CORE_THIRD_PARTY
    | {"spark_log", "coordinator", "ingest"}
    | {"fastapi", "fastapi_offline", "starlette", "pydantic", "uvicorn", "prometheus_client"},
    "datasource": CORE_THIRD_PARTY | {"spark_log", "datasource", "pyspark", "py4j"},
    "pyspark_liftlog": CORE_THIRD_PARTY | {"spark_log", "datasource", "pyspark"},
}
# The application layer may import anything; it is listed so its modules are still parsed.
APPLICATION = "liftlog"
DYNAMIC_IMPORTERS = frozenset({"import_module", "__import__"})


@dataclass(frozen=True)
class Edge:
    """One import a module can execute: where it stands and the top-level name it reaches."""

    path: str
    line: int
    target: str


def _literal_import(node: ast.Call) -> str | None:
    """The module named by ``importlib.import_module("x")`` / ``__import__("x")``, or ``"?"``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in DYNAMIC_IMPORTERS:
        return None
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return "?"


def edges(path: Path, root: Path = ROOT) -> Iterator[Edge]:
    rel = str(path.relative_to(root))
    for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(rel, node.lineno, alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield Edge(rel, node.lineno, node.module.split(".")[0])
        elif isinstance(node, ast.Call) and (target := _literal_import(node)) is not None:
            yield Edge(rel, node.lineno, target.split(".")[0])


def violations(package: str, allowed: frozenset[str], root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for edge in edges(path, root):
            if edge.target in sys.stdlib_module_names or edge.target in allowed:
                continue
            found.append(f"{edge.path}:{edge.line} imports {edge.target!r}")
    return found


def test_every_package_imports_only_what_the_rule_allows() -> None:
    found = [v for package, allowed in ALLOWED.items() for v in violations(package, allowed)]
    assert found == [], "imports against the dependency rule:\n" + "\n".join(found)


def test_application_layer_has_no_unresolvable_dynamic_import() -> None:
    dynamic = [
        f"{e.path}:{e.line}"
        for path in (ROOT / APPLICATION).rglob("*.py")
        for e in edges(path)
        if e.target == "?"
    ]
    assert dynamic == []


def test_every_top_level_package_is_covered() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert packages == {*ALLOWED, APPLICATION}


def test_the_walk_sees_lazy_and_importlib_imports(tmp_path: Path) -> None:
    """The checker itself: a lazy import and an importlib call are both edges."""
    module = tmp_path / "probe.py"
    module.write_text(
        "import importlib\n"
        "def f():\n"
        "    import kazoo.client\n"
        "    return importlib.import_module('pyspark.sql'), __import__(name)\n"
    )
    targets = [e.target for e in edges(module, root=tmp_path)]
    assert targets.count("kazoo") == 1
    assert "pyspark" in targets
    assert "?" in targets
