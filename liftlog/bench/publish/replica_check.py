"""What each replicated side holds after the measurements, held against what it acked.

Throughput means nothing if acked records went missing: after each record size the run asks
each side for its committed count and for which replicas hold every acked record (Liftlog:
the partition's HW and each replica's log end offset as the leader last saw it; JetStream:
the stream's message count and each peer's ``current``/``lag``). Replicas are given a few
seconds to report their last fetch, then the figures are taken as they are.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import StreamInfo

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.json_object import JsonObject
from spark_log.api_models import PartitionState
from spark_log.client import Client

REPLICA_CATCH_UP_TIMEOUT_S = 15.0
FULL_ISR_TIMEOUT_S = 30.0
CHECK_POLL_INTERVAL_S = 0.2


@dataclass(frozen=True)
class StoredCheck:
    """One side's records after a size: acked by the publisher, committed, held per replica."""

    acked: int
    stored: int
    replicas: int
    replicas_complete: int
    leader: str
    in_sync: tuple[str, ...]

    @property
    def lost(self) -> int:
        """Acked records the side does not hold (committed count below the acked count)."""
        return max(0, self.acked - self.stored)

    def to_json(self) -> JsonObject:
        return {
            "acked": self.acked,
            "stored": self.stored,
            "lost": self.lost,
            "replicas": self.replicas,
            "replicas_complete": self.replicas_complete,
            "leader": self.leader,
            "in_sync": list(self.in_sync),
        }


def node_name(broker_id: int | None) -> str:
    """``node-2``: how the report names a Liftlog broker (and its CPU entry)."""
    return f"node-{broker_id}" if broker_id is not None and broker_id >= 0 else "none"


async def liftlog_partition(client: Client, stream: str) -> PartitionState:
    """Partition 0 of ``stream`` as described by the cluster (leader view, replica LEOs)."""
    return (await client.describe_stream(stream)).partition(0)


async def wait_full_isr(
    client: Client, stream: str, replicas: int, timeout_s: float = FULL_ISR_TIMEOUT_S
) -> PartitionState:
    """Wait until every replica is in the ISR, so ``acks=all`` really waits for all three."""
    deadline = time.monotonic() + timeout_s
    while True:
        part = await liftlog_partition(client, stream)
        if len(part.isr) == replicas and part.leader >= 0:
            return part
        if time.monotonic() >= deadline:
            raise BenchError(
                f"stream {stream}: ISR {part.isr} is not all {replicas} "
                f"replicas after {timeout_s:.0f}s"
            )
        await asyncio.sleep(CHECK_POLL_INTERVAL_S)


async def liftlog_stored(
    client: Client, stream: str, acked: int, timeout_s: float = REPLICA_CATCH_UP_TIMEOUT_S
) -> StoredCheck:
    """The HW and the replicas whose LEO covers every acked record (waited for briefly)."""
    deadline = time.monotonic() + timeout_s
    while True:
        part = await liftlog_partition(client, stream)
        leos = [int(v) for v in (part.replica_log_end_offsets or {}).values()]
        complete = sum(1 for leo in leos if leo >= acked)
        replicas = len(part.replicas)
        if complete >= replicas or time.monotonic() >= deadline:
            return StoredCheck(
                acked,
                part.high_watermark or 0,
                replicas,
                complete,
                node_name(part.leader),
                tuple(node_name(b) for b in part.isr),
            )
        await asyncio.sleep(CHECK_POLL_INTERVAL_S)


async def js_stream_info(js: JetStreamContext, name: str) -> StreamInfo:
    try:
        return await js.stream_info(name)
    except nats.errors.Error as exc:
        raise BenchError(f"cannot read JetStream stream {name}: {exc}") from exc


def js_leader(info: StreamInfo) -> str:
    return (info.cluster.leader if info.cluster else None) or "none"


def _js_current_peers(info: StreamInfo) -> list[str]:
    """The stream leader plus every peer that is current and not lagging."""
    peers = info.cluster.replicas if info.cluster and info.cluster.replicas else []
    current = [p.name or "?" for p in peers if p.current and not p.offline and not p.lag]
    return [js_leader(info), *current]


async def wait_js_replicas_current(
    js: JetStreamContext, name: str, replicas: int, timeout_s: float = FULL_ISR_TIMEOUT_S
) -> StreamInfo:
    """Wait until the R3 stream has a leader and every peer is current: a stream just created
    may still be electing, and publishes then fail at once (no responders)."""
    deadline = time.monotonic() + timeout_s
    while True:
        info = await js_stream_info(js, name)
        in_sync = _js_current_peers(info)
        if js_leader(info) != "none" and len(in_sync) >= replicas:
            return info
        if time.monotonic() >= deadline:
            raise BenchError(
                f"JetStream stream {name}: only {in_sync} current after {timeout_s:.0f}s"
            )
        await asyncio.sleep(CHECK_POLL_INTERVAL_S)


async def js_stored(
    js: JetStreamContext,
    name: str,
    acked: int,
    replicas: int,
    timeout_s: float = REPLICA_CATCH_UP_TIMEOUT_S,
) -> StoredCheck:
    """The stream's message count and its peers that are current (waited for briefly)."""
    deadline = time.monotonic() + timeout_s
    while True:
        info = await js_stream_info(js, name)
        in_sync = _js_current_peers(info)
        if len(in_sync) >= replicas or time.monotonic() >= deadline:
            return StoredCheck(
                acked,
                int(info.state.messages),
                replicas,
                len(in_sync),
                js_leader(info),
                tuple(in_sync),
            )
        await asyncio.sleep(CHECK_POLL_INTERVAL_S)
