"""The HA topology as fault tests drive it: ``Standalone(ha=True)`` in-process on free ports.

Three NATS servers (routes between them), a three-server ZooKeeper ensemble, SeaweedFS for
the S3 lake and three nodes, each attached to its own NATS server. Each server is a
``Component`` the test can ``kill()``, ``pause()``/``resume()`` and ``restart()``; the stack
is stopped (every process by PID) and its directory removed whatever the test does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from liftlog.embedded.ports import free_port_block
from liftlog.embedded.standalone import Standalone

HA_SIZE = 3


def start_ha_stack(data_dir: Path, node_overrides: dict[str, Any] | None = None) -> Standalone:
    """A started HA stack in ``data_dir``; the caller stops it."""
    stack = Standalone(
        nodes=HA_SIZE,
        data_dir=data_dir,
        nats_port=free_port_block(HA_SIZE),
        zk_port=free_port_block(HA_SIZE),
        api_port=free_port_block(HA_SIZE),
        liftbridge_port=free_port_block(HA_SIZE),
        node_overrides=node_overrides,
        ha=True,
    )
    return stack.start()


@pytest.fixture
def ha_stack(temp_dir: Path) -> Iterator[Standalone]:
    """A running HA stack for one test."""
    stack = start_ha_stack(temp_dir / "ha")
    try:
        yield stack
    finally:
        stack.stop()
