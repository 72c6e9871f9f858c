"""``PartitionReplica`` is a composition root: it satisfies each collaborator's narrow Protocol
and opens, refuses and closes without NATS (roles need NATS and are covered by integration
tests).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.errors import ReplicaStoppedError
from ingest.lake.exporter import ExportSource
from ingest.metrics import NodeMetrics
from ingest.produce.request import local_request
from ingest.produce.write_path import WriteHooks
from ingest.replica.maintenance import MaintainedReplica
from ingest.replica.replica import PartitionReplica
from ingest.replication.fetch_server import LeaderReplica
from ingest.replication.fetcher import FollowerReplica
from ingest.replication.follower_path import FollowerHooks
from ingest.replication.storage_stall_retry import StalledReplica
from spark_log.config import NodeConfig
from spark_log.errors import NotLeaderError
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock, RecordingIntake


def _replica(tmp_path: Path, clock: ManualClock) -> PartitionReplica:
    return PartitionReplica(
        spec=StreamSpec(name="orders", subject="orders.in"),
        partition=0,
        directory=tmp_path / "orders" / "0",
        config=NodeConfig(broker_id=1, data_dir=str(tmp_path)),
        metrics=NodeMetrics(),
        intake=RecordingIntake(),
        leader_epoch=-1,
        isr=[1],
        created_at_ms=clock.now_ms(),
        clock=clock,
    )


async def test_the_replica_satisfies_every_collaborators_protocol(tmp_path, clock):
    replica = _replica(tmp_path, clock)
    await replica.open()  # the protocols read ``log``, which exists only while open
    try:
        protocols = (LeaderReplica, ExportSource, WriteHooks, MaintainedReplica, StalledReplica)
        for protocol in protocols:
            assert isinstance(replica, protocol), protocol.__name__
        assert isinstance(replica.follower_path, FollowerReplica)
        assert isinstance(replica, FollowerHooks)
    finally:
        await replica.close()


async def test_without_a_role_it_refuses_produce_and_serves_an_empty_log(tmp_path, clock):
    replica = _replica(tmp_path, clock)
    await replica.open()
    try:
        state = replica.state
        assert (state.role, state.is_leader, state.paused) == ("none", False, False)
        with pytest.raises(NotLeaderError):
            await replica.produce([local_request("orders.in", "all", value=b"v")])
        result = await replica.fetch(0, 10, 1 << 20, 0)
        assert (result.records, result.high_watermark, result.log_start_offset) == ([], 0, 0)
        assert await replica.reads.offset_for_timestamp(clock.now_ms()) == 0
    finally:
        await replica.close()
    assert replica.open_log is None
    with pytest.raises(ReplicaStoppedError):
        _ = replica.log
