"""No import circle anywhere: not between two modules, and not between the rooms of any package
(its modules and sub-packages), in every first-party package.

A circle is where a reader cannot start: each side needs the other to be understood, and a lazy
or ``TYPE_CHECKING`` import only hides it from the interpreter, so those count too.
"""

from __future__ import annotations

from tests.support.imports import circles, collapse, graph, modules


def _packages() -> list[str]:
    """Every package (a folder with ``__init__.py``) by dotted name."""
    return sorted(name for name, path in modules().items() if path.name == "__init__.py")


def _rooms_of(package: str) -> dict[str, str]:
    """Module -> its room in ``package``: the child module or sub-package it lies in."""
    depth = package.count(".") + 1
    return {
        name: ".".join(name.split(".")[: depth + 1])
        for name in modules()
        if name.startswith(package + ".")
    }


def test_no_module_imports_itself_back() -> None:
    assert circles(graph()) == []


def test_no_package_s_rooms_import_each_other_back() -> None:
    edges = graph()
    found = {}
    for package in _packages():
        room = _rooms_of(package)
        inside = {m: frozenset(t for t in edges[m] if t in room) for m in room}
        if package_circles := circles(collapse(inside, room)):
            found[package] = package_circles
    assert found == {}


def test_the_checker_finds_a_circle() -> None:
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert circles(edges) == [["a", "b", "c"]]
    room = {"a": "x", "b": "x", "c": "y", "d": "y"}
    assert circles(collapse(edges, room)) == [["x", "y"]]
