"""``python -m ingest --config FILE``: run one ingest node until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import importlib.abc
import importlib.machinery
import logging
import sys
from collections.abc import Coroutine

from spark_log.config import load_node_config
from spark_log.errors import LiftlogError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="liftlog-node", description=__doc__)
    parser.add_argument("--config", required=True, help="node config (TOML)")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    try:
        config = load_node_config(args.config)
    except LiftlogError as exc:
        print(f"liftlog node: {exc.message}", file=sys.stderr)
        return 2
    _without_pandas()
    from ingest.node import IngestNode  # imported late: config errors print fast

    try:
        _run(IngestNode(config).run_until_signalled())
    except LiftlogError as exc:
        logging.getLogger("liftlog.node").error("node stopped: %s", exc.message)
        return 1
    return 0


class _PandasAbsent(importlib.abc.MetaPathFinder):
    """Makes pandas unimportable in the node process. pyarrow imports pandas, when it is
    installed (Spark's side needs it), the first time it checks whether a value is a
    DataFrame, which a Delta commit does: about 40 MB that a node, which never builds a
    DataFrame, would hold for its whole life. pyarrow takes its own path without pandas when
    the import fails."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"{fullname} is not used by a node", name=fullname)
        return None


def _without_pandas() -> None:
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _PandasAbsent())


def _run(main: Coroutine[object, object, None]) -> None:
    """Run the node on uvloop (installed with ``uvicorn[standard]``), asyncio's own loop where
    uvloop is missing: its socket and timer handling in C shortens the node's busiest loop
    turns, such as answering a thousand woken long polls at once (``docs/benchmarks.md``)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


if __name__ == "__main__":
    sys.exit(main())
