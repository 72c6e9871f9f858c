"""An embedded stack for a benchmark script: NATS, ZooKeeper and ``nodes`` nodes on free
ports (the Liftbridge ports too, never the machine-wide default), its endpoints reported,
every process stopped when the block ends, whatever happens."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from liftlog.bench.toolkit.progress import Progress
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone


@contextlib.contextmanager
def started_stack(
    root: Path, nodes: int, progress: Progress, note: str = ""
) -> Iterator[Standalone]:
    """``note``: said after the start line (what the benchmark's stack has that matters)."""
    stack = Standalone(
        nodes=nodes,
        data_dir=root / "stack",
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port_block(nodes),
        liftbridge_port=free_port_block(nodes),
        report=progress.say,
    )
    progress.say(f"starting NATS, ZooKeeper and {nodes} node(s){note} ...")
    with stack:
        for name, address in stack.endpoints():
            progress.say(f"  {name:<14} {address}")
        yield stack
