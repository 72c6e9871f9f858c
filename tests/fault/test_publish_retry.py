"""The client's publish retries across a leadership move on a real 3-node cluster.

A partition moves from [a, b] to [b, c] (the leader leaves) while acks=all publishers run,
each record with a ``Nats-Msg-Id``: the client retries the ``no_responders`` and
``not_leader`` failures of the move within its delivery timeout, so no publish fails, and the
msg id makes every retry safe: each acknowledged record is in the log exactly once.
"""

from __future__ import annotations

import time

from spark_log.client import Client
from spark_log.errors import LiftlogError
from tests.fault.test_failover import ACKED_PER_ROUND, Load, _describe
from tests.fault.test_reassignment import (
    MOVE_TIMEOUT_S,
    _check_acked_on,
    _cluster,
    _moved,
    _reassign_cli,
)
from tests.support.waiting import wait_for


class MsgIdLoad(Load):
    """Load whose records carry their value as the msg id (a retry is then deduplicated)."""

    async def _run(self, worker: int) -> None:
        seq = 0
        while not self.stop.is_set():
            value = f"w{worker}-{seq}"
            seq += 1
            try:
                ack = await self.client.publish(self.stream, value, msg_id=value, timeout_s=2)
            except LiftlogError as exc:
                self.failures.append((time.monotonic(), exc.code))
                continue
            self.ack_times.append(time.monotonic())
            self._record(value, ack.offset)


async def test_a_leader_move_fails_no_publish(make_node, stream_name):
    nodes, by_id, _a, b, c = _cluster(make_node, stream_name)
    servers = ",".join(n.api_url for n in nodes)
    async with Client(servers, ack_timeout_s=2) as client:
        load = MsgIdLoad(client, stream_name)
        await load.wait_acked(ACKED_PER_ROUND, 60)
        _reassign_cli(by_id[c].api_url, stream_name, [b, c])
        wait_for(lambda: _moved(by_id[b], stream_name, [b, c]), MOVE_TIMEOUT_S, message="moved")
        assert _describe(by_id[b], stream_name)["leader"] == b
        await load.wait_acked(len(load.acked) + ACKED_PER_ROUND, 60)
        await load.finish()
    assert load.failures == []
    _check_acked_on([by_id[b], by_id[c]], stream_name, load.acked)
