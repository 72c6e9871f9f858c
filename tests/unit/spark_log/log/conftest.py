"""Helpers for the partition-log tests: batch factories, small configs, crash images."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from spark_log.config import LogConfig
from spark_log.log import PartitionLog, build_record_batch, encode_batch, records_from_batches

TINY_SEGMENT_BYTES = 1024
TINY_INDEX_INTERVAL_BYTES = 128
BASE_TS = 1_700_000_000_000


def value_of(offset: int) -> bytes:
    """The value the factories store at ``offset``: lets any read be checked without a model."""
    return b"value-%d" % offset


def make_batch(
    base_offset: int,
    count: int = 3,
    *,
    epoch: int = 0,
    ts: int | list[int] = BASE_TS,
    value_size: int = 0,
) -> bytes:
    timestamps = ts if isinstance(ts, list) else [ts + i for i in range(count)]
    offsets = range(base_offset, base_offset + count)
    rb = build_record_batch(
        timestamps,
        [b"k%d" % o if o % 3 else None for o in offsets],
        [value_of(o) + b"x" * value_size for o in offsets],
        [{"n": str(o)} if o % 2 else None for o in offsets],
        [f"subj.{o % 4}" for o in offsets],
    )
    return encode_batch(base_offset, epoch, rb)


def tiny_config(**overrides: int) -> LogConfig:
    settings = {
        "segment_bytes": TINY_SEGMENT_BYTES,
        "index_interval_bytes": TINY_INDEX_INTERVAL_BYTES,
    }
    settings.update(overrides)
    return LogConfig(**settings)


def crash_image(directory: Path, target: Path) -> Path:
    """Copy a live log directory: what a disk would hold if the process died right now
    (page-cache contents included, buffered index entries and the clean marker not)."""
    shutil.copytree(directory, target)
    return target


class Clock:
    """A settable wall clock for retention and roll-by-time tests."""

    def __init__(self, now_ms: int = BASE_TS) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def open_log(tmp_path: Path) -> Iterator[Callable[..., PartitionLog]]:
    """Open logs under tmp_path and close whatever is still open at teardown."""
    opened: list[PartitionLog] = []

    def factory(
        name: str = "p0", config: LogConfig | None = None, **kwargs: object
    ) -> PartitionLog:
        log = PartitionLog.open(tmp_path / name, config or tiny_config(), **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield factory
    for log in opened:
        log.close()


def append_records(log: PartitionLog, count: int, per_batch: int = 3, **kwargs: object) -> None:
    """Append ``count`` batches of ``per_batch`` records at the LEO."""
    for _ in range(count):
        log.append(make_batch(log.log_end_offset, per_batch, **kwargs))  # type: ignore[arg-type]


def all_offsets(log: PartitionLog, upper: int | None = None) -> list[int]:
    """Every offset readable from the log start, checked against ``value_of``."""
    upper = log.log_end_offset if upper is None else upper
    records = records_from_batches(
        log.read(log.log_start_offset, 1 << 30, upper), log.log_start_offset, upper, 1 << 30
    )
    for record in records:
        assert record.value.rstrip(b"x") == value_of(record.offset)
    return [r.offset for r in records]
