"""A ZooKeeper session whose server is gone: calls fail typed and bounded, never hang.

kazoo queues a request made while it reconnects and waits for it without limit; ZkSession
waits for the connection for at most the session timeout and never queues, so a REST call that
needs ZooKeeper answers 503 during an outage, and a refused write is not applied later. The
server here is the test's own (it is killed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from coordinator.errors import ZkUnavailableError
from coordinator.zk import ZkSession
from liftlog.embedded.ports import free_port
from liftlog.embedded.zookeeper import ZooKeeperServer
from tests.support.waiting import wait_for

SESSION_TIMEOUT_S = 4.0
# every call gives up after waiting the session timeout for a connection (plus slack)
REFUSED_WITHIN_S = SESSION_TIMEOUT_S + 2.0


@pytest.fixture
def own_zookeeper(temp_dir: Path) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(free_port(), temp_dir / "zk")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _timed_refusal(call: Callable[..., object], *args: object) -> float:
    """Seconds until ``call(*args)`` raised ZkUnavailableError."""
    started = time.monotonic()
    with pytest.raises(ZkUnavailableError):
        call(*args)
    return time.monotonic() - started


def test_calls_without_a_server_fail_typed_and_bounded_then_work_again(own_zookeeper):
    with ZkSession(own_zookeeper.connect_string, "/t", SESSION_TIMEOUT_S) as session:
        session.create_json("/before", {"v": 1})
        states: list[str] = []
        session.add_state_listener(states.append)
        own_zookeeper.kill()
        wait_for(lambda: "suspended" in states, 10, message="the session suspended")

        assert _timed_refusal(session.create_json, "/during", {"v": 2}) < REFUSED_WITHIN_S
        assert _timed_refusal(session.get_json, "/before") < REFUSED_WITHIN_S

        own_zookeeper.start()
        wait_for(lambda: session.connected, 30, message="the session reconnected")
        session.create_json("/after", {"v": 4})
        assert session.get_json("/before") == ({"v": 1}, 0)
        assert not session.exists("/during"), "a refused write must not be applied later"
