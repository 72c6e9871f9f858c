"""Stream descriptions and broker registrations in Liftbridge's metadata messages."""

from __future__ import annotations

from coordinator.znodes import BrokerInfo as BrokerRegistration
from ingest.liftbridge.metadata_mapping import (
    BrokerLoad,
    brokers,
    host_and_port,
    last_offset,
    partition_metadata,
    stream_metadata,
)
from spark_log.api_models import PartitionState, StreamDescription
from spark_log.liftbridge import api_pb2 as pb
from spark_log.stream_spec import StreamSpec


def registration(broker_id: int, liftbridge_address: str) -> BrokerRegistration:
    return BrokerRegistration(broker_id, "h", "http://h:1", "nats://h:2", 0, liftbridge_address)


def test_offsets_name_the_last_record():
    assert (last_offset(None), last_offset(0), last_offset(10)) == (-1, -1, 9)


def test_addresses_split_into_host_and_port():
    assert host_and_port("10.0.0.1:9292") == ("10.0.0.1", 9292)
    assert host_and_port("[::1]:9292") == ("::1", 9292)
    assert host_and_port("") is None and host_and_port("h:") is None


def test_brokers_carry_their_load_and_skip_those_without_the_api():
    load = BrokerLoad()
    load.add([1, 2], leader=1)
    load.add([2, 3], leader=2)
    load.add([1, 3], leader=-1)
    listed = brokers([registration(2, "b:2"), registration(1, "a:1"), registration(3, "")], load)
    assert [(b.id, b.host, b.port, b.partitionCount, b.leaderCount) for b in listed] == [
        ("1", "a", 1, 2, 1),
        ("2", "b", 2, 2, 1),
    ]


def test_a_partition_without_leader_or_offsets():
    state = PartitionState(partition=1, leader=-1, leader_epoch=3, replicas=(1, 2), isr=(2,))
    meta = partition_metadata(state, paused=True, readonly=False)
    assert (meta.id, meta.leader, list(meta.replicas), list(meta.isr)) == (1, "", ["1", "2"], ["2"])
    assert (meta.highWatermark, meta.newestOffset, meta.paused) == (-1, -1, True)


def test_a_stream_shows_idle_paused_partitions_as_paused_and_its_creation_in_ns():
    spec = StreamSpec(name="s", subject="s.in", partitions=2)
    partitions = tuple(
        PartitionState(p, 1, 0, (1,), (1,), high_watermark=4, log_end_offset=5) for p in (0, 1)
    )
    described = StreamDescription(
        name="s",
        subject="s.in",
        spec=spec,
        partitions=partitions,
        read_only=True,
        idle_paused_partitions=(1,),
        created_at_ms=1_700_000_000_000,
    )
    meta = stream_metadata(described)
    assert (meta.name, meta.subject, meta.error) == ("s", "s.in", pb.StreamMetadata.OK)
    assert meta.creationTimestamp == 1_700_000_000_000_000_000
    assert [meta.partitions[p].paused for p in (0, 1)] == [False, True]
    assert meta.partitions[0].readonly and meta.partitions[0].leader == "1"
    assert (meta.partitions[0].highWatermark, meta.partitions[0].newestOffset) == (3, 4)
