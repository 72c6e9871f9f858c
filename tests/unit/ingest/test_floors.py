"""The ingest node's packages, layered one way: a module imports its own floor and those below.

From the ground up: the node's foundation (its errors, clock and metrics), security (who a
caller is, the node's own credentials), replication (partition state, fetcher, fetch server),
the lake exporter and tier, the produce path, the replica that assembles them, the admin
operations, consumer groups and cursors, the REST API, and the node process on top. Kafka
keeps the same roles apart (``log/``, ``server/``, ``coordinator/group/``, ``controller/``).
"""

from __future__ import annotations

from tests.support.imports import graph, modules

FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "ingest.errors",
        "ingest.clock",
        "ingest.metrics",
        "ingest.histogram",
        "ingest.peer_calls",
        "ingest.memory_release",
    ),
    ("ingest.security",),
    ("ingest.replication",),
    ("ingest.lake",),
    ("ingest.produce",),
    ("ingest.replica",),
    ("ingest.admin",),
    ("ingest.groups",),
    ("ingest.api",),
    ("ingest.liftbridge",),
    ("ingest", "ingest.__main__", "ingest.node", "ingest.nats_connect"),
)


def floor_of(module: str) -> int | None:
    """The floor a module of ``ingest`` stands on (a package holds its sub-modules)."""
    for floor, places in enumerate(FLOORS):
        for place in places:
            if module == place or (place != "ingest" and module.startswith(place + ".")):
                return floor
    return None


def test_every_ingest_module_stands_on_a_floor() -> None:
    unplaced = [m for m in modules() if m.split(".")[0] == "ingest" and floor_of(m) is None]
    assert unplaced == [], "place these in FLOORS:\n" + "\n".join(unplaced)


def test_no_ingest_module_imports_a_floor_above_its_own() -> None:
    upward = [
        f"{source} (floor {floor_of(source)}) imports {target} (floor {floor_of(target)})"
        for source, targets in graph().items()
        if source.split(".")[0] == "ingest"
        for target in sorted(targets)
        if target.split(".")[0] == "ingest" and (floor_of(target) or 0) > (floor_of(source) or 0)
    ]
    assert upward == [], "imports against the floors:\n" + "\n".join(upward)


def test_the_floors_are_what_the_design_names() -> None:
    """Every sub-package of ``ingest`` has a floor, and every floor's package exists."""
    packages = {
        m
        for m, path in modules().items()
        if path.name == "__init__.py" and m.count(".") == 1 and m.startswith("ingest.")
    }
    named = {place for places in FLOORS for place in places if place.count(".") == 1}
    assert packages <= named
    assert all(place in modules() for places in FLOORS for place in places)
