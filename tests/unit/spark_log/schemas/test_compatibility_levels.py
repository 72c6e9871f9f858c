"""Compatibility levels: direction (BACKWARD, FORWARD, FULL) and reach (latest or transitive)."""

from __future__ import annotations

import json

import pytest

from spark_log.schemas import AvroSchema, CompatibilityLevel, check_compatibility

Level = CompatibilityLevel


def user(*fields: tuple[str, str, bool]) -> AvroSchema:
    """A record of (name, type, has_default) fields."""
    listed = [
        {"name": name, "type": kind, **({"default": 0} if defaulted else {})}
        for name, kind, defaulted in fields
    ]
    return AvroSchema(json.dumps({"type": "record", "name": "User", "fields": listed}))


ID = ("id", "long", False)
V1 = user(ID)
ADDED_WITH_DEFAULT = user(ID, ("age", "int", True))
ADDED_WITHOUT_DEFAULT = user(ID, ("age", "int", False))


@pytest.mark.parametrize(
    ("level", "new", "compatible"),
    [
        (Level.BACKWARD, ADDED_WITH_DEFAULT, True),
        (Level.BACKWARD, ADDED_WITHOUT_DEFAULT, False),
        (Level.FORWARD, ADDED_WITHOUT_DEFAULT, True),
        (Level.FORWARD, user(), False),
        (Level.BACKWARD, user(), True),
        (Level.FULL, ADDED_WITH_DEFAULT, True),
        (Level.FULL, ADDED_WITHOUT_DEFAULT, False),
        (Level.FULL, user(), False),
        (Level.NONE, user(("id", "string", False)), True),
    ],
)
def test_direction(level: CompatibilityLevel, new: AvroSchema, compatible: bool) -> None:
    assert (check_compatibility(level, new, [V1]) == []) is compatible


# v1 {id: long}; v2 adds name with a default; v3 drops the default: readable from v2's data
# (which always has name) but not from v1's.
CHAIN = [V1, user(ID, ("name", "int", True))]
V3 = user(ID, ("name", "int", False))


@pytest.mark.parametrize(
    ("level", "failing_versions"),
    [
        (Level.BACKWARD, []),
        (Level.BACKWARD_TRANSITIVE, [1]),
        (Level.FULL, []),
        (Level.FULL_TRANSITIVE, [1]),
        (Level.FORWARD_TRANSITIVE, []),
        (Level.NONE, []),
    ],
)
def test_transitive_checks_every_version(
    level: CompatibilityLevel, failing_versions: list[int]
) -> None:
    problems = check_compatibility(level, V3, CHAIN)
    assert sorted({int(p.split(" ")[1].rstrip(":")) for p in problems}) == failing_versions


def test_forward_transitive_and_version_numbers() -> None:
    v1 = user(ID, ("age", "int", False))
    v2 = user(ID, ("age", "int", True))
    new = user(ID)
    assert check_compatibility(Level.FORWARD, new, [v1, v2]) == []
    problems = check_compatibility(Level.FORWARD_TRANSITIVE, new, [v1, v2], versions=[4, 7])
    assert len(problems) == 1 and problems[0].startswith("version 4 cannot read the new schema:")


def test_no_existing_versions_is_always_compatible() -> None:
    assert check_compatibility(Level.FULL_TRANSITIVE, V1, []) == []
