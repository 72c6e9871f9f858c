"""Reassignment plans generated for an operator: decommissioning a broker.

Pure (unit-tested without ZooKeeper): from every partition's assignment and the brokers that
may take replicas, the target assignment of each partition that has a replica on the broker
being retired (Kafka's ``kafka-reassign-partitions.sh --generate`` for one broker).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from coordinator.errors import InvalidReplicationFactorError
from coordinator.znodes import PartitionState

# {stream: {partition: target replicas}}
Plan = dict[str, dict[int, list[int]]]


def decommission_plan(
    states: Mapping[str, Mapping[int, PartitionState]],
    broker_id: int,
    brokers: Iterable[int],
) -> Plan:
    """Move every replica off ``broker_id`` onto the other ``brokers``.

    Each moved replica keeps its position in the assignment (a partition the broker was
    preferred leader of gets its replacement as preferred leader) and goes to the eligible
    broker holding the fewest replicas so far, lowest id first on a tie, so the retired
    broker's load spreads evenly. InvalidReplicationFactorError when some partition has no
    broker left to take its replica.
    """
    others = sorted(set(brokers) - {broker_id})
    load = Counter({b: 0 for b in others})
    for partitions in states.values():
        load.update(r for state in partitions.values() for r in state.replicas if r in load)
    plan: Plan = {}
    for stream in sorted(states):
        for p, state in sorted(states[stream].items()):
            if broker_id in state.replicas:
                target = _replace(state.replicas, broker_id, others, load, f"{stream}/{p}")
                plan.setdefault(stream, {})[p] = target
    return plan


def _replace(
    replicas: Sequence[int], broker_id: int, others: list[int], load: Counter[int], name: str
) -> list[int]:
    candidates = [b for b in others if b not in replicas]
    if not candidates:
        raise InvalidReplicationFactorError(
            f"{name} has replicas {list(replicas)}: no other broker can take broker "
            f"{broker_id}'s replica (add a broker first)"
        )
    chosen = min(candidates, key=lambda b: (load[b], b))
    load[chosen] += 1
    return [chosen if r == broker_id else r for r in replicas]
