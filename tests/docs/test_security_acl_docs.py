"""docs/security.md's table of implied actions is the one the authorization rule applies:
every action appears once, and what the table says an allow of it also allows is exactly
what ``authorize`` permits from that single allow."""

from __future__ import annotations

import re

from spark_log.auth import AclEntry, Action, Permission, authorize
from tests.support.paths import REPO

SECURITY = REPO / "docs" / "security.md"
HEADER = "| an allow of | also allows, on the same resource |"
NOTHING = "nothing else"


def _documented() -> dict[Action, set[Action]]:
    """Each action of the table's rows, and the actions its right-hand cell names."""
    text = SECURITY.read_text()
    rows = text[text.index(HEADER) :].split("\n\n", 1)[0].splitlines()[2:]
    table: dict[Action, set[Action]] = {}
    for row in rows:
        left, right = (cell.strip() for cell in row.strip("|").split("|"))
        implied = set() if right == NOTHING else {Action(a) for a in re.findall(r"`(\w+)`", right)}
        for action in re.findall(r"`(\w+)`", left):
            assert Action(action) not in table, f"{action} is in the table twice"
            table[Action(action)] = implied
    return table


def _allowed_by_one_allow(action: Action) -> set[Action]:
    acl = [AclEntry("id", "p", action, "stream:s", Permission.ALLOW)]
    return {a for a in Action if a != action and authorize("p", a, "stream:s", acl, ())}


def test_the_implication_table_is_what_authorize_does() -> None:
    table = _documented()
    assert set(table) == set(Action)
    for action, implied in table.items():
        assert _allowed_by_one_allow(action) == implied, action
