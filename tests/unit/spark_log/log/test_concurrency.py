"""Readers on other threads never see a partial or corrupt batch while one writer appends, rolls,
truncates and deletes segments. Every record's value is a function of its offset, so any read
can be checked without coordinating with the writer."""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

from spark_log.errors import OffsetOutOfRangeError
from spark_log.log import PartitionLog, iter_batches, partition_log, records_from_batches
from spark_log.log.partition_log import _read_views, _release

from .conftest import make_batch, tiny_config, value_of

WRITER_SECONDS = 2.0
READERS = 3
READER_PAUSE_S = 0.0005
TAIL_READ_FRACTION = 0.7
MAX_VALUE_BYTES = 12_000


def check_read(data: bytes, start: int) -> int:
    """Verify framing, CRC, density and contents of a read; return the records seen."""
    expected_base = None
    for header, _ in iter_batches(data):
        if expected_base is not None:
            assert header.base_offset == expected_base
        expected_base = header.next_offset
    records = records_from_batches(data, start, 1 << 62, 1 << 30)
    for offset, record in enumerate(records, start):
        assert record.offset == offset
        assert record.value.rstrip(b"x") == value_of(offset)
    return len(records)


def test_readers_never_see_partial_batches_while_the_writer_works(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "p", tiny_config(segment_bytes=256 * 1024))
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0] * READERS

    def reader(slot: int) -> None:
        rng = random.Random(slot)
        while not stop.is_set():
            start_bound, end_bound = log.log_start_offset, log.log_end_offset
            if rng.random() < TAIL_READ_FRACTION:  # where appends and truncations happen
                start_bound = max(start_bound, end_bound - 12)
            start = rng.randint(start_bound, end_bound)
            try:
                data = log.read(start, rng.choice([1, 500, 5000, 50_000]))
                log.offset_for_timestamp(rng.randint(0, 2**41))
            except OffsetOutOfRangeError:
                continue  # retention or truncation moved the bounds since we looked
            except BaseException as exc:  # noqa: BLE001 - report any failure to the main thread
                errors.append(exc)
                return
            try:
                if data:
                    check_read(data, start)
            except BaseException as exc:  # noqa: BLE001 - report any failure to the main thread
                errors.append(exc)
                return
            reads[slot] += 1
            time.sleep(READER_PAUSE_S)  # let the writer in: the GIL favours busy threads

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    for thread in threads:
        thread.start()
    rng = random.Random(42)
    deadline = time.monotonic() + WRITER_SECONDS
    operations = 0
    try:
        while time.monotonic() < deadline and not errors:
            operations += 1
            leo = log.log_end_offset
            action = rng.random()
            if action < 0.75:
                batches = [
                    make_batch(leo + 4 * i, 4, value_size=rng.randint(0, MAX_VALUE_BYTES))
                    for i in range(rng.randint(1, 4))
                ]
                log.append_many(batches)
            elif action < 0.93:
                log.truncate_to(max(log.log_start_offset, leo - rng.randint(0, 40)))
            elif action < 0.97:
                log.set_high_watermark(leo)
                log.delete_old_segments(
                    retention_ms=None, retention_bytes=20_000, retention_messages=None
                )
            else:
                log.flush()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        log.close()
    assert not errors, errors[0]
    assert operations > 50 and min(reads) > 20


def test_a_snapshot_survives_its_segments_being_deleted_and_fds_reused(tmp_path: Path):
    log = PartitionLog.open(tmp_path / "p", tiny_config())
    for i in range(10):
        log.append(make_batch(i * 3, 3, value_size=300))
    expected = log.read(0, 1 << 20)
    snapshot = log._read_snapshot(0, None, 1 << 20)
    log.truncate_fully_and_start_at(1000)  # unlinks every file the snapshot refers to
    decoys = [os.open(tmp_path / f"decoy{i}", os.O_CREAT | os.O_RDWR) for i in range(20)]
    try:
        for fd in decoys:
            os.write(fd, b"\x00" * 8192)
        data = _read_views(snapshot.views, 0, snapshot.upper_offset, 1 << 20)
    finally:
        _release(snapshot.views)
        for fd in decoys:
            os.close(fd)
    assert data == expected
    assert log._generation != snapshot.generation  # a real read would retry, and see 1000..
    assert log.read(1000, 100) == b""
    log.close()


def test_a_read_overlapping_a_truncation_is_retried(tmp_path: Path, monkeypatch):
    """Force the race: the writer truncates and rewrites the tail after a reader planned its
    byte range but before it read the bytes."""
    log = PartitionLog.open(tmp_path / "p", tiny_config(segment_bytes=1 << 20))
    for base in (0, 4, 8):
        log.append(make_batch(base, 4, value_size=100))
    real_batch_range = partition_log._batch_range
    raced: list[bool] = []

    def racing_batch_range(*args: object) -> tuple[int, int, bool]:
        planned = real_batch_range(*args)
        if not raced:
            raced.append(True)
            log.truncate_to(4)
            log.append(make_batch(4, 4, value_size=3000))
            log.append(make_batch(8, 4, value_size=10))
        return planned

    monkeypatch.setattr(partition_log, "_batch_range", racing_batch_range)
    data = log.read(0, 1 << 20)
    assert raced
    assert [h.base_offset for h, _ in iter_batches(data)] == [0, 4, 8]
    assert check_read(data, 0) == 12
    log.close()
