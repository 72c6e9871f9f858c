"""Compaction time on an ``s3://`` lake (SeaweedFS) beside a local lake: the same table, the
same SparkSession, the same run. The job reads and writes lake files through pyarrow on both,
so the difference is the store.

Run from the repository root (``make bench-lake`` runs this with the sizes below)::

    .venv/bin/python bench/compact_s3.py --json bench/results/lake-compact.json
    .venv/bin/python bench/compact_s3.py --rows 20000 --runs 1   # a smoke run

What is timed is what ``liftlog compact <stream>`` runs once it has described the stream and
started Spark: ``compact_stream`` with the options the command's own flags give (parsed by the
CLI's parser: ``--lake-option`` for the S3 store, defaults otherwise, so packing small files
and vacuum run too). The report's own clock splits it into the compaction (plan, Spark job,
commit) and the maintenance after it. The table is built once, exporter-shaped
(``liftlog.bench.lake.compaction_table``), and each run compacts fresh byte-for-byte copies of
it on both lakes (copying is not timed); runs alternate the lakes. The S3 server runs on this
machine, so the figures show the job's cost per object-store request, not a network's.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
from pyspark.sql import SparkSession

from datasource.compaction import CompactionTarget, compact_stream
from datasource.compaction.command import options_from_args
from datasource.compaction.lake_options import parse_lake_options
from datasource.compaction.report import CompactionReport
from datasource.compaction.session import get_or_build_session
from liftlog.bench.errors import BenchError
from liftlog.bench.lake.compaction_table import BENCH_STREAM, TableShape, build_table
from liftlog.bench.lake.figures import (
    add_common_flags,
    check_runs,
    figures_table,
    load_average,
    own_peak_rss_mb,
    spreads_json,
    write_json,
)
from liftlog.bench.lake.pair import (
    LAKE_TITLES,
    LAKES,
    LOCAL,
    S3,
    LakePair,
    drop_table,
    lake_pair,
)
from liftlog.bench.lake.spark_cpu import jvm_pid
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_lake_machine
from liftlog.bench.toolkit.node_probe import peak_rss_mb
from liftlog.bench.toolkit.spread import Spread, ratio
from liftlog.cli import build_parser

DAY_MS = 24 * 3_600_000
DEFAULT_ROWS = 2_000_000
KEY_RATIO = 0.1
VALUE_BYTES = 100


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    check_runs(args.runs)
    shape = TableShape(args.rows, args.partitions, args.files_per_partition, KEY_RATIO, VALUE_BYTES)
    load_start = load_average()
    with lake_pair("liftlog-bench-lake-compact-") as pair:
        measured = _run(pair, shape, args)
    result = {
        "bench": "lake-compact",
        "machine": describe_lake_machine(),
        "load_average": {"start": load_start, "end": load_average()},
        "settings": {
            "rows": shape.rows,
            "partitions": shape.partitions,
            "files_per_partition": shape.files_per_partition,
            "key_ratio": shape.key_ratio,
            "value_bytes": shape.value_bytes,
            "runs": args.runs,
            "master": args.master,
            "command": "liftlog compact " + " ".join(_command_flags(pair, S3, redact=True)),
        },
        **measured,
        "peak_rss_mb": {
            **measured["peak_rss_mb"],
            "bench_process": own_peak_rss_mb(),
            "seaweedfs": pair.seaweedfs_peak_rss_mb,
        },
    }
    _print(result)
    write_json(args.json, result)
    return 0


def _run(pair: LakePair, shape: TableShape, args: argparse.Namespace) -> JsonObject:
    pristine = pair.work / "pristine"
    started = time.monotonic()
    rows = build_table(pristine, shape)
    print(f"built {rows:,} rows in {time.monotonic() - started:.1f}s", flush=True)
    spark, created = get_or_build_session(args.master)
    try:
        _warm_up(spark, pair, pristine, shape, args.master)
        reports: dict[str, list[tuple[float, CompactionReport]]] = {lake: [] for lake in LAKES}
        for r in range(args.runs):
            for lake in LAKES:
                command = _cli_args(pair, lake, args.master)
                target = _fresh_copy(pair, lake, pristine, shape, r, command.lake_option)
                began = time.monotonic()
                report = compact_stream(spark, target, options_from_args(command))
                seconds = time.monotonic() - began
                drop_table(target.storage)
                _check(report, rows, lake)
                reports[lake].append((seconds, report))
                print(
                    f"  run {r + 1}, {LAKE_TITLES[lake]}: {seconds:.2f}s "
                    f"(compaction {report.elapsed_s:.2f}s; {report.records_before:,} -> "
                    f"{report.records_after:,} rows)",
                    flush=True,
                )
        jvm_rss = _jvm_peak_rss_mb(spark)
    finally:
        if created:
            spark.stop()
    return {
        "rows_before": rows,
        "rows_after": reports[LOCAL][0][1].records_after,
        "lakes": {lake: _lake_result(done, rows) for lake, done in reports.items()},
        "s3_over_local_seconds": _seconds_ratio(reports),
        "spark": spark.version,
        "peak_rss_mb": {"spark_jvm": jvm_rss},
    }


def _warm_up(
    spark: SparkSession, pair: LakePair, pristine: Path, shape: TableShape, master: str
) -> None:
    """One untimed compaction first: the first Spark job of a session also starts the JVM's
    code paths and the Python workers, which would otherwise land on whichever lake ran first."""
    command = _cli_args(pair, LOCAL, master)
    target = _fresh_copy(pair, LOCAL, pristine, shape, -1, command.lake_option)
    started = time.monotonic()
    compact_stream(spark, target, options_from_args(command))
    drop_table(target.storage)
    print(f"  warm-up (local lake, untimed): {time.monotonic() - started:.2f}s", flush=True)


def _command_flags(pair: LakePair, lake: str, redact: bool = False) -> list[str]:
    """``liftlog compact``'s arguments for this lake: the stream and, for S3, the store."""
    flags = [BENCH_STREAM]
    for name, value in pair.options(lake).items():
        shown = "..." if redact and "secret" in name else value
        flags += ["--lake-option", f"{name.upper()}={shown}"]
    return flags


def _cli_args(pair: LakePair, lake: str, master: str) -> argparse.Namespace:
    """The command's flags parsed by the CLI's own parser (its defaults are the job's)."""
    return build_parser().parse_args(["compact", *_command_flags(pair, lake), "--master", master])


def _fresh_copy(
    pair: LakePair,
    lake: str,
    pristine: Path,
    shape: TableShape,
    run: int,
    lake_option: list[str] | None,
) -> CompactionTarget:
    """A byte-for-byte copy of the pristine table on ``lake`` (untimed), as the command's
    target: the table, its partitions, and the store options of ``--lake-option``."""
    storage = pair.storage(lake, f"{BENCH_STREAM}-{run + 1}")
    if storage.is_local:
        shutil.copytree(pristine, storage.uri)
    else:
        filesystem, path = storage.filesystem()
        pafs.copy_files(
            str(pristine),
            path,
            source_filesystem=pafs.LocalFileSystem(),
            destination_filesystem=filesystem,
        )
    return CompactionTarget(
        BENCH_STREAM,
        storage.uri,
        shape.partitions,
        DAY_MS,
        storage_options=parse_lake_options(lake_option or ()),
    )


def _check(report: CompactionReport, rows: int, lake: str) -> None:
    """Every run must have compacted the whole table, or its time means nothing."""
    failed = report.maintenance is not None and report.maintenance.error is not None
    if not report.committed or report.records_before != rows or failed:
        raise BenchError(
            f"{LAKE_TITLES[lake]}: the compaction did not run through: {report.message} "
            f"({report.records_before:,} of {rows:,} rows"
            + (
                f"; maintenance: {report.maintenance.error}"
                if failed and report.maintenance
                else ""
            )
            + ")"
        )


def _jvm_peak_rss_mb(spark: SparkSession) -> float | None:
    try:
        return round(peak_rss_mb(jvm_pid(spark)), 1)
    except BenchError:
        return None


def _spreads(done: list[tuple[float, CompactionReport]], rows: int) -> dict[str, Spread]:
    totals = [seconds for seconds, _ in done]
    jobs = [report.elapsed_s for _, report in done]
    return {
        "total_seconds": Spread.of(totals),
        "compaction_seconds": Spread.of(jobs),
        "maintenance_seconds": Spread.of([t - j for t, j in zip(totals, jobs, strict=True)]),
        "rows_per_s": Spread.of([rows / t for t in totals]),
    }


def _lake_result(done: list[tuple[float, CompactionReport]], rows: int) -> JsonObject:
    first = done[0][1]
    return {
        **spreads_json(_spreads(done, rows)),
        "files_added": sum(p.files_added for p in first.partitions),
        "files_removed": sum(p.files_removed for p in first.partitions),
    }


def _seconds_ratio(reports: dict[str, list[tuple[float, CompactionReport]]]) -> float | None:
    totals = {lake: Spread.of([s for s, _ in done]) for lake, done in reports.items()}
    value = ratio(totals[S3], totals[LOCAL])
    return None if value is None else round(value, 3)


def _print(result: JsonObject) -> None:
    s = result["settings"]
    print()
    print(
        f"Compaction, {result['rows_before']:,} rows -> {result['rows_after']:,}, "
        f"{s['partitions']} partitions x {s['files_per_partition']} files, {s['master']}, "
        f"{s['runs']} run(s) ({result['machine']['summary']}; load average "
        f"{result['load_average']['start']} at start, {result['load_average']['end']} at end)"
    )
    print(f"  as: {s['command']}")
    rows = []
    for figure, label, decimals in (
        ("total_seconds", "liftlog compact (job + maintenance), s", 2),
        ("compaction_seconds", "compaction (plan, Spark job, commit), s", 2),
        ("maintenance_seconds", "maintenance (pack small files, vacuum), s", 2),
        ("rows_per_s", "rows/s (of the whole run)", 0),
    ):
        spreads = {lake: Spread.of(result["lakes"][lake][figure]["runs"]) for lake in LAKES}
        rows.append((label, spreads, decimals))
    print(figures_table(rows))
    rss = result["peak_rss_mb"]
    print(
        f"  S3 / local time (medians) {result['s3_over_local_seconds']:.2f}x; peak RSS: bench "
        f"process {rss['bench_process']} MB, Spark JVM {rss['spark_jvm']} MB, SeaweedFS "
        f"{rss['seaweedfs']} MB"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/compact_s3.py", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--files-per-partition", type=int, default=10)
    p.add_argument("--master", default="local[2]")
    add_common_flags(p)
    return p


if __name__ == "__main__":
    sys.exit(main())
