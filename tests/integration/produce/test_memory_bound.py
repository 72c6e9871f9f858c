"""A node's memory is bounded by its config, not by what publishers send.

A publisher that sends faster than the node can append fills the node's queues up to
``ingest.pending_bytes_limit`` per partition; past that, messages are dropped and counted
(a NATS slow consumer's fate), never held. The lake exporter holds at most
``lake.concurrent_exports`` rounds of ``lake.max_bytes_per_file`` at once. So a flood many
times those bounds must not grow the node's peak RSS by more than they allow, while every
published message is either recorded or counted as dropped.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import nats

from liftlog.bench.toolkit.node_probe import proc_status_kib, slow_consumer_drops
from liftlog.embedded.nats import NatsServer
from spark_log.config import IngestConfig, LakeConfig
from tests.integration.conftest import NodeFactory, create_stream, fetch, node_client
from tests.support.waiting import wait_for

MIB = 1024 * 1024
PARTITIONS = 4
VALUE = b"v" * (64 * 1024)
BURSTS = 24
BURST_MESSAGES = 256  # 16 MiB a burst, at once: 2x what the node's queues take
PUBLISHED = BURSTS * BURST_MESSAGES  # 384 MiB in all
PENDING_BYTES = 2 * MIB
EXPORT_BYTES = 4 * MIB
ALLOWED_GROWTH_BYTES = 192 * MIB
"""Half of what is sent. The bounds allow: queues of 4 x 2 MiB, each partition's write cycle
held about three times (payloads, Arrow, the stored batch), one export round of 4 MiB held
about three times, and what the allocator keeps of the heaps of the threads that did each
(the release is off by default). Measured with the defaults: 101 to 134 MiB; up to the
384 MiB sent, were the queues unbounded."""


def _subject(stream: str, partition: int) -> str:
    """Partition 0 takes the stream's subject, partition N its ``.N`` suffix."""
    return f"{stream}.in" if partition == 0 else f"{stream}.in.{partition}"


def _status_bytes(pid: int, key: str) -> int:
    return proc_status_kib(pid, key) * 1024


def _drops(api: httpx.Client, stream: str) -> int:
    return slow_consumer_drops(str(api.base_url).rstrip("/"), stream)


def _taken_in(api: httpx.Client, stream: str) -> int:
    """Messages the node recorded or counted as dropped: every one it received."""
    return _recorded(api, stream) + _drops(api, stream)


def _recorded(api: httpx.Client, stream: str) -> int:
    return sum(
        fetch(api, stream, partition, max_records=1)["high_watermark"]
        for partition in range(PARTITIONS)
    )


def _reset_peak(pid: int) -> int:
    """Start VmHWM afresh (Linux's clear_refs 5) and return the RSS it starts from."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return _status_bytes(pid, "VmRSS")


async def _flood(url: str, stream: str, api: httpx.Client) -> None:
    """Bursts flat out, each flushed; the next once the node has taken the last one in
    (recorded or dropped), so that nats-server never holds more than a burst for the node and
    cuts it off as a slow consumer of its own (those messages would be counted nowhere)."""
    nc = await nats.connect(url)
    try:
        for burst in range(BURSTS):
            for i in range(BURST_MESSAGES):
                await nc.publish(_subject(stream, (burst + i) % PARTITIONS), VALUE)
            await nc.flush(timeout=30)
            sent = (burst + 1) * BURST_MESSAGES + PARTITIONS
            wait_for(
                lambda sent=sent: _taken_in(api, stream) >= sent,
                60,
                message=f"burst {burst} taken in",
            )
    finally:
        await nc.drain()


async def test_a_flood_grows_the_node_only_by_its_configured_bounds(
    make_node: NodeFactory, nats_server: NatsServer, stream_name: str
) -> None:
    node = make_node(
        ingest=IngestConfig(pending_bytes_limit=PENDING_BYTES),
        lake=LakeConfig(
            export_min_bytes=EXPORT_BYTES, max_bytes_per_file=EXPORT_BYTES, concurrent_exports=1
        ),
    )
    with node_client(node.api_url, timeout=60) as api:
        create_stream(api, stream_name, partitions=PARTITIONS)
        nc = await nats.connect(nats_server.url)
        for partition in range(PARTITIONS):  # every code path warm, delta-rs loaded
            await nc.request(_subject(stream_name, partition), VALUE, timeout=10)
        await nc.drain()
        assert api.post(f"/v1/streams/{stream_name}/flush").status_code == 200
        before = _reset_peak(node.pid)

        await _flood(nats_server.url, stream_name, api)
        wait_for(
            lambda: _taken_in(api, stream_name) == PUBLISHED + PARTITIONS,
            120,
            message="recorded + dropped == published",
        )
        assert api.post(f"/v1/streams/{stream_name}/flush").status_code == 200

        growth = _status_bytes(node.pid, "VmHWM") - before
        assert _drops(api, stream_name) > 0, "the node kept up: the queues' bound was never reached"
        assert growth < ALLOWED_GROWTH_BYTES, f"peak RSS grew {growth / MIB:.0f} MiB"
