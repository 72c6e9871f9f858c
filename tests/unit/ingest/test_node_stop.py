"""The node's reconcile loop ends at stop even when a reconcile swallows its cancellation.

A reconcile in the middle of a role change awaits a fetcher's task with CancelledError
suppressed (``ReplicaFetcher.stop``); cancelling the loop then only ends that wait, and a loop
that relied on the cancellation alone would wait for the next ZooKeeper event forever (the
node outlived its stop timeout and was SIGKILLed).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from ingest.node import IngestNode
from spark_log.config import NodeConfig

STOP_BOUND_S = 5.0


class SwallowingReplicas:
    """Stands in for the ReplicaManager: each reconcile waits on an inner task the way a
    stopping fetcher does, suppressing CancelledError, and counts how often it ran."""

    def __init__(self) -> None:
        self.reconciles = 0
        self.started = asyncio.Event()

    async def reconcile(self) -> None:
        self.reconciles += 1
        self.started.set()
        inner = asyncio.ensure_future(asyncio.Event().wait())  # a fetch waiting on a leader
        with contextlib.suppress(asyncio.CancelledError):
            await inner


async def test_stop_ends_the_reconcile_loop_even_if_a_reconcile_swallows_the_cancel(
    tmp_path: Path,
):
    node = IngestNode(NodeConfig(broker_id=1, data_dir=str(tmp_path)))
    replicas = SwallowingReplicas()
    node.replicas = replicas  # type: ignore[assignment]
    node._reconciler = asyncio.create_task(node._reconcile_loop())
    node._reconcile_wanted.set()
    await asyncio.wait_for(replicas.started.wait(), STOP_BOUND_S)

    stopping = asyncio.create_task(node._stop_reconciler())
    done, _pending = await asyncio.wait({stopping}, timeout=STOP_BOUND_S)

    assert done, "the reconcile loop outlived the stop"
    assert replicas.reconciles == 1  # no reconcile (no new role) after the stop began
