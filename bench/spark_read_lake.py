"""Batch reads through ``spark.read.format("liftlog")`` from an ``s3://`` lake (SeaweedFS)
beside the same table on a local lake, with Spark's native Parquet scan of the local files as
the peer, in one run.

Run from the repository root (``make bench-lake`` runs this with the sizes below)::

    .venv/bin/python bench/spark_read_lake.py --json bench/results/lake-read.json
    .venv/bin/python bench/spark_read_lake.py --records 20000 --runs 1

One node (lake on local disk, exporting only on flush) takes N records of 100 random bytes,
flushes them into the stream's Delta table, and the table's files are copied byte for byte to
a bucket on the embedded SeaweedFS: the same table, in two stores. The liftlog source reads the
local one as the node describes it, and the S3 one through ``lakeUri`` and ``lake.<NAME>``
options (its tasks open the files with pyarrow's S3 filesystem). Spark's own Parquet reader
cannot open ``s3://`` here (no S3A connector), so the native peer reads the local files only.

Two queries, each timed per run on every side (sides alternate within a run): ``count`` of
every record, and a filtered aggregation (one partition, the upper half of its offsets, with
``filterPushdown``, so the source reads only the row groups it needs). Each query is timed as
a ``query`` on a fresh DataFrame (planning included: the describe and the Delta snapshot, from
S3 for the S3 side) and as a ``scan`` re-running a planned one; rows/s counts the rows the
query aggregates.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import pyarrow.fs as pafs
from pyspark.sql import DataFrame

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
from liftlog.bench.lake.pair import (
    LOCAL,
    S3,
    LakePair,
    lake_pair,
)
from liftlog.bench.lake.spark_cpu import jvm_pid
from liftlog.bench.lake.spark_reads import (
    FlushedStream,
    Query,
    create_stream,
    fill_and_flush,
    liftlog_df,
    native_df,
    one_node_stack,
    one_row,
    snapshot_files,
    spark_session,
    time_interleaved,
)
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_lake_machine
from liftlog.bench.toolkit.node_probe import peak_rss_mb
from liftlog.bench.toolkit.spread import Spread, ratio

DEFAULT_RECORDS = 4_000_000
DEFAULT_PARTITIONS = 2
VALUE_BYTES = 100
STREAM = "bench-lake-read"
LIFTLOG_LOCAL = "liftlog_local"
LIFTLOG_S3 = "liftlog_s3"
NATIVE_LOCAL = "native_local"
SIDE_TITLES = {
    LIFTLOG_LOCAL: "liftlog, local lake",
    LIFTLOG_S3: "liftlog, S3 lake",
    NATIVE_LOCAL: "native Parquet, local files",
}
SIDE_LAKES = {LIFTLOG_LOCAL: LOCAL, LIFTLOG_S3: S3, NATIVE_LOCAL: LOCAL}
KINDS = ("query", "scan")
PUSHDOWN_SESSION = {"spark.sql.python.filterPushdown.enabled": "true"}
"""Spark hands a Python source its filters only with this on (``filterPushdown`` is the
source's own switch)."""
FILTERED_AGGREGATES = (
    "count(*) AS records",
    "sum(length(value)) AS value_bytes",
    "max(timestamp) AS newest",
)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    check_runs(args.runs)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    load_start = load_average()
    with (
        lake_pair("liftlog-bench-lake-read-") as pair,
        one_node_stack(pair.work / "stack") as api,
    ):
        create_stream(api, STREAM, args.partitions)
        flushed = fill_and_flush(api, STREAM, args.partitions, args.records, VALUE_BYTES)
        s3_uri, copy_s = _copy_to_s3(pair, flushed, args.partitions)
        measured = _measure(args, api, pair, flushed, s3_uri)
    result = {
        "bench": "lake-read",
        "machine": describe_lake_machine(),
        "load_average": {"start": load_start, "end": load_average()},
        "settings": {
            "records": args.records,
            "value_bytes": VALUE_BYTES,
            "partitions": args.partitions,
            "runs": args.runs,
            "spark_master": "local[2]",
            "filter": _filter(args),
        },
        "prepare": {
            "fill_seconds": round(flushed.fill_s, 2),
            "export_seconds": round(flushed.export_s, 2),
            "files": len(flushed.files),
            "copy_to_s3_seconds": round(copy_s, 2),
        },
        "queries": measured["queries"],
        "peak_rss_mb": {
            "bench_process": own_peak_rss_mb(),
            "spark_jvm": measured["jvm_peak_rss_mb"],
            "seaweedfs": pair.seaweedfs_peak_rss_mb,
        },
    }
    _print(result)
    write_json(args.json, result)
    return 0


def _copy_to_s3(pair: LakePair, flushed: FlushedStream, partitions: int) -> tuple[str, float]:
    """The local table's files, byte for byte, under the S3 lake (its Delta log holds
    relative paths, so the copy is the same table); the S3 URI and the seconds it took."""
    name = flushed.table_uri.rstrip("/").rsplit("/", 1)[-1]
    storage = pair.storage(S3, name)
    filesystem, path = storage.filesystem()
    started = time.monotonic()
    pafs.copy_files(
        flushed.table_uri,
        path,
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=filesystem,
    )
    seconds = time.monotonic() - started
    copied = snapshot_files(storage, flushed.name, partitions)
    if len(copied) != len(flushed.files):
        raise BenchError(
            f"the S3 copy of {flushed.table_uri} lists {len(copied)} files, "
            f"expected {len(flushed.files)}"
        )
    print(f"copied the table to {storage.uri} in {seconds:.1f}s", flush=True)
    return storage.uri, seconds


def _measure(
    args: argparse.Namespace, api: str, pair: LakePair, flushed: FlushedStream, s3_uri: str
) -> JsonObject:
    s3_options = {"lakeUri": s3_uri, **{f"lake.{k}": v for k, v in pair.options(S3).items()}}
    pushdown = {"filterPushdown": "true"}
    spark = spark_session("liftlog-lake-read-bench", PUSHDOWN_SESSION)
    try:
        sides = {
            LIFTLOG_LOCAL: lambda: liftlog_df(spark, api, STREAM, pushdown),
            LIFTLOG_S3: lambda: liftlog_df(spark, api, STREAM, {**pushdown, **s3_options}),
            NATIVE_LOCAL: lambda: native_df(spark, flushed.table_uri, flushed.files),
        }
        queries: JsonObject = {}
        for name, query in _queries(args).items():
            print(f"{name}:", flush=True)
            rows = int(query(sides[LIFTLOG_LOCAL]())["records"])
            timed = time_interleaved(spark, sides, args.runs, query)
            queries[name] = _query_result(rows, timed)
        jvm_rss = peak_rss_mb(jvm_pid(spark))
    finally:
        spark.stop()
    return {"queries": queries, "jvm_peak_rss_mb": round(jvm_rss, 1)}


def _filter(args: argparse.Namespace) -> str:
    """One partition, the upper half of its offsets (the fill spreads records evenly)."""
    return f"partition = 0 AND offset >= {args.records // args.partitions // 2}"


def _queries(args: argparse.Namespace) -> dict[str, Query]:
    condition = _filter(args)

    def count(df: DataFrame) -> JsonObject:
        return one_row(df.selectExpr("count(*) AS records"))

    def filtered(df: DataFrame) -> JsonObject:
        return one_row(df.where(condition).selectExpr(*FILTERED_AGGREGATES))

    return {"count": count, "filtered_aggregation": filtered}


def _query_result(rows: int, timed: dict[str, dict[str, list[float]]]) -> JsonObject:
    sides: JsonObject = {}
    rates: dict[str, dict[str, Spread]] = {}
    for side, figures in timed.items():
        sides[side] = {"lake": SIDE_LAKES[side]}
        rates[side] = {}
        for kind in KINDS:
            seconds = Spread.of(figures[kind])
            rates[side][kind] = Spread.of([rows / s for s in figures[kind]])
            cpu = Spread.of(figures[f"{kind}_cpu"])
            sides[side][kind] = spreads_json(
                {"seconds": seconds, "rows_per_s": rates[side][kind], "cpu_seconds": cpu}
            )
    return {
        "rows": rows,
        "sides": sides,
        "s3_over_local": _ratios(rates, LIFTLOG_S3, LIFTLOG_LOCAL),
        "liftlog_local_over_native": _ratios(rates, LIFTLOG_LOCAL, NATIVE_LOCAL),
    }


def _ratios(rates: dict[str, dict[str, Spread]], top: str, bottom: str) -> JsonObject:
    """rows/s of ``top`` over ``bottom``, medians over medians, per kind."""
    out: JsonObject = {}
    for kind in KINDS:
        value = ratio(rates[top][kind], rates[bottom][kind])
        out[kind] = None if value is None else round(value, 3)
    return out


def _print(result: JsonObject) -> None:
    s = result["settings"]
    print()
    print(
        f"Spark batch read, {s['records']:,} records of {s['value_bytes']} B, "
        f"{s['partitions']} partitions, {s['spark_master']}, {s['runs']} run(s) "
        f"({result['machine']['summary']}; load average {result['load_average']['start']} "
        f"at start, {result['load_average']['end']} at end)"
    )
    rows = []
    for name, q in result["queries"].items():
        for kind in KINDS:
            spreads = {
                side: Spread.of(figures[kind]["rows_per_s"]["runs"])
                for side, figures in q["sides"].items()
            }
            rows.append((f"{name} ({q['rows']:,} rows), {kind}, rows/s", spreads, 0))
    print(figures_table(rows, SIDE_TITLES))
    for name, q in result["queries"].items():
        s3, native = q["s3_over_local"], q["liftlog_local_over_native"]
        print(
            f"  {name}: S3 / local lake (medians) query {s3['query']:.2f}x, "
            f"scan {s3['scan']:.2f}x; liftlog local / native query {native['query']:.2f}x, "
            f"scan {native['scan']:.2f}x"
        )
    p, rss = result["prepare"], result["peak_rss_mb"]
    print(
        f"  filter: {s['filter']}; {p['files']} Parquet files, copied to S3 in "
        f"{p['copy_to_s3_seconds']}s; native Parquet reads the local files only (no S3A)"
    )
    print(
        f"  peak RSS: bench process {rss['bench_process']} MB, Spark JVM {rss['spark_jvm']} MB, "
        f"SeaweedFS {rss['seaweedfs']} MB"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/spark_read_lake.py", description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    p.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS)
    add_common_flags(p)
    return p


if __name__ == "__main__":
    sys.exit(main())
