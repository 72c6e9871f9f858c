"""A stopped controller writes nothing more: ``stop`` waits for ZooKeeper calls in flight.

A cancelled task leaves its worker thread running; a reassignment pass begun just before
``stop`` once finished a move after the controller had stopped (and after a cancel was
marked), so the next controller found nothing to cancel.
"""

from __future__ import annotations

import asyncio
import threading
from typing import cast

from coordinator.controller import Controller
from coordinator.zk import ZkSession


class _Session:
    """Only what ``stop`` touches on a controller that never started."""

    def remove_state_listener(self, _listener: object) -> None:
        return None


def test_stop_returns_only_after_the_zookeeper_call_in_flight_ends() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def blocking_write() -> str:
        started.set()
        release.wait(timeout=10)
        finished.append("written")
        return "written"

    async def scenario() -> None:
        controller = Controller(cast(ZkSession, _Session()), broker_id=1)
        caller = asyncio.ensure_future(controller._in_thread(blocking_write))
        assert await asyncio.to_thread(started.wait, 10)  # the call is in its thread
        caller.cancel()
        stopping = asyncio.ensure_future(controller.stop())
        await asyncio.wait({stopping}, timeout=0.2)
        assert not stopping.done() and not finished
        release.set()
        await asyncio.wait_for(stopping, timeout=10)
        assert finished == ["written"]

    asyncio.run(scenario())
