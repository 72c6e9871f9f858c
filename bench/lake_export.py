"""Lake export throughput on an ``s3://`` lake (SeaweedFS) beside a local lake: the same
records, the same records per commit, in one run.

Run from the repository root (``make bench-lake`` runs this with the sizes below)::

    .venv/bin/python bench/lake_export.py --json bench/results/lake-export.json
    .venv/bin/python bench/lake_export.py --records 20000 --batch-sizes 5000 --runs 1

What is timed is a partition leader's own exporter (``ingest.lake.exporter.PartitionExporter``)
draining a partition log of N committed records into a fresh Delta table: each round loads a
snapshot, checks the partition's app transaction, reads the next ``records per commit`` from
the log (CRC-checked, converted to lake rows) and commits them with ``LakeSnapshot.append``.
The log is written once, on local disk, before anything is timed; the table is created
(untimed) before each run, as a node's first export does once per stream. Runs alternate the
two lakes, so load from elsewhere on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from coordinator.znodes import PartitionState
from ingest.lake.exporter import ExportTarget, PartitionExporter
from ingest.metrics import NodeMetrics
from ingest.replication.partition_state import Partition
from liftlog.bench.errors import BenchError
from liftlog.bench.lake.figures import (
    add_common_flags,
    check_runs,
    figures_table,
    load_average,
    own_peak_rss_mb,
    spreads_json,
    write_json,
)
from liftlog.bench.lake.fill import random_binary
from liftlog.bench.lake.pair import (
    LAKE_TITLES,
    LAKES,
    LOCAL,
    S3,
    LakePair,
    drop_table,
    lake_pair,
)
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_lake_machine
from liftlog.bench.toolkit.spread import Spread, ratio
from spark_log.config import LakeConfig, LogConfig
from spark_log.lake import LakeTable
from spark_log.lake.storage import LakeStorage
from spark_log.log import RECORD_SCHEMA, PartitionLog, encode_batch

DEFAULT_RECORDS = 1_000_000
DEFAULT_BATCH_SIZES = (10_000, 100_000)
VALUE_BYTES = 256
KEY_BYTES = 16
LOG_BATCH_RECORDS = 10_000
"""Records per log batch: what one producer batch of ``liftlog.bench.lake.fill`` appends."""
STREAM = "bench-export"
PARTITION = 0
EXPORT_TIMEOUT_S = 1800.0
BYTES_PER_MB = 1_000_000
BASE_TIME_MS = 1_700_000_000_000
UNLIMITED_BYTES = 1 << 40
"""A byte cap the record cap always reaches first: the commit size is the records per commit."""


class _LogSource:
    """The replica an exporter drains: an open log, led for ever."""

    def __init__(self, log: PartitionLog) -> None:
        self._log = log
        self.state = Partition(
            broker_id=1, stream=STREAM, partition=PARTITION, min_isr=1, leader_epoch=0, isr=[1]
        )
        self.state.enter(PartitionState(1, 0, (1,), (1,), controller_epoch=0))

    @property
    def open_log(self) -> PartitionLog | None:
        return self._log


@dataclass(frozen=True)
class ExportRun:
    """One drain of the log into one fresh table."""

    seconds: float
    commits: int
    parquet_bytes: int


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    check_runs(args.runs)
    load_start = load_average()
    with lake_pair("liftlog-bench-lake-export-") as pair:
        log = _fill_log(pair.work / "log", args.records, args.value_bytes)
        try:
            sizes = [_measure_size(pair, log, args, size) for size in args.batch_sizes]
        finally:
            log.close()
    result = {
        "bench": "lake-export",
        "machine": describe_lake_machine(),
        "load_average": {"start": load_start, "end": load_average()},
        "settings": {
            "records": args.records,
            "value_bytes": args.value_bytes,
            "key_bytes": KEY_BYTES,
            "log_batch_records": LOG_BATCH_RECORDS,
            "runs": args.runs,
        },
        "batch_sizes": sizes,
        "peak_rss_mb": {
            "bench_process": own_peak_rss_mb(),
            "seaweedfs": pair.seaweedfs_peak_rss_mb,
        },
    }
    _print(result)
    write_json(args.json, result)
    return 0


def _fill_log(directory: Path, records: int, value_bytes: int) -> PartitionLog:
    """A partition log of ``records`` committed records (HW at the end), in producer-sized
    batches of random keys and incompressible values."""
    started = time.monotonic()
    log = PartitionLog.open(directory, LogConfig())
    for lo in range(0, records, LOG_BATCH_RECORDS):
        count = min(LOG_BATCH_RECORDS, records - lo)
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(range(BASE_TIME_MS + lo, BASE_TIME_MS + lo + count), pa.int64()),
                random_binary(count, KEY_BYTES),
                random_binary(count, value_bytes),
                pa.nulls(count, RECORD_SCHEMA.field("headers").type),
                pa.array([f"{STREAM}.in"] * count, pa.string()),
            ],
            schema=RECORD_SCHEMA,
        )
        log.append(encode_batch(lo, 0, batch))
    log.flush()
    log.set_high_watermark(log.log_end_offset)
    print(f"wrote {records:,} records to the log in {time.monotonic() - started:.1f}s", flush=True)
    return log


def _measure_size(
    pair: LakePair, log: PartitionLog, args: argparse.Namespace, per_commit: int
) -> JsonObject:
    runs: dict[str, list[ExportRun]] = {lake: [] for lake in LAKES}
    for r in range(args.runs):
        for lake in LAKES:
            storage = pair.storage(lake, f"{STREAM}-{per_commit}-{r}")
            run = _export_once(pair, lake, storage, log, per_commit)
            runs[lake].append(run)
            rate = args.records / run.seconds
            print(
                f"  {per_commit:,} records/commit, run {r + 1}, {LAKE_TITLES[lake]}: "
                f"{run.seconds:.2f}s, {run.commits} commits, {rate:,.0f} records/s, "
                f"{rate * args.value_bytes / BYTES_PER_MB:.1f} MB/s",
                flush=True,
            )
            drop_table(storage)
    return _size_result(per_commit, args, runs)


def _export_once(
    pair: LakePair, lake: str, storage: LakeStorage, log: PartitionLog, per_commit: int
) -> ExportRun:
    config = dataclasses.replace(
        pair.config(lake), max_records_per_file=per_commit, max_bytes_per_file=UNLIMITED_BYTES
    )
    table = LakeTable(storage.uri, STREAM, storage)
    table.ensure_exists()
    before = table.snapshot().version
    seconds = asyncio.run(_drain(log, storage.uri, config))
    snapshot = table.snapshot()
    if snapshot.exported_offset(PARTITION) != log.high_watermark:
        raise BenchError(
            f"{LAKE_TITLES[lake]}: the table says offset {snapshot.exported_offset(PARTITION)}, "
            f"expected {log.high_watermark}"
        )
    return ExportRun(seconds, snapshot.version - before, _parquet_bytes(storage))


async def _drain(log: PartitionLog, table_uri: str, config: LakeConfig) -> float:
    """Seconds from starting a leader's exporter to the lake holding the whole log."""
    target = ExportTarget(STREAM, PARTITION, table_uri, broker_id=1, leader_epoch=0)
    exporter = PartitionExporter(_LogSource(log), target, config, NodeMetrics(), tracked_from=0)
    started = time.perf_counter()
    exporter.start()
    try:
        await exporter.export_through(log.high_watermark, EXPORT_TIMEOUT_S)
        return time.perf_counter() - started
    finally:
        await exporter.stop(BenchError("the export benchmark is done"))


def _parquet_bytes(storage: LakeStorage) -> int:
    """Bytes of the table's data files (what the export wrote besides the Delta log)."""
    from deltalake import DeltaTable

    actions = pa.table(
        DeltaTable(storage.uri, storage_options=storage.delta_options()).get_add_actions()
    )
    return int(pc.sum(actions["size_bytes"]).as_py() or 0)


def _size_result(
    per_commit: int, args: argparse.Namespace, runs: dict[str, list[ExportRun]]
) -> JsonObject:
    lakes: JsonObject = {}
    rates: dict[str, Spread] = {}
    for lake, done in runs.items():
        seconds = Spread.of([r.seconds for r in done])
        rates[lake] = Spread.of([args.records / r.seconds for r in done])
        mb = Spread.of([args.records * args.value_bytes / BYTES_PER_MB / r.seconds for r in done])
        lakes[lake] = {
            **spreads_json(
                {"seconds": seconds, "records_per_s": rates[lake], "mb_per_s": mb}, decimals=3
            ),
            "commits": done[0].commits,
            "parquet_bytes": done[0].parquet_bytes,
        }
    s3_over_local = ratio(rates[S3], rates[LOCAL])
    return {
        "records_per_commit": per_commit,
        "lakes": lakes,
        "s3_over_local_records_per_s": None if s3_over_local is None else round(s3_over_local, 3),
    }


def _print(result: JsonObject) -> None:
    s = result["settings"]
    print()
    print(
        f"Lake export, {s['records']:,} records of {s['value_bytes']} B values "
        f"({s['key_bytes']} B keys), one partition leader's exporter, {s['runs']} run(s) "
        f"({result['machine']['summary']}; load average {result['load_average']['start']} "
        f"at start, {result['load_average']['end']} at end)"
    )
    rows = []
    for size in result["batch_sizes"]:
        n, lakes = size["records_per_commit"], size["lakes"]
        for figure, unit, decimals in (("records_per_s", "records/s", 0), ("mb_per_s", "MB/s", 1)):
            per_lake = {lake: Spread.of(lakes[lake][figure]["runs"]) for lake in LAKES}
            rows.append((f"{n:,} records/commit, {unit}", per_lake, decimals))
    print(figures_table(rows))
    for size in result["batch_sizes"]:
        lakes = size["lakes"]
        print(
            f"  {size['records_per_commit']:,} records/commit: {lakes[LOCAL]['commits']} commits, "
            f"{lakes[LOCAL]['parquet_bytes'] / BYTES_PER_MB:.1f} MB of Parquet; S3 / local "
            f"(medians) {size['s3_over_local_records_per_s']:.2f}x"
        )
    rss = result["peak_rss_mb"]
    print(f"  peak RSS: bench process {rss['bench_process']} MB, SeaweedFS {rss['seaweedfs']} MB")


def _batch_sizes(text: str) -> list[int]:
    sizes = [int(part) for part in text.split(",") if part.strip()]
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive record counts, got {text!r}")
    return sizes


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/lake_export.py", description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="records per run")
    p.add_argument(
        "--batch-sizes",
        type=_batch_sizes,
        default=list(DEFAULT_BATCH_SIZES),
        help="records per commit, comma-separated (default 10000,100000)",
    )
    p.add_argument("--value-bytes", type=int, default=VALUE_BYTES)
    add_common_flags(p)
    return p


if __name__ == "__main__":
    sys.exit(main())
