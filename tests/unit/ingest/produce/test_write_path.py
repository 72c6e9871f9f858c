"""The leader's write path without NATS: intake, writer cycles, ack encoding, paused streams.

The log is real (tmp_path); NATS is replaced by plain message objects and a list that collects
what would be published; time comes from a manual clock. The writer task runs on the test's
event loop, and tests poll for its acks with a deadline.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from ingest.metrics import NodeMetrics
from ingest.produce.nats_frames import InboundMessage
from ingest.produce.request import ProduceAck, ProduceRequest
from ingest.produce.write_path import LeaderWritePath
from ingest.replication.partition_state import Partition
from spark_log.config import IngestConfig, LogConfig
from spark_log.log import PartitionLog, records_from_batches
from spark_log.stream_spec import StreamSpec
from tests.unit.ingest.conftest import ManualClock, eventually

SPEC = StreamSpec(name="orders", subject="orders.in", ack_policy="all")


def Msg(  # noqa: N802 - reads as the message it builds
    subject: str, reply: str, data: bytes, headers: dict[str, str] | None = None
) -> InboundMessage:
    """A NATS message as the intake delivers it."""
    return InboundMessage(sid=1, subject=subject, reply=reply, data=data, headers=headers)


class Hooks:
    """The replica's side of the write path: the HW follows the LEO (as if every follower
    had fetched at once) unless |ISR| < min ISR, when it holds like a real leader's."""

    def __init__(self, log: PartitionLog, partition: Partition) -> None:
        self.log = log
        self.partition = partition
        self.path: LeaderWritePath | None = None
        self.appended: list[int] = []
        self.offline: str | None = None
        self.during_append: Callable[[], None] | None = None
        """Runs where followers are told of an append: before the writer routes its acks."""
        self.hold_hw = False
        """True: the followers have not fetched yet, so the HW stays where it is."""

    def advance_high_watermark(self) -> None:
        if self.hold_hw or not self.partition.isr_ok:
            return
        if self.log.log_end_offset > self.log.high_watermark:
            self.log.set_high_watermark(self.log.log_end_offset)
            if self.path is not None:
                self.path.release(self.log.high_watermark)

    def go_offline(self, reason: str, cause: BaseException | None = None) -> None:
        self.offline = reason

    def on_appended(self, batches: list[bytes]) -> None:
        self.appended.append(len(batches))
        if self.during_append is not None:
            self.during_append()

    def on_cycle_written(self, start: int, end: int, size_bytes: int) -> None:
        pass

    def on_flushed(self, now_ms: int) -> None:
        self.advance_high_watermark()

    async def run_maintenance(self) -> None:
        pass


async def _never_idle_paused() -> None:
    raise AssertionError("the rig's partition is never paused for idleness")


@dataclass
class Rig:
    path: LeaderWritePath
    partition: Partition
    log: PartitionLog
    sent: list[tuple[str, bytes]]
    metrics: NodeMetrics

    def acks(self, reply: str) -> list[dict]:
        return [json.loads(payload) for subject, payload in self.sent if subject == reply]


@pytest.fixture
async def rig(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Rig]:
    log = PartitionLog.open(tmp_path / "p0", LogConfig(fsync="never"), now_ms=clock.now_ms)
    partition = Partition(
        broker_id=1, stream="orders", partition=0, min_isr=1, leader_epoch=0, isr=[1]
    )
    partition.role = "leader"
    sent: list[tuple[str, bytes]] = []

    def publish(subject: str, payload: bytes) -> None:
        sent.append((subject, payload))

    hooks = Hooks(log, partition)
    metrics = NodeMetrics()
    path = LeaderWritePath(
        spec=SPEC,
        partition=partition,
        ingest=IngestConfig(),
        fsync_always=False,
        metrics=metrics,
        publish=publish,
        clock=clock,
        hooks=hooks,
        write_lock=asyncio.Lock(),
        resume_idle=_never_idle_paused,
    )
    hooks.path = path
    path.start("orders-0")
    yield Rig(path, partition, log, sent, metrics)
    await path.stop()
    log.close()


def _arrow(values: list[bytes]) -> bytes:
    table = pa.table({"value": pa.array(values, pa.binary())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _paused_ack() -> dict:
    return {
        "stream": "orders",
        "partition": 0,
        "error": {"code": "stream_paused", "message": "stream orders is paused"},
    }


async def test_a_paused_leader_answers_stream_paused_and_stores_nothing(rig: Rig):
    rig.partition.paused = True
    rig.path.on_messages([Msg("orders.in", "r1", b"one")])
    headers = {"Liftlog-Batch": "arrow"}
    rig.path.on_messages([Msg("orders.in", "r2", _arrow([b"a", b"b"]), headers)])
    await eventually(lambda: len(rig.sent) == 2, what="two error acks")
    assert rig.acks("r1") == [_paused_ack()]
    assert rig.acks("r2") == [_paused_ack()]
    assert rig.log.log_end_offset == 0


async def test_a_paused_leader_counts_what_it_cannot_answer(rig: Rig):
    rig.partition.paused = True
    rig.path.on_messages([Msg("orders.in", "", b"no reply")])
    rig.path.on_messages([Msg("orders.in", "", b"no reply either")])
    sample = rig.metrics.registry.get_sample_value(
        "liftlog_paused_drops_total", {"stream": "orders", "partition": "0"}
    )
    assert sample == 2.0
    assert rig.sent == [] and rig.log.log_end_offset == 0


async def test_a_message_naming_an_internal_reply_is_neither_stored_nor_answered(rig: Rig):
    rig.path.on_messages([Msg("orders.in", "_LIFTLOG.c1.fetch.orders.0.1", b"forged")])
    rig.path.on_messages([Msg("orders.in", "$JS.API.STREAM.DELETE.x", b"forged")])
    rig.path.on_messages([Msg("orders.in", "r1", b"genuine")])
    await eventually(lambda: rig.acks("r1"), what="the genuine ack")
    assert rig.acks("r1") == [{"stream": "orders", "partition": 0, "offset": 0}]
    assert [subject for subject, _ in rig.sent] == ["r1"]
    sample = rig.metrics.registry.get_sample_value(
        "liftlog_internal_reply_drops_total", {"stream": "orders", "partition": "0"}
    )
    assert sample == 2.0
    assert rig.log.log_end_offset == 1


async def test_resumed_leader_records_again(rig: Rig):
    rig.partition.paused = True
    rig.path.on_messages([Msg("orders.in", "r1", b"refused")])
    rig.partition.paused = False
    rig.path.on_messages([Msg("orders.in", "r2", b"stored")])
    await eventually(lambda: rig.acks("r2"), what="the ack after resume")
    assert rig.acks("r2") == [{"stream": "orders", "partition": 0, "offset": 0}]
    assert rig.log.log_end_offset == 1


async def test_duplicate_single_record_ack_carries_the_flag(rig: Rig):
    msg_id = {"Nats-Msg-Id": "m1"}
    rig.path.on_messages([Msg("orders.in", "r1", b"a", msg_id)])
    await eventually(lambda: rig.acks("r1"), what="first ack")
    rig.path.on_messages([Msg("orders.in", "r2", b"a again", msg_id)])
    await eventually(lambda: rig.acks("r2"), what="duplicate ack")
    assert rig.acks("r1") == [{"stream": "orders", "partition": 0, "offset": 0}]
    assert rig.acks("r2") == [{"stream": "orders", "partition": 0, "offset": 0, "duplicate": True}]
    assert rig.log.log_end_offset == 1


async def test_duplicate_producer_batch_ack_carries_the_flag(rig: Rig):
    headers = {"Liftlog-Batch": "arrow", "Nats-Msg-Id": "b1"}
    rig.path.on_messages([Msg("orders.in", "r1", _arrow([b"x", b"y"]), headers)])
    rig.path.on_messages([Msg("orders.in", "r2", _arrow([b"x", b"y"]), headers)])
    await eventually(lambda: rig.acks("r1") and rig.acks("r2"), what="both acks")
    first = {"stream": "orders", "partition": 0, "offset": 0, "count": 2}
    assert rig.acks("r1") == [first]
    assert rig.acks("r2") == [{**first, "duplicate": True}]
    assert rig.log.log_end_offset == 2


async def test_local_produce_reports_duplicates_and_stamps_the_clock(rig: Rig, clock):
    def request(msg_id: str) -> ProduceRequest:
        return ProduceRequest("orders.in", None, "all", msg_id, None, value=b"v")

    assert await rig.path.produce([request("m1")]) == [ProduceAck(0, 1, False)]
    clock.advance(5)
    acks = await rig.path.produce([request("m1"), request("m2")])
    assert acks == [ProduceAck(0, 1, True), ProduceAck(1, 1, False)]
    assert (acks[0].offset, acks[0].count, acks[0].duplicate) == (0, 1, True)
    data = rig.log.read(0, 1 << 20)
    stamps = [r.timestamp for r in records_from_batches(data, 0, 2, 10)]
    assert stamps == [clock.now_ms() - 5, clock.now_ms()]


async def test_a_request_queued_on_a_deposed_leader_is_refused(rig: Rig):
    rig.partition.role = "follower"
    rig.path.on_messages([Msg("orders.in", "r1", b"late")])
    await eventually(lambda: rig.acks("r1"), what="the refusal")
    assert rig.acks("r1")[0]["error"]["code"] == "not_leader"
    assert rig.log.log_end_offset == 0


async def test_a_paused_leader_stays_silent_where_an_active_stream_records_the_subject(rig: Rig):
    """The active stream's ack must be the only reply the publisher sees: a refusal racing
    ahead of it would report a stored record as refused."""
    rig.partition.paused = True
    rig.path.recorded_elsewhere = {"orders.in"}.__contains__
    rig.path.on_messages([Msg("orders.in", "r1", b"v")])
    rig.path.recorded_elsewhere = None
    rig.path.on_messages([Msg("orders.in", "r2", b"v")])
    await eventually(lambda: len(rig.sent) == 1, what="one error ack")
    assert rig.acks("r1") == []
    assert rig.acks("r2") == [_paused_ack()]


def test_the_dedup_window_has_one_owner(rig: Rig):
    from ingest.produce.dedup import DedupWindow

    assert rig.path.dedup is rig.path._sequencer.dedup
    window = DedupWindow(60_000, 10)
    rig.path.replace_dedup(window)
    assert rig.path.dedup is window and rig.path._sequencer.dedup is window


def _short_isr(partition: Partition) -> None:
    """Two replicas required, one in sync: acks=all cannot be granted."""
    partition.min_isr = 2
    partition.apply_isr([1], partition.state_version)


async def test_a_short_isr_refuses_acks_all_before_the_append_and_keeps_the_rest(rig: Rig):
    _short_isr(rig.partition)
    # no await yields between these: both land in one writer cycle
    rig.path.on_messages([Msg("orders.in", "r1", b"refused")])
    rig.path.on_messages([Msg("orders.in", "r2", b"kept", {"Liftlog-Ack": "leader"})])
    await eventually(lambda: rig.acks("r1") and rig.acks("r2"), what="both acks")
    assert rig.acks("r1")[0]["error"]["code"] == "not_enough_replicas"
    assert rig.acks("r2") == [{"stream": "orders", "partition": 0, "offset": 0}]
    values = [r.value for r in records_from_batches(rig.log.read(0, 1 << 20), 0, 1, 10)]
    assert values == [b"kept"] and rig.log.log_end_offset == 1


async def test_a_short_isr_refuses_a_producer_batch_and_a_rest_publish(rig: Rig):
    from spark_log.errors import NotEnoughReplicasError

    _short_isr(rig.partition)
    batch = Msg("orders.in", "r1", _arrow([b"a", b"b"]), {"Liftlog-Batch": "arrow"})
    rig.path.on_messages([batch])
    await eventually(lambda: rig.acks("r1"), what="the batch's refusal")
    assert rig.acks("r1")[0]["error"]["code"] == "not_enough_replicas"
    with pytest.raises(NotEnoughReplicasError):
        await rig.path.produce([ProduceRequest("orders.in", None, "all", None, None, value=b"v")])
    assert rig.log.log_end_offset == 0


async def test_an_isr_shrinking_during_the_append_refuses_after_it(rig: Rig):
    """The check before the append passed; the ISR fell below min ISR while the cycle was
    being appended: the record is stored, uncommitted, and refused with its own code."""
    rig.partition.min_isr = 2
    rig.partition.apply_isr([1, 2], rig.partition.state_version)
    hooks = rig.path._hooks  # the rig's Hooks
    hooks.during_append = lambda: rig.partition.apply_isr([1], rig.partition.state_version)
    rig.path.on_messages([Msg("orders.in", "r1", b"raced")])
    await eventually(lambda: rig.acks("r1"), what="the refusal")
    assert rig.acks("r1")[0]["error"]["code"] == "not_enough_replicas_after_append"
    assert (rig.log.log_end_offset, rig.log.high_watermark) == (1, 0)
    rig.partition.apply_isr([1, 2], rig.partition.state_version)
    hooks.advance_high_watermark()
    assert rig.log.high_watermark == 1  # healed: the refused record is committed after all


async def test_a_parked_acks_all_keeps_waiting_when_the_isr_shrinks(rig: Rig):
    """As in Kafka, a shrink does not fail what is parked: it is acked once the ISR heals."""
    rig.partition.min_isr = 2
    rig.partition.apply_isr([1, 2], rig.partition.state_version)
    hooks = rig.path._hooks  # the rig's Hooks
    hooks.hold_hw = True  # the follower has not fetched the record yet
    rig.path.on_messages([Msg("orders.in", "r1", b"parked")])
    await eventually(lambda: len(rig.path._acks.purgatory) == 1, what="the request parked")
    rig.partition.apply_isr([1], rig.partition.state_version)
    rig.path.on_messages([Msg("orders.in", "r2", b"refused")])
    await eventually(lambda: rig.acks("r2"), what="the refusal of the next one")
    assert rig.acks("r2")[0]["error"]["code"] == "not_enough_replicas"
    assert rig.acks("r1") == [] and len(rig.path._acks.purgatory) == 1
    rig.partition.apply_isr([1, 2], rig.partition.state_version)
    hooks.hold_hw = False
    hooks.advance_high_watermark()
    rig.path.send_acks()
    assert rig.acks("r1") == [{"stream": "orders", "partition": 0, "offset": 0}]
    assert rig.log.log_end_offset == 1
