"""The lake's object store fails during export, on the HA topology, under acks=all load.

SeaweedFS (the S3 lake) is killed with SIGKILL (refused connections) or frozen with SIGSTOP (a
hung store: connections open, no answer) while publishers keep going. Acks must not depend on
the lake; the failure must show where an operator looks (``/metrics``); local retention must
not delete what the lake does not hold, however far the log grows past its limits; and once the
store is back the export catches up by itself, leaving, per partition, every offset from 0 to
the HW in the table exactly once with the acknowledged value.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import DeltaTable

from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.errors import LiftlogError
from spark_log.lake.storage import lake_storage
from spark_log.log.layout import LOG_SUFFIX
from tests.integration.conftest import create_stream
from tests.support.acked_load import AckedLoad
from tests.support.ha_stack import start_ha_stack
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.fault, pytest.mark.slow]

PARTITIONS = 2
PUBLISHERS = 8
SEGMENT_BYTES = 16 * 1024
RETENTION_BYTES = 2 * SEGMENT_BYTES
RECORDS_DURING_OUTAGE = 500
SEGMENTS_HELD_BACK = 3
"""How many segments past the retention limit the log must grow while the store is down: the
proof that retention would have deleted them without the lake bound."""
SAMPLE_INTERVAL_S = 0.2
CATCH_UP_TIMEOUT_S = 180.0
NODE_OVERRIDES: dict[str, Any] = {
    "log": {"segment_bytes": SEGMENT_BYTES, "retention_check_interval_ms": 300},
    "lake": {"export_interval_s": 0.5, "retry_backoff_max_s": 2.0, "flush_timeout_s": 120.0},
}


class PartitionedLoad(AckedLoad):
    """acks=all publishers over every partition; ``acked`` maps value -> (partition, offset)."""

    def __init__(self, client: Client, stream: str) -> None:
        super().__init__(client, stream, PUBLISHERS)

    async def _run(self, worker: int) -> None:
        seq = 0
        while not self.stop.is_set():
            value = f"w{worker}-{seq}"
            seq += 1
            try:
                ack = await self.client.publish(
                    self.stream, value, partition=seq % PARTITIONS, timeout_s=5
                )
            except LiftlogError:
                continue
            if ack is not None:
                self._record(value, (ack.partition, ack.offset))


@dataclass
class RetentionWatch:
    """Samples, on a thread (the publishers' loop stays free), every replica's log start
    offset beside the leader's lake offset, and remembers any sample where a replica's log
    started above the lake offset: retention deleted records the lake did not hold."""

    stack: Standalone
    stream: str
    violations: list[str] = field(default_factory=list)
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(timeout=10) as api:
            while not self._stop.wait(SAMPLE_INTERVAL_S):
                try:
                    self._sample(api)
                except httpx.HTTPError:
                    continue  # a busy node misses a sample; the next one covers it

    def _sample(self, api: httpx.Client) -> None:
        """Every replica's log start first, the lake offsets after: the lake offset only grows,
        so a start above a lake offset read later is a real violation, never a race between
        the reads (the lake and retention moving on in between)."""
        starts = [
            (partition, node.broker_id, self._log_start(api, node.api_url, partition))
            for partition in range(PARTITIONS)
            for node in self.stack.nodes
        ]
        lake = {
            s["partition"]: s["lake_offset"]
            for s in _describe(self.stack, self.stream)["partitions"]
        }
        for partition, broker, start in starts:
            bound = lake.get(partition)
            if bound is not None and start is not None and start > bound:
                self.violations.append(
                    f"partition {partition} broker {broker}: log starts at {start}, "
                    f"the lake holds only up to {bound}"
                )
        self.samples += 1

    def _log_start(self, api: httpx.Client, url: str, partition: int) -> int | None:
        view = api.get(f"{url}/v1/streams/{self.stream}/partitions/{partition}").json()
        start = view.get("log_start_offset")
        return None if start is None else int(start)

    def stop(self) -> None:
        self._stop.set()


def _describe(stack: Standalone, stream: str) -> dict[str, Any]:
    with httpx.Client(base_url=stack.node(1).api_url, timeout=30) as api:
        return api.get(f"/v1/streams/{stream}").json()


def _export_errors(stack: Standalone, stream: str) -> float:
    """``liftlog_lake_export_errors_total`` of the stream summed over every node."""
    pattern = re.compile(
        r'^liftlog_lake_export_errors_total\{[^}]*stream="' + re.escape(stream) + r'"[^}]*\} (\S+)',
        re.MULTILINE,
    )
    total = 0.0
    with httpx.Client(timeout=10) as api:
        for node in stack.nodes:
            text = api.get(f"{node.api_url}/metrics").text
            total += sum(float(v) for v in pattern.findall(text))
    return total


def _table(stack: Standalone, uri: str) -> DeltaTable:
    options = lake_storage(stack.node(1).config.lake).at(uri).delta_options()
    return DeltaTable(uri, storage_options=options)


def _check_table(stack: Standalone, stream: str, acked: dict[str, tuple[int, int]]) -> None:
    """Per partition: offsets 0..HW-1 exactly once, the lake offset at the HW, and every
    acknowledged value at its offset."""
    description = _describe(stack, stream)
    table = _table(stack, description["lake"]["uri"])
    rows = table.to_pyarrow_table(columns=["partition", "offset", "value"]).to_pylist()
    for state in description["partitions"]:
        p, hw = state["partition"], state["high_watermark"]
        offsets = sorted(r["offset"] for r in rows if r["partition"] == p)
        assert offsets == list(range(hw)), f"partition {p}: gap or overlap in the lake"
        assert table.transaction_version(f"liftlog:{stream}:{p}") == hw
    by_place = {(r["partition"], r["offset"]): r["value"] for r in rows}
    for value, place in acked.items():
        assert by_place.get(place) == value.encode(), f"acked {value}@{place} not in the lake"


def _lake_passed(
    stack: Standalone, stream: str, offsets: dict[int, int], field_: str = "lake_offset"
) -> bool:
    """Every partition's ``field_`` (of describe) is past its offset in ``offsets``."""
    partitions = _describe(stack, stream)["partitions"]
    return all((p[field_] or 0) > offsets[p["partition"]] for p in partitions)


def _lake_caught_up(stack: Standalone, stream: str) -> bool:
    partitions = _describe(stack, stream)["partitions"]
    return all(p["lake_offset"] == p["high_watermark"] for p in partitions)


def _retention_under_way(stack: Standalone, stream: str) -> bool:
    return all(
        p["log_start_offset"] > 0 and p["lake_offset"] >= p["log_start_offset"]
        for p in _describe(stack, stream)["partitions"]
    )


def _log_bytes(stack: Standalone, stream: str, partition: int) -> int:
    """The bytes of the partition's segments on the disk of its leader."""
    leader = _describe(stack, stream)["partitions"][partition]["leader"]
    root = Path(stack.node(leader).config.data_dir)
    return sum(f.stat().st_size for f in root.glob(f"streams/{stream}@*/{partition}/*{LOG_SUFFIX}"))


def _held_back(stack: Standalone, stream: str, lake_at_outage: dict[int, int]) -> bool:
    """Every partition's log grew several segments past its retention limit, and no log start
    passed the lake offset the table had when the store went away."""
    grown = True
    for p in _describe(stack, stream)["partitions"]:
        assert p["log_start_offset"] <= lake_at_outage[p["partition"]]
        limit = RETENTION_BYTES + SEGMENTS_HELD_BACK * SEGMENT_BYTES
        grown &= _log_bytes(stack, stream, p["partition"]) > limit
    return grown


@pytest.fixture
def lake_stack(temp_dir: Path) -> Iterator[Standalone]:
    stack = start_ha_stack(temp_dir / "ha", NODE_OVERRIDES)
    try:
        yield stack
    finally:
        if stack.seaweedfs is not None and stack.seaweedfs.is_running():
            stack.seaweedfs.resume()  # a frozen store would not stop
        stack.stop()


def _outage(stack: Standalone, kind: str) -> tuple[Callable[[], None], Callable[[], None]]:
    store = stack.seaweedfs
    assert store is not None
    if kind == "kill":
        return store.kill, store.start
    return store.pause, store.resume


async def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Blocking waits and REST calls off the loop the publishers run on."""
    return await asyncio.to_thread(fn, *args, **kwargs)


@pytest.mark.parametrize("kind", ["kill", "pause"])
async def test_export_survives_an_object_store_outage(lake_stack, stream_name, kind):
    stack, stream = lake_stack, stream_name
    with httpx.Client(base_url=stack.node(1).api_url, timeout=30) as api:
        create_stream(
            api,
            stream,
            partitions=PARTITIONS,
            replication_factor=3,
            retention_bytes=RETENTION_BYTES,
        )
    watch = RetentionWatch(stack, stream)
    watcher = threading.Thread(target=watch.run, daemon=True)
    fail, restore = _outage(stack, kind)
    async with Client(stack.servers, ack_timeout_s=5) as client:
        load = PartitionedLoad(client, stream)
        try:
            await load.wait_acked(300, 60)
            await _in_thread(
                wait_for,
                lambda: _retention_under_way(stack, stream),
                90,
                message="exports and retention under way",
            )
            watcher.start()
            errors_before = await _in_thread(_export_errors, stack, stream)
            fail()
            try:
                lake_at_outage = {
                    p["partition"]: p["lake_offset"]
                    for p in (await _in_thread(_describe, stack, stream))["partitions"]
                }
                await load.wait_acked(len(load.acked) + RECORDS_DURING_OUTAGE, 120)
                await _in_thread(
                    wait_for,
                    lambda: _export_errors(stack, stream) > errors_before,
                    120,
                    message="export errors counted while the store is down",
                )
                await _in_thread(
                    wait_for,
                    lambda: _held_back(stack, stream, lake_at_outage),
                    120,
                    message="the log grows past its retention limit, held back by the lake",
                )
            finally:
                restore()
            restored_at = time.monotonic()
            await _in_thread(
                wait_for,
                lambda: _lake_passed(stack, stream, lake_at_outage),
                CATCH_UP_TIMEOUT_S,
                message="exports resume by themselves once the store is back",
            )
            resumed_s = time.monotonic() - restored_at
            await load.wait_acked(len(load.acked) + 300, 60)
        finally:
            await load.finish()
            watch.stop()
    watcher.join()
    await _in_thread(
        wait_for,
        lambda: _lake_caught_up(stack, stream),
        CATCH_UP_TIMEOUT_S,
        message="the lake reaches the HW of every partition",
    )
    await _in_thread(
        wait_for,
        lambda: _lake_passed(stack, stream, lake_at_outage, "log_start_offset"),
        60,
        message="retention proceeds once the lake holds the records",
    )
    assert watch.samples > 0 and not watch.violations, watch.violations[:5]
    await _in_thread(_check_table, stack, stream, load.acked)
    print(f"{kind}: {len(load.acked)} acked; exports resumed {resumed_s:.1f}s after the store")
