"""Leader selection: Kafka's controller rules as pure functions (no ZooKeeper needed)."""

from __future__ import annotations

import pytest

from coordinator.errors import ElectionNotNeededError, IneligibleReplicaError
from coordinator.leader_selection import (
    elect_for_controlled_shutdown,
    elect_offline,
    elect_on_broker_failure,
    elect_unclean,
    lead_again_after_restart,
    leave_isr_after_data_loss,
)
from coordinator.znodes import NO_LEADER, PartitionState
from spark_log.errors import InvalidRequestError


def state(
    leader: int,
    isr: tuple[int, ...],
    replicas: tuple[int, ...] = (1, 2, 3),
    leader_epoch: int = 4,
    controller_epoch: int = 7,
) -> PartitionState:
    return PartitionState(
        leader=leader,
        leader_epoch=leader_epoch,
        isr=isr,
        replicas=replicas,
        controller_epoch=controller_epoch,
    )


# -- broker failure ---------------------------------------------------------------------------


def test_all_live_is_no_change():
    assert elect_on_broker_failure(state(1, (1, 2, 3)), {1, 2, 3}) is None


def test_dead_leader_is_replaced_by_the_first_live_isr_member_in_replica_order():
    before = state(1, (3, 2, 1))  # ISR order does not matter, replica order does

    after = elect_on_broker_failure(before, {2, 3})

    assert after == state(2, (3, 2), leader_epoch=5)


def test_dead_leader_and_dead_follower_both_leave_the_isr():
    after = elect_on_broker_failure(state(1, (1, 2, 3)), {3})
    assert after == state(3, (3,), leader_epoch=5)


def test_a_live_replica_outside_the_isr_is_never_elected():
    before = state(1, (1, 3))  # 2 is a live replica but out of sync

    after = elect_on_broker_failure(before, {2, 3})

    assert after is not None
    assert after.leader == 3
    assert after.isr == (3,)


def test_no_live_isr_member_makes_the_partition_offline_and_keeps_the_isr():
    before = state(1, (1, 3))

    after = elect_on_broker_failure(before, {2})  # 2 is live but not in sync

    assert after == state(NO_LEADER, (1, 3), leader_epoch=5)
    assert after.offline


def test_follower_death_shrinks_the_isr_and_keeps_the_leader_epoch():
    after = elect_on_broker_failure(state(1, (1, 2, 3)), {1, 3})
    assert after == state(1, (1, 3), leader_epoch=4)


def test_dead_follower_outside_the_isr_changes_nothing():
    assert elect_on_broker_failure(state(1, (1, 3)), {1, 3}) is None


def test_controller_epoch_is_left_for_the_caller_to_stamp():
    after = elect_on_broker_failure(state(1, (1, 2), controller_epoch=7), {2})
    assert after is not None
    assert after.controller_epoch == 7


def test_an_offline_partition_is_not_bumped_again_by_later_broker_changes():
    offline = state(NO_LEADER, (1,), leader_epoch=5)
    assert elect_on_broker_failure(offline, {2, 3}) is None
    assert elect_on_broker_failure(offline, set()) is None


def test_an_offline_partition_comes_back_through_the_broker_failure_rule_too():
    offline = state(NO_LEADER, (1, 3), leader_epoch=5)
    assert elect_on_broker_failure(offline, {3}) == state(3, (3,), leader_epoch=6)


# -- offline partitions -----------------------------------------------------------------------


def test_returning_isr_member_leads_an_offline_partition():
    offline = state(NO_LEADER, (1, 3), leader_epoch=5)

    after = elect_offline(offline, {2, 3})

    assert after == state(3, (3,), leader_epoch=6)


def test_returning_isr_members_elect_in_replica_order():
    offline = state(NO_LEADER, (3, 1), leader_epoch=5)
    assert elect_offline(offline, {1, 3}) == state(1, (3, 1), leader_epoch=6)


def test_offline_partition_stays_offline_when_only_non_isr_replicas_return():
    assert elect_offline(state(NO_LEADER, (1,), leader_epoch=5), {2, 3}) is None


def test_elect_offline_leaves_online_partitions_alone():
    assert elect_offline(state(1, (1, 2)), {2, 3}) is None


# -- controlled shutdown ----------------------------------------------------------------------


def test_controlled_shutdown_moves_leadership_to_another_live_isr_member():
    after = elect_for_controlled_shutdown(state(1, (1, 2, 3)), 1, {1, 2, 3})
    assert after == state(2, (2, 3), leader_epoch=5)


def test_controlled_shutdown_skips_dead_isr_members():
    after = elect_for_controlled_shutdown(state(1, (1, 2, 3)), 1, {1, 3})
    assert after is not None
    assert after.leader == 3
    assert 1 not in after.isr


def test_controlled_shutdown_without_another_live_isr_member_changes_nothing():
    assert elect_for_controlled_shutdown(state(1, (1,)), 1, {1, 2, 3}) is None
    assert elect_for_controlled_shutdown(state(1, (1, 2)), 1, {1, 3}) is None


def test_controlled_shutdown_of_an_isr_follower_removes_it_from_the_isr():
    after = elect_for_controlled_shutdown(state(1, (1, 2, 3)), 3, {1, 2, 3})
    assert after == state(1, (1, 2), leader_epoch=4)


def test_controlled_shutdown_of_a_non_isr_replica_or_stranger_changes_nothing():
    assert elect_for_controlled_shutdown(state(1, (1, 2)), 3, {1, 2, 3}) is None
    assert elect_for_controlled_shutdown(state(1, (1, 2)), 9, {1, 2, 9}) is None


def test_controlled_shutdown_never_trims_an_offline_partitions_isr():
    offline = state(NO_LEADER, (2,), leader_epoch=5)
    assert elect_for_controlled_shutdown(offline, 2, {2}) is None


def test_controlled_shutdown_never_hands_leadership_to_a_broker_shutting_down_too():
    after = elect_for_controlled_shutdown(state(1, (1, 2, 3)), 1, {1, 2, 3}, shutting_down={2})
    assert after == state(3, (2, 3), leader_epoch=5)


def test_controlled_shutdown_keeps_leadership_when_every_other_isr_member_stops_too():
    before = state(1, (1, 2, 3))
    assert elect_for_controlled_shutdown(before, 1, {1, 2, 3}, shutting_down={2, 3}) is None
    assert elect_for_controlled_shutdown(before, 1, {1, 2, 3}, shutting_down={1, 2, 3}) is None


def test_a_broker_shutting_down_is_never_elected_on_a_leader_failure():
    after = elect_on_broker_failure(state(1, (1, 2, 3)), {2, 3}, shutting_down={2})
    assert after == state(3, (2, 3), leader_epoch=5)  # still in the ISR: it still replicates


def test_a_leader_failure_with_only_stopping_isr_members_left_goes_offline():
    after = elect_on_broker_failure(state(1, (1, 2)), {2, 3}, shutting_down={2})
    assert after == state(NO_LEADER, (1, 2), leader_epoch=5)
    assert elect_offline(after, {2, 3}, shutting_down={2}) is None
    assert elect_offline(after, {2, 3}) == state(2, (2,), leader_epoch=6)


# -- a replica that lost durable data at recovery ---------------------------------------------


def test_a_follower_that_lost_data_leaves_the_isr_with_a_new_epoch():
    after = leave_isr_after_data_loss(state(1, (1, 2, 3)), 3)
    assert after == state(1, (1, 2), leader_epoch=5)  # the leader forgets follower LEOs


def test_a_leader_that_lost_data_leaves_leadership_and_the_isr():
    after = leave_isr_after_data_loss(state(3, (1, 2, 3)), 3)
    assert after == state(NO_LEADER, (1, 2), leader_epoch=5)
    assert elect_offline(after, {1, 2, 3}) == state(1, (1, 2), leader_epoch=6)


def test_the_last_isr_member_that_lost_data_leaves_nothing_electable():
    after = leave_isr_after_data_loss(state(NO_LEADER, (3,)), 3)
    assert after == state(NO_LEADER, (), leader_epoch=5)
    assert after.offline
    assert elect_offline(after, {1, 2, 3}) is None
    assert elect_unclean(after, {1, 2, 3}, 3).leader == 3  # only an operator can choose it


def test_a_replica_already_outside_the_isr_or_the_only_one_changes_nothing():
    assert leave_isr_after_data_loss(state(1, (1, 2)), 3) is None
    assert leave_isr_after_data_loss(state(1, (1,), replicas=(1,)), 1) is None


# -- unclean election -------------------------------------------------------------------------


def test_unclean_election_picks_the_first_live_replica_when_none_is_named():
    offline = state(NO_LEADER, (1,), leader_epoch=5)

    after = elect_unclean(offline, {2, 3})

    assert after == state(2, (2,), leader_epoch=6)


def test_unclean_election_picks_the_named_live_replica():
    offline = state(NO_LEADER, (1,), leader_epoch=5)
    assert elect_unclean(offline, {2, 3}, broker_id=3) == state(3, (3,), leader_epoch=6)


def test_unclean_election_of_a_dead_leader_not_yet_handled():
    # The leader died and the controller has not reacted yet; nobody else is in sync.
    after = elect_unclean(state(1, (1,)), {2, 3}, broker_id=2)
    assert after == state(2, (2,), leader_epoch=5)


@pytest.mark.parametrize(
    ("broker_id", "live", "message"),
    [
        (2, {3}, "broker 2 is not live"),
        (9, {2, 3, 9}, "broker 9 is not a replica"),
        (None, {9}, "no replica"),
    ],
)
def test_unclean_election_refuses_ineligible_brokers(broker_id, live, message):
    offline = state(NO_LEADER, (1,), leader_epoch=5)
    with pytest.raises(IneligibleReplicaError, match=message) as raised:
        elect_unclean(offline, live, broker_id=broker_id)
    assert isinstance(raised.value, InvalidRequestError)
    assert raised.value.code == "ineligible_replica"


def test_unclean_election_is_refused_while_a_clean_choice_exists():
    with pytest.raises(ElectionNotNeededError, match="leads the partition"):
        elect_unclean(state(1, (1, 2)), {1, 2, 3}, broker_id=3)
    with pytest.raises(ElectionNotNeededError, match="in-sync replica 2 is live"):
        elect_unclean(state(NO_LEADER, (1, 2), leader_epoch=5), {2, 3}, broker_id=3)


def test_a_restarted_leader_leads_again_at_the_next_epoch():
    before = state(2, (1, 2, 3), leader_epoch=4)
    after = lead_again_after_restart(before, 2, led_epoch=4)
    assert after == state(2, (1, 2, 3), leader_epoch=5)  # same leader, ISR, controller epoch
    assert lead_again_after_restart(before, 1, led_epoch=4) is None  # not the leader
    assert lead_again_after_restart(before, 2, led_epoch=3) is None  # the epoch moved on
