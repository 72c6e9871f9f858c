"""The dependency rule of the design, checked on every import the code can make.

``spark_log`` ← ``coordinator`` ← ``ingest``; ``spark_log`` ← ``datasource``; the application
layer ``liftlog`` sits above all four. The core must not reach kazoo, pyspark or fastapi even
lazily, so the walk covers imports inside functions, ``importlib.import_module("...")`` and
``__import__("...")`` calls; a dynamic import whose target is not a literal is refused because
nobody could check it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.imports import ROOT, UNRESOLVABLE, imports

# Third-party modules the core may use: its storage and wire formats (pyarrow, numpy, crc32c),
# NATS, the Delta lake and encryption at rest (cryptography's AES-GCM). Everything above the
# core may use what the core may use.
CORE_THIRD_PARTY = frozenset({"pyarrow", "numpy", "crc32c", "nats", "deltalake", "cryptography"})
# Liftbridge's wire contract (spark_log.liftbridge): protobuf messages and the gRPC service
CORE_THIRD_PARTY |= {"google", "grpc"}
# Typed streams' schemas (spark_log.schemas): Avro (fastavro, Apache Avro) and JSON Schema
CORE_THIRD_PARTY |= {"fastavro", "avro", "jsonschema", "jsonschema_rs", "referencing"}

ALLOWED: dict[str, frozenset[str]] = {
    "spark_log": CORE_THIRD_PARTY | {"spark_log"},
    "coordinator": CORE_THIRD_PARTY | {"spark_log", "coordinator", "kazoo"},
    "ingest": CORE_THIRD_PARTY
    | {"spark_log", "coordinator", "ingest"}
    | {"fastapi", "fastapi_offline", "starlette", "pydantic", "uvicorn", "prometheus_client"}
    | {"uvloop"}  # the node's event loop, installed with uvicorn[standard]
    | {"nkeys"}  # the intake signs the server's nonce with an NKey seed, as nats-py does
    | {"nacl"},  # NATS logins: the nodes check the server's JWT signatures (PyNaCl, under nkeys)
    "datasource": CORE_THIRD_PARTY | {"spark_log", "datasource", "pyspark", "py4j"},
    "pyspark_liftlog": CORE_THIRD_PARTY | {"spark_log", "datasource", "pyspark"},
}
# The application layer may import anything; it is listed so its modules are still parsed.
APPLICATION = "liftlog"


def violations(package: str, allowed: frozenset[str], root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for edge in imports(path, root):
            if edge.top in sys.stdlib_module_names or edge.top in allowed:
                continue
            found.append(f"{edge.path}:{edge.line} imports {edge.top!r}")
    return found


def test_every_package_imports_only_what_the_rule_allows() -> None:
    found = [v for package, allowed in ALLOWED.items() for v in violations(package, allowed)]
    assert found == [], "imports against the dependency rule:\n" + "\n".join(found)


def test_application_layer_has_no_unresolvable_dynamic_import() -> None:
    dynamic = [
        f"{e.path}:{e.line}"
        for path in (ROOT / APPLICATION).rglob("*.py")
        for e in imports(path)
        if e.target == UNRESOLVABLE
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
    targets = [e.top for e in imports(module, root=tmp_path)]
    assert targets.count("kazoo") == 1
    assert "pyspark" in targets
    assert UNRESOLVABLE in targets
