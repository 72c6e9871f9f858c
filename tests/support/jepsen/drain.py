"""Read every replica of a stream offline, with the storage code itself, after a scenario.

The scenario stops the stack first; each partition directory is then copied and opened with
``PartitionLog.open`` on the copy, because opening writes (it recovers an unclean log, lowers
the HW checkpoint and removes the clean-shutdown marker) and the originals are evidence. What
comes back is what the node itself would see on its next start.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from spark_log.config import LogConfig
from spark_log.log import PartitionLog
from spark_log.log.checkpoint import read_offset_checkpoint
from spark_log.log.layout import CLEAN_SHUTDOWN_FILE, HIGH_WATERMARK_FILE
from spark_log.log.records import records_from_batches
from tests.support.jepsen.replicas import ReplicaState

STREAMS_DIR = "streams"  # ingest.replica.manager.STREAMS_DIR: <data_dir>/streams/<name>@<ms>/<p>
READ_CHUNK_BYTES = 4 * 1024 * 1024
READ_CHUNK_RECORDS = 100_000


class DrainError(RuntimeError):
    """A broker's data dir does not hold the stream the way the drain expects."""


def stream_dir(data_dir: Path, stream: str) -> Path | None:
    """The newest incarnation of ``stream`` under ``data_dir`` (None if the broker has none).

    A re-created stream gets a new ``<name>@<created_ms>`` directory; a scenario judges the
    incarnation it published to, which is the newest one.
    """
    root = data_dir / STREAMS_DIR
    if not root.is_dir():
        return None
    found = [p for p in root.iterdir() if p.is_dir() and p.name.rpartition("@")[0] == stream]
    return max(found, key=lambda p: int(p.name.rpartition("@")[2]), default=None)


def drain_replica(directory: Path, broker_id: int, partition: int) -> ReplicaState:
    """One partition directory read in full, on a temporary copy (removed afterwards)."""
    checkpointed_hw = read_offset_checkpoint(directory / HIGH_WATERMARK_FILE)
    clean = (directory / CLEAN_SHUTDOWN_FILE).exists()
    with tempfile.TemporaryDirectory(prefix="liftlog-drain-") as tmp:
        copy = Path(tmp) / str(partition)
        shutil.copytree(directory, copy)
        with PartitionLog.open(copy, LogConfig()) as log:
            return ReplicaState(
                broker_id=broker_id,
                partition=partition,
                records=tuple(_read_all(log)),
                log_start_offset=log.log_start_offset,
                log_end_offset=log.log_end_offset,
                high_watermark=log.high_watermark,
                checkpointed_high_watermark=checkpointed_hw,
                epochs=tuple(log.epoch_entries),
                clean_shutdown=clean,
            )


def _read_all(log: PartitionLog) -> list[tuple[int, bytes]]:
    """(offset, payload) from the log start to the LEO, committed or not."""
    out: list[tuple[int, bytes]] = []
    offset, leo = log.log_start_offset, log.log_end_offset
    while offset < leo:
        data = log.read(offset, READ_CHUNK_BYTES)
        records = records_from_batches(data, offset, leo, READ_CHUNK_RECORDS)
        if not records:
            raise DrainError(f"{log.directory}: no record readable at offset {offset} < {leo}")
        out.extend((r.offset, r.value) for r in records)
        offset = records[-1].offset + 1
    return out


def drain_broker(broker_id: int, data_dir: Path, stream: str) -> dict[int, ReplicaState]:
    """partition -> replica, for every partition of ``stream`` this broker stores."""
    directory = stream_dir(data_dir, stream)
    if directory is None:
        return {}
    partitions = sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())
    return {p: drain_replica(directory / str(p), broker_id, p) for p in partitions}


def drain(brokers: Sequence[tuple[int, Path]], stream: str) -> dict[int, dict[int, ReplicaState]]:
    """broker id -> partition -> replica, for every broker's data dir (stack stopped)."""
    return {broker_id: drain_broker(broker_id, path, stream) for broker_id, path in brokers}
