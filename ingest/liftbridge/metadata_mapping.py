"""Liftlog's stream descriptions and broker registrations in Liftbridge's metadata messages.

Liftbridge's offsets name the last record (its high watermark is the last committed offset,
its newest offset the last written one, -1 for an empty log) where Liftlog's, as Kafka's, name
the first offset not yet committed or written: each is one less on the wire. Ids are strings
there (``str(broker_id)``), timestamps Unix nanoseconds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.znodes import NO_LEADER
from coordinator.znodes import BrokerInfo as BrokerRegistration
from spark_log.api_models import PartitionState, StreamDescription
from spark_log.liftbridge import api_pb2 as pb

NS_PER_MS = 1_000_000
EMPTY_OFFSET = -1
"""Liftbridge's offset of "no record": an empty log, or one whose leader did not answer."""


@dataclass
class BrokerLoad:
    """How many partitions each broker holds a replica of, and how many it leads."""

    partitions: Counter[int] = field(default_factory=Counter)
    leaders: Counter[int] = field(default_factory=Counter)

    def add(self, replicas: Iterable[int], leader: int) -> None:
        self.partitions.update(replicas)
        if leader != NO_LEADER:
            self.leaders[leader] += 1


def last_offset(next_offset: int | None) -> int:
    """Liftbridge's offset of the last record below ``next_offset`` (-1 when none or unknown)."""
    return EMPTY_OFFSET if next_offset is None else next_offset - 1


def broker_id_text(broker_id: int) -> str:
    """A broker id as Liftbridge names it; "" for no leader."""
    return "" if broker_id == NO_LEADER else str(broker_id)


def host_and_port(address: str) -> tuple[str, int] | None:
    """``host:port`` (an IPv6 host in brackets) split, or None when there is no valid port."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.removeprefix("[").removesuffix("]"), int(port)


def brokers(registrations: Iterable[BrokerRegistration], load: BrokerLoad) -> list[pb.Broker]:
    """Every live broker that serves the Liftbridge API, with its load."""
    out: list[pb.Broker] = []
    for info in sorted(registrations, key=lambda b: b.broker_id):
        address = host_and_port(info.liftbridge_address)
        if address is None:
            continue
        out.append(
            pb.Broker(
                id=str(info.broker_id),
                host=address[0],
                port=address[1],
                partitionCount=load.partitions[info.broker_id],
                leaderCount=load.leaders[info.broker_id],
            )
        )
    return out


def partition_metadata(
    state: PartitionState, *, paused: bool, readonly: bool
) -> pb.PartitionMetadata:
    return pb.PartitionMetadata(
        id=state.partition,
        leader=broker_id_text(state.leader),
        replicas=[str(r) for r in state.replicas],
        isr=[str(r) for r in state.isr],
        highWatermark=last_offset(state.high_watermark),
        newestOffset=last_offset(state.log_end_offset),
        paused=paused,
        readonly=readonly,
    )


def stream_metadata(described: StreamDescription) -> pb.StreamMetadata:
    """A stream's partitions as its leaders reported them; a partition is paused when the
    operator paused the stream or it waits for its next publish (``idle_paused_partitions``)."""
    idle = set(described.idle_paused_partitions)
    return pb.StreamMetadata(
        name=described.name,
        subject=described.subject,
        partitions={
            p.partition: partition_metadata(
                p, paused=described.paused or p.partition in idle, readonly=described.read_only
            )
            for p in described.partitions
        },
        creationTimestamp=described.created_at_ms * NS_PER_MS,
    )


def unknown_stream(name: str) -> pb.StreamMetadata:
    return pb.StreamMetadata(name=name, error=pb.StreamMetadata.UNKNOWN_STREAM)


def unknown_group(group: str) -> pb.ConsumerGroupMetadata:
    return pb.ConsumerGroupMetadata(groupId=group, error=pb.ConsumerGroupMetadata.UNKNOWN_GROUP)
