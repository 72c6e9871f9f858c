"""Micro-benchmark of PartitionLog.append: batches of 1000 x 100-byte records.

Run from the repo root: ``.venv/bin/python bench/log_append.py [--batches N]``.
Batches are encoded up front (the leader encodes once per batch; that cost is reported
separately), then appended to a fresh log with and without a flush (fsync) after every batch.
A bare ``os.write`` loop of the same bytes is the baseline: the disk/page cache bounds it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from spark_log.config import LogConfig
from spark_log.log import PartitionLog, build_record_batch, encode_batch, records_from_batches

RECORDS_PER_BATCH = 1000
VALUE_BYTES = 100
DEFAULT_BATCHES = 2000
DEFAULT_FLUSHED_BATCHES = 300


def encode_batches(count: int, base_ts: int) -> tuple[list[bytes], float]:
    """``count`` encoded batches at consecutive offsets, and the seconds encoding took."""
    values = [os.urandom(VALUE_BYTES) for _ in range(RECORDS_PER_BATCH)]
    keys = [b"key-%d" % i for i in range(RECORDS_PER_BATCH)]
    headers = [None] * RECORDS_PER_BATCH
    subjects = ["orders.created"] * RECORDS_PER_BATCH
    started = time.perf_counter()
    batches = []
    for i in range(count):
        timestamps = [base_ts + i] * RECORDS_PER_BATCH
        records = build_record_batch(timestamps, keys, values, headers, subjects)
        batches.append(encode_batch(i * RECORDS_PER_BATCH, 0, records))
    return batches, time.perf_counter() - started


def run(directory: Path, batches: list[bytes], *, flush: bool, verify_crc: bool) -> float:
    """Seconds to append (and optionally flush) every batch into a fresh log."""
    shutil.rmtree(directory, ignore_errors=True)
    log = PartitionLog.open(directory, LogConfig())
    os.sync()  # start every run with no dirty pages from the previous one
    started = time.perf_counter()
    for batch in batches:
        log.append(batch, verify_crc=verify_crc)
        if flush:
            log.flush()
    elapsed = time.perf_counter() - started
    log.close()
    return elapsed


def raw_write(directory: Path, batches: list[bytes]) -> float:
    """Seconds for a bare os.write loop of the same bytes into one file (the I/O ceiling)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    fd = os.open(directory / "raw", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.sync()
    started = time.perf_counter()
    for batch in batches:
        os.write(fd, batch)
    elapsed = time.perf_counter() - started
    os.close(fd)
    shutil.rmtree(directory)
    return elapsed


def read_back(directory: Path, total_records: int) -> float:
    """Seconds to fetch and decode every record as the REST path does (4 MiB fetches)."""
    log = PartitionLog.open(directory, LogConfig())
    started = time.perf_counter()
    offset = 0
    while offset < total_records:
        data = log.read(offset, 4 * 1024 * 1024)
        records = records_from_batches(data, offset, total_records, 10_000)
        offset = records[-1].offset + 1
    elapsed = time.perf_counter() - started
    log.close()
    return elapsed


def report(label: str, seconds: float, batches: list[bytes]) -> None:
    records = len(batches) * RECORDS_PER_BATCH
    wire_mb = sum(len(b) for b in batches) / 1e6
    value_mb = records * VALUE_BYTES / 1e6
    print(
        f"{label:<34} {records / seconds:>12,.0f} records/s  {wire_mb / seconds:>8.1f} MB/s "
        f"(batch bytes)  {value_mb / seconds:>8.1f} MB/s (values)  "
        f"{len(batches) / seconds:>8,.0f} batches/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=DEFAULT_BATCHES)
    parser.add_argument("--flushed-batches", type=int, default=DEFAULT_FLUSHED_BATCHES)
    parser.add_argument("--dir", type=Path, default=None, help="where to put the log")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="liftlog-bench-", dir=args.dir))
    try:
        batches, encode_s = encode_batches(args.batches, int(time.time() * 1000))
        print(
            f"{len(batches)} batches x {RECORDS_PER_BATCH} records x {VALUE_BYTES} B values, "
            f"{len(batches[0])} B per batch, in {root}"
        )
        report("encode (build + encode_batch)", encode_s, batches)
        report("baseline: bare os.write", raw_write(root / "raw", batches), batches)
        report("append, no flush", run(root / "a", batches, flush=False, verify_crc=True), batches)
        report(
            "append, no flush, verify_crc=False",
            run(root / "b", batches, flush=False, verify_crc=False),
            batches,
        )
        report("read + decode records", read_back(root / "a", len(batches) * 1000), batches)
        flushed = batches[: args.flushed_batches]
        report(
            "append + flush() per batch",
            run(root / "c", flushed, flush=True, verify_crc=True),
            flushed,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
