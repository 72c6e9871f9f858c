"""A leader whose ISR shrink cannot be written because ZooKeeper is unavailable keeps its ISR
and keeps serving (Kafka's rule): the lagging follower still holds the HW, so acks=all waits
instead of being acknowledged on fewer replicas; the shrink is tried again a second later.
A write that lost its conditional check still fences (the state moved under the leader).
"""

from __future__ import annotations

from pathlib import Path

from coordinator.errors import VersionConflictError, ZkNotSentError, ZkUnavailableError
from coordinator.znodes import PartitionState
from ingest.metrics import NodeMetrics
from ingest.replica.replica import ISR_RETRY_MS, PartitionReplica, _may_postpone
from ingest.replication.partition_state import ROLE_LEADER
from spark_log.config import NodeConfig
from spark_log.errors import LiftlogError
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock, RecordingIntake

LAG_MS = 1000


class RefusingIsrWriter:
    """An ISR writer that fails every write with ``error`` and counts the attempts."""

    def __init__(self, error: LiftlogError) -> None:
        self.error = error
        self.attempts = 0

    async def __call__(
        self, expected: PartitionState, version: int, new_isr: list[int]
    ) -> tuple[PartitionState, int]:
        self.attempts += 1
        raise self.error


def _leader_with_lagging_follower(tmp_path: Path, clock: ManualClock) -> PartitionReplica:
    """Broker 1 leads [1, 2]; broker 2 has not fetched for longer than the lag limit."""
    replica = PartitionReplica(
        spec=StreamSpec(name="orders", subject="orders.in", replication_factor=2),
        partition=0,
        directory=tmp_path / "orders" / "0",
        config=NodeConfig(
            broker_id=1, data_dir=str(tmp_path), replica_lag_time_max_s=LAG_MS / 1000
        ),
        metrics=NodeMetrics(),
        intake=RecordingIntake(),
        leader_epoch=0,
        isr=[1, 2],
        created_at_ms=clock.now_ms(),
        clock=clock,
    )
    state = replica.state
    state.replicas = (1, 2)
    state.role = ROLE_LEADER
    state.start_leadership(clock.now_ms())
    clock.wall_ms += 2 * LAG_MS
    return replica


async def test_zookeeper_unavailable_postpones_the_shrink_without_fencing(tmp_path, clock):
    replica = _leader_with_lagging_follower(tmp_path, clock)
    writer = RefusingIsrWriter(ZkUnavailableError("no quorum"))
    replica.isr_writer = writer
    await replica.open()
    try:
        await replica.maintain_isr()
        assert writer.attempts == 1
        assert replica.state.is_leader and replica.state.fenced_reason is None
        assert replica.state.isr == [1, 2], "the follower stays in the ISR and holds the HW"

        await replica.maintain_isr()  # within the retry delay: not tried again
        assert writer.attempts == 1
        clock.wall_ms += ISR_RETRY_MS
        await replica.maintain_isr()
        assert writer.attempts == 2
        assert replica.state.is_leader
    finally:
        await replica.close()


async def test_a_lost_conditional_isr_write_still_fences(tmp_path, clock):
    replica = _leader_with_lagging_follower(tmp_path, clock)
    replica.isr_writer = RefusingIsrWriter(VersionConflictError("the state moved"))
    await replica.open()
    try:
        await replica.maintain_isr()
        assert not replica.state.is_leader
        assert replica.state.fenced_reason is not None
        assert "ISR write failed" in replica.state.fenced_reason
    finally:
        await replica.close()


def test_which_failed_isr_writes_the_leader_may_keep_leading_through():
    """Never sent: always. Outcome unknown: a shrink only (ZooKeeper may already name an added
    member the leader's HW ignored). A lost conditional check: never."""
    unknown, not_sent = ZkUnavailableError("no answer"), ZkNotSentError("not connected")
    assert _may_postpone(not_sent, [1, 2], [1])
    assert _may_postpone(not_sent, [1], [1, 2])
    assert _may_postpone(unknown, [1, 2], [1])
    assert not _may_postpone(unknown, [1], [1, 2])
    assert not _may_postpone(VersionConflictError("moved"), [1, 2], [1])
