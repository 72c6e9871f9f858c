"""Batch read throughput of ``format("liftlog")`` beside Spark's native Parquet scan of the same
lake files, in one run on one machine.

Run from the repository root (``make bench-spark`` does this)::

    .venv/bin/python bench/spark_read.py --json bench/results/spark-read.json
    .venv/bin/python bench/spark_read.py --records 1000000   # a quicker run

It starts a one-node stack whose lake exports only on flush, fills a stream with N records of
100 random bytes, flushes it into the Delta table, and times one full-row aggregation (every
column is decoded: a Python source cannot prune columns in Spark 4.3) through the liftlog
source and through ``spark.read.parquet`` over the snapshot's files. Each round times both
sides, alternately, twice: a ``query`` on a fresh DataFrame (planning included) and a ``scan``
re-running a planned one; the best round counts, and the ratio of the medians is printed beside
it. A second, unflushed stream measures the tail path (REST fetches from the leader). Nothing
is asserted: figures are printed and saved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from liftlog.bench.lake.fill import fill
from liftlog.bench.lake.spark_reads import (
    create_stream,
    fill_and_flush,
    liftlog_df,
    native_df,
    one_node_stack,
    spark_session,
    time_interleaved,
)
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_lake_machine

DEFAULT_RECORDS = 10_000_000
DEFAULT_TAIL_RECORDS = 1_000_000
DEFAULT_PARTITIONS = 2
DEFAULT_ROUNDS = 5
VALUE_BYTES = 100
TARGET_RATIO = 0.5
MACHINE_DISTRIBUTIONS = ("pyspark", "pyarrow", "deltalake")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with (
        tempfile.TemporaryDirectory(prefix="liftlog-spark-bench-") as tmp,
        one_node_stack(Path(args.data_dir or tmp)) as api,
    ):
        result = _run(args, api)
    _print(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0


def _run(args: argparse.Namespace, api: str) -> JsonObject:
    load_start = os.getloadavg()
    lake_stream, tail_stream = "bench-lake", "bench-tail"
    for name in (lake_stream, tail_stream):
        create_stream(api, name, args.partitions)
    lake = fill_and_flush(api, lake_stream, args.partitions, args.records, VALUE_BYTES)
    asyncio.run(
        fill(api, tail_stream, args.partitions, args.tail_records, VALUE_BYTES, "tail stream")
    )
    spark = spark_session("liftlog-spark-read-bench")
    try:
        sides = {
            "liftlog (lake)": lambda: liftlog_df(spark, api, lake_stream),
            "native Parquet": lambda: native_df(spark, lake.table_uri, lake.files),
        }
        timed = time_interleaved(spark, sides, args.rounds)
        liftlog, native = timed["liftlog (lake)"], timed["native Parquet"]
        tail_side = {"liftlog (tail)": lambda: liftlog_df(spark, api, tail_stream)}
        tail = time_interleaved(spark, tail_side, args.rounds)["liftlog (tail)"]
    finally:
        spark.stop()
    return {
        "machine": describe_lake_machine(MACHINE_DISTRIBUTIONS),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "records": args.records,
        "value_bytes": VALUE_BYTES,
        "partitions": args.partitions,
        "spark_master": "local[2]",
        "fill": {
            "seconds": round(lake.fill_s, 2),
            "records_per_s": round(args.records / lake.fill_s),
        },
        "export": {"seconds": round(lake.export_s, 2), "files": len(lake.files)},
        "liftlog_lake": _figures(liftlog, args.records),
        "native_parquet": _figures(native, args.records),
        "scan_ratio_vs_native": round(min(native["scan"]) / min(liftlog["scan"]), 3),
        "query_ratio_vs_native": round(min(native["query"]) / min(liftlog["query"]), 3),
        "scan_cpu_ratio_vs_native": round(min(native["scan_cpu"]) / min(liftlog["scan_cpu"]), 3),
        "median_scan_ratio_vs_native": _median_ratio(native["scan"], liftlog["scan"]),
        "median_scan_cpu_ratio_vs_native": _median_ratio(native["scan_cpu"], liftlog["scan_cpu"]),
        "target_ratio": TARGET_RATIO,
        "tail_records": args.tail_records,
        "liftlog_tail": _figures(tail, args.tail_records),
    }


def _median_ratio(native: list[float], liftlog: list[float]) -> float:
    """Median over median: the figure a single best round cannot flatter."""
    return round(statistics.median(native) / statistics.median(liftlog), 3)


def _figures(seconds: dict[str, list[float]], records: int) -> JsonObject:
    out: JsonObject = {}
    for kind, values in seconds.items():
        best = min(values)
        unit = "rows_per_cpu_s" if kind.endswith("_cpu") else "rows_per_s"
        out[kind] = {
            "seconds": [round(s, 3) for s in values],
            "best_seconds": round(best, 3),
            unit: round(records / best) if best > 0 else None,
        }
    return out


def _print(result: JsonObject) -> None:
    print()
    print(
        f"Spark batch read, {result['records']:,} records of {result['value_bytes']} B, "
        f"{result['partitions']} partitions, {result['spark_master']} "
        f"({result['machine']['summary']})"
    )
    print(f"  {'':<48} {'scan rows/s':>12} {'query rows/s':>13} {'scan rows/CPU-s':>16}")
    rows = [
        ("liftlog source, lake", result["liftlog_lake"]),
        ("native Parquet scan, same files", result["native_parquet"]),
        (f"liftlog source, tail only ({result['tail_records']:,} records)", result["liftlog_tail"]),
    ]
    for label, fig in rows:
        print(
            f"  {label:<48} {fig['scan']['rows_per_s']:>12,} {fig['query']['rows_per_s']:>13,} "
            f"{fig['scan_cpu']['rows_per_cpu_s']:>16,}"
        )
    print(
        f"  liftlog / native: scan {result['scan_ratio_vs_native']:.2f}x, "
        f"query {result['query_ratio_vs_native']:.2f}x, "
        f"scan per CPU second {result['scan_cpu_ratio_vs_native']:.2f}x "
        f"(target >= {TARGET_RATIO}x); medians of the rounds: scan "
        f"{result['median_scan_ratio_vs_native']:.2f}x, "
        f"per CPU second {result['median_scan_cpu_ratio_vs_native']:.2f}x"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    p.add_argument("--tail-records", type=int, default=DEFAULT_TAIL_RECORDS)
    p.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS)
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--data-dir", help="keep the stack's files here (default: a temp dir)")
    return p


if __name__ == "__main__":
    sys.exit(main())
