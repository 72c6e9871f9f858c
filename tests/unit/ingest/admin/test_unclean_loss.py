"""The unclean-election dry run's loss: exact only when every possible holder answered."""

from __future__ import annotations

import asyncio
from typing import cast

from coordinator.znodes import NO_LEADER, PartitionState
from ingest.admin.unclean_loss import AT_LEAST, EXACT, assess_loss, divergence_point, last_holders
from ingest.replication.follower_path import FollowerPath
from ingest.replication.partition_state import Partition
from spark_log.api_models import EpochEntryView, LeaderReportView, RecoveryLossView, ReplicaView
from spark_log.log import PartitionLog


def state(leader: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2)) -> PartitionState:
    return PartitionState(leader, 7, isr, replicas, controller_epoch=3)


def epochs(*entries: tuple[int, int]) -> tuple[EpochEntryView, ...]:
    return tuple(EpochEntryView(epoch, start) for epoch, start in entries)


def view(broker: int, leo: int, hw: int, **extra) -> ReplicaView:
    extra.setdefault("epoch_entries", epochs((7, 0)))  # one leader epoch wrote everything
    return ReplicaView(
        partition=0,
        broker=broker,
        role="offline",
        leader_epoch=7,
        high_watermark=hw,
        log_end_offset=leo,
        log_start_offset=0,
        **extra,
    )


def test_a_dead_leader_alone_in_the_isr_makes_the_loss_unknowable_not_zero():
    # broker 1 acknowledged alone past offset 1; broker 2 (1 record) is all that answers
    loss = assess_loss(state(NO_LEADER, (1,)), {2: view(2, leo=1, hw=1)}, candidate=2)
    assert loss.loss_bound == AT_LEAST and not loss.loss_known
    assert loss.offsets_known_lost == 0  # a lower bound, said to be one
    assert loss.unreachable_isr == (1,)
    assert "Broker 1 is unreachable and was the only ISR member" in loss.explanation
    assert "the total cannot be known" in loss.explanation


def test_the_hw_a_dead_leader_last_reported_raises_the_lower_bound():
    report = LeaderReportView(leader=1, leader_epoch=6, high_watermark=40, age_ms=2500)
    views = {2: view(2, leo=25, hw=25, epoch_entries=epochs((6, 0)), last_leader_report=report)}
    loss = assess_loss(state(NO_LEADER, (1,)), views, candidate=2)
    assert loss.offsets_known_lost == 15
    assert loss.loss_bound == AT_LEAST
    assert "broker 1 (leader epoch 6) last reported to broker 2, 2.5s ago" in loss.explanation


def test_a_reachable_old_isr_gives_the_exact_figure():
    views = {1: view(1, leo=30, hw=30), 2: view(2, leo=12, hw=12)}
    loss = assess_loss(state(1, (1,)), views, candidate=2)
    assert loss.loss_bound == EXACT and loss.loss_known
    assert loss.offsets_known_lost == 18
    assert "exactly 18 offsets are lost" in loss.explanation


def test_an_unreachable_member_of_a_larger_isr_is_named():
    views = {3: view(3, leo=5, hw=5)}
    loss = assess_loss(state(NO_LEADER, (1, 2), (1, 2, 3)), views, candidate=3)
    assert loss.unreachable_isr == (1, 2)
    assert "Brokers 1, 2 of the last ISR [1, 2] are unreachable" in loss.explanation


def test_a_replica_damaged_at_recovery_leaves_only_a_bound():
    damaged = view(1, leo=20, hw=20, recovery_loss=RecoveryLossView(20, 35))
    loss = assess_loss(state(NO_LEADER, ()), {1: damaged, 2: view(2, leo=10, hw=10)}, 2)
    assert loss.offsets_known_lost == 25  # up to what broker 1 had made durable
    assert loss.loss_bound == AT_LEAST
    assert "Broker 1 lost offsets 20..35 at recovery" in loss.explanation


def test_an_emptied_isr_counts_every_replica_as_a_possible_holder():
    assert last_holders(state(NO_LEADER, (), (1, 2, 3))) == (1, 2, 3)
    assert last_holders(state(2, (1,), (1, 2, 3))) == (1, 2)


def test_a_candidate_holding_an_older_epochs_tail_loses_from_the_divergence_point():
    # broker 2 led epoch 5 and wrote 10..12; broker 1 then led epoch 6 and wrote 10..30
    candidate = view(2, leo=12, hw=10, epoch_entries=epochs((3, 0), (5, 10)))
    holder = view(1, leo=30, hw=30, epoch_entries=epochs((3, 0), (6, 10)))
    loss = assess_loss(state(1, (1,)), {1: holder, 2: candidate}, candidate=2)
    assert loss.offsets_known_lost == 20  # broker 1 truncates to 10, not to 12
    assert loss.loss_bound == AT_LEAST and not loss.loss_known
    assert "Broker 2's log diverges from broker 1's at offset 10" in loss.explanation
    assert "leader epoch 5 wrote it on broker 2, epoch 6 on broker 1" in loss.explanation
    assert "reuse offsets" in loss.explanation


def test_divergence_point_is_the_first_offset_written_in_different_epochs():
    older = view(2, leo=12, hw=10, epoch_entries=epochs((3, 0), (5, 10)))
    newer = view(1, leo=30, hw=30, epoch_entries=epochs((3, 0), (6, 10)))
    prefix = view(3, leo=8, hw=8, epoch_entries=epochs((3, 0)))
    longer = view(4, leo=40, hw=40, epoch_entries=epochs((3, 0), (6, 10), (8, 35)))
    assert divergence_point(older, newer) == 10
    assert divergence_point(prefix, newer) == 8  # a prefix: the end of the shorter log
    assert divergence_point(newer, longer) == 30
    assert divergence_point(older, view(5, leo=12, hw=0, epoch_entries=None)) is None


def test_a_candidate_whose_log_is_a_prefix_of_the_holders_is_exact():
    candidate = view(2, leo=12, hw=12, epoch_entries=epochs((3, 0), (6, 10)))
    holder = view(1, leo=30, hw=30, epoch_entries=epochs((3, 0), (6, 10), (7, 20)))
    loss = assess_loss(state(1, (1,)), {1: holder, 2: candidate}, candidate=2)
    assert (loss.offsets_known_lost, loss.loss_bound) == (18, EXACT)


def test_a_stale_report_above_every_holder_is_ignored_not_called_exact():
    # broker 2 had a report from epoch 5 (HW 40), then wrote records in epoch 7 (after an
    # unclean election lost the old 25..40): the report counts records already lost
    stale = LeaderReportView(leader=3, leader_epoch=5, high_watermark=40, age_ms=100)
    candidate = view(
        2, leo=25, hw=25, epoch_entries=epochs((5, 0), (7, 20)), last_leader_report=stale
    )
    holder = view(1, leo=30, hw=30, epoch_entries=epochs((5, 0), (7, 20)))
    loss = assess_loss(state(1, (1,)), {1: holder, 2: candidate}, candidate=2)
    assert (loss.offsets_known_lost, loss.loss_bound) == (5, EXACT)
    assert "last reported" not in loss.explanation


def test_any_figure_above_the_holders_log_end_leaves_only_a_bound():
    # a figure beyond every holder's LEO (here a damaged third replica's) is not exact
    damaged = view(3, leo=10, hw=10, recovery_loss=RecoveryLossView(10, 50))
    views = {1: view(1, leo=30, hw=30), 2: view(2, leo=12, hw=12), 3: damaged}
    loss = assess_loss(state(1, (1,), (1, 2, 3)), views, candidate=2)
    assert loss.offsets_known_lost == 38
    assert loss.loss_bound == AT_LEAST


def test_a_replica_that_does_not_report_its_epochs_leaves_only_a_bound():
    views = {1: view(1, leo=30, hw=30, epoch_entries=None), 2: view(2, leo=12, hw=12)}
    loss = assess_loss(state(1, (1,)), views, candidate=2)
    assert (loss.offsets_known_lost, loss.loss_bound) == (18, AT_LEAST)
    assert "Broker 1 did not say which leader epochs wrote its log" in loss.explanation


class _Log:
    """Just what the follower path touches to follow a HW and truncate."""

    def __init__(self, leo: int) -> None:
        self.log_end_offset = leo
        self.high_watermark = 0

    def set_high_watermark(self, hw: int) -> None:
        self.high_watermark = hw

    def truncate_to(self, offset: int) -> None:
        self.log_end_offset = min(self.log_end_offset, offset)


class _Hooks:
    def on_truncated(self, offset: int) -> None: ...

    def on_log_changed(self) -> None: ...

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None: ...


def _no_reads() -> None:
    """No read waits on this follower's HW."""


def _follower(leader: int = 1, epoch: int = 6) -> tuple[FollowerPath, Partition]:
    partition = Partition(
        broker_id=2,
        stream="s",
        partition=0,
        min_isr=1,
        leader_epoch=epoch,
        isr=[1, 2],
        leader_id=leader,
    )
    log_ = _Log(25)
    fake_log = cast(PartitionLog, log_)  # only what the follower path touches
    path = FollowerPath(partition, lambda: fake_log, asyncio.Lock(), False, _Hooks(), _no_reads)
    return path, partition


def _enter(partition: Partition, leader: int, epoch: int) -> None:
    partition.enter(PartitionState(leader, epoch, (1,), (1, 2, 3), controller_epoch=3))


def test_the_report_survives_its_leaders_death_but_not_a_later_leader():
    path, partition = _follower()
    path.follow_high_watermark(40)
    _enter(partition, NO_LEADER, 7)  # broker 1 died: offline at epoch + 1, the report stays
    assert path.last_leader_report is not None
    assert path.last_leader_report.high_watermark == 40
    _enter(partition, 3, 8)  # an unclean election elsewhere: the report counts lost records
    assert path.last_leader_report is None
    _enter(partition, NO_LEADER, 9)  # and it never comes back
    assert path.last_leader_report is None


def test_a_truncation_clears_the_report():
    path, _partition = _follower()
    path.follow_high_watermark(40)
    asyncio.run(path.truncate_to(10))
    assert path.last_leader_report is None


def test_the_report_is_hidden_once_this_replica_leads():
    path, partition = _follower()
    path.follow_high_watermark(40)
    _enter(partition, 2, 7)
    assert path.last_leader_report is None


def test_a_diverging_replica_outside_the_isr_that_claims_nothing_keeps_the_figure_exact():
    # broker 3 (not a holder) wrote 10..12 in an old epoch; its HW (10) claims no loss
    old_tail = view(3, leo=12, hw=10, epoch_entries=epochs((3, 0), (5, 10)))
    holder = view(1, leo=30, hw=30, epoch_entries=epochs((3, 0), (6, 10)))
    candidate = view(2, leo=20, hw=20, epoch_entries=epochs((3, 0), (6, 10)))
    views = {1: holder, 2: candidate, 3: old_tail}
    loss = assess_loss(state(1, (1,), (1, 2, 3)), views, candidate=2)
    assert (loss.offsets_known_lost, loss.loss_bound) == (10, EXACT)
    assert "diverges" not in loss.explanation
