"""docs/design.md's map of the code is the code: every package and sub-package it names exists,
every one that exists is named, and its ingest floors are those the floor test enforces."""

from __future__ import annotations

import re

from tests.support.imports import PACKAGES, modules
from tests.support.paths import REPO
from tests.unit.ingest.test_floors import FLOORS

DESIGN = REPO / "docs" / "design.md"


def _section() -> str:
    text = DESIGN.read_text()
    return text[text.index("## The code") :]


def _sub_packages() -> set[str]:
    """``spark_log/log/``, ``ingest/api/``, ...: every package one level below a top one."""
    return {
        name.replace(".", "/") + "/"
        for name, path in modules().items()
        if path.name == "__init__.py" and name.count(".") == 1
    }


def test_every_sub_package_is_on_the_map_and_only_those() -> None:
    section = _section()
    named = set()
    for row in re.findall(r"^\| `(\w+)/` \|.*\| (.*) \|$", section, re.MULTILINE):
        top, subs = row
        named |= {f"{top}/{sub}" for sub in re.findall(r"`(\w+/)`", subs)}
    ingest_floors = set(re.findall(r"^\| \d+ \| `(ingest/\w+/)`", section, re.MULTILINE))
    assert named | ingest_floors == _sub_packages()


def test_every_top_level_package_is_on_the_map() -> None:
    named = set(re.findall(r"^\| `(\w+)/` \|", _section(), re.MULTILINE))
    assert named == set(PACKAGES) - {"bench"}


def test_the_floors_table_is_the_floor_test_s_order() -> None:
    """Top down, each floor with its number; a floor that is a sub-package is named by it."""
    rows = re.findall(r"^\| (\d+) \| `(ingest/[\w.]+/?)`", _section(), re.MULTILINE)
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    expected = [
        (
            str(floor),
            places[0].replace(".", "/") + "/"
            if places[0].count(".") == 1 and places[0] in packages
            else None,
        )
        for floor, places in reversed(list(enumerate(FLOORS)))
    ]
    assert [floor for floor, _ in rows] == [floor for floor, _ in expected]
    for (_, documented), (_, package) in zip(rows, expected, strict=True):
        assert package is None or documented == package
