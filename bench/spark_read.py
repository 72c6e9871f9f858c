"""Batch read throughput of ``format("liftlog")`` beside Spark's native Parquet scan of the same
lake files, in one run on one machine.

Run from the repository root (``make bench-spark`` does this)::

    PYTHONPATH=. .venv/bin/python bench/spark_read.py --json bench/results-spark-read.json
    PYTHONPATH=. .venv/bin/python bench/spark_read.py --records 1000000   # a quicker run

It starts a one-node stack whose lake exports only on flush, fills a stream with N records of
100 random bytes, flushes it into the Delta table, and times one full-row aggregation (every
column is decoded: a Python source cannot prune columns in Spark 4.3) over the stream through
the liftlog source and over the snapshot's Parquet files through ``spark.read.parquet``, best
of ``--rounds`` after a warm-up. A second, unflushed stream measures the tail path (REST
fetches from the leader). Nothing is asserted: the figures are printed and saved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.spark_read_data import fill
from datasource.lake_view import load_lake_view
from spark_log.bench.machine import describe_machine
from spark_log.embedded.process import free_port
from spark_log.embedded.standalone import Standalone
from spark_log.rest import RestClient

DEFAULT_RECORDS = 10_000_000
DEFAULT_TAIL_RECORDS = 1_000_000
DEFAULT_PARTITIONS = 2
DEFAULT_ROUNDS = 3
VALUE_BYTES = 100
FLUSH_TIMEOUT_S = 1800.0
TARGET_RATIO = 0.5
NATIVE_SCHEMA = (
    "partition INT, offset BIGINT, timestamp TIMESTAMP, key BINARY, value BINARY, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>, subject STRING"
)
AGGREGATES = (
    "count(*) AS records, sum(length(value)) AS value_bytes, max(offset) AS max_offset, "
    "count(DISTINCT partition) AS partitions, max(timestamp) AS newest, "
    "sum(length(key)) AS key_bytes, count(subject) AS subjects"
)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory(prefix="liftlog-spark-bench-") as tmp:
        stack = Standalone(
            nodes=1,
            data_dir=Path(args.data_dir or tmp),
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port(),
            node_overrides={
                "lake": {"export_interval_s": 86400.0, "flush_timeout_s": FLUSH_TIMEOUT_S}
            },
        )
        print("starting NATS, ZooKeeper and one node ...", flush=True)
        stack.start()
        try:
            result = _run(args, stack.nodes[0].api_url)
        finally:
            stack.stop()
    _print(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0


def _run(args: argparse.Namespace, api: str) -> dict[str, Any]:
    rest = RestClient(api, FLUSH_TIMEOUT_S)
    load_start = os.getloadavg()
    lake_stream, tail_stream = "bench-lake", "bench-tail"
    for name in (lake_stream, tail_stream):
        rest.request(
            "POST",
            "/v1/streams",
            json_body={"name": name, "subject": f"{name}.in", "partitions": args.partitions},
        )
    fill_s = asyncio.run(
        fill(api, lake_stream, args.partitions, args.records, VALUE_BYTES, "lake stream")
    )
    print(
        f"published {args.records:,} records in {fill_s:.1f}s; exporting to the lake ...",
        flush=True,
    )
    started = time.monotonic()
    flushed = rest.request("POST", f"/v1/streams/{lake_stream}/flush").json()
    export_s = time.monotonic() - started
    uri = flushed["lake"]["uri"]
    lake = load_lake_view(uri, lake_stream, args.partitions)
    files = [f.path for fs in lake.files.values() for f in fs] if lake else []
    print(f"exported in {export_s:.1f}s: {len(files)} Parquet files", flush=True)
    asyncio.run(
        fill(api, tail_stream, args.partitions, args.tail_records, VALUE_BYTES, "tail stream")
    )
    spark = _spark()
    try:
        liftlog = _time(
            spark, lambda: _liftlog(spark, api, lake_stream), args.rounds, "liftlog (lake)"
        )
        native = _time(spark, lambda: _native(spark, uri, files), args.rounds, "native Parquet")
        tail = _time(
            spark, lambda: _liftlog(spark, api, tail_stream), args.rounds, "liftlog (tail)"
        )
    finally:
        spark.stop()
    return {
        "machine": describe_machine("embedded"),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "records": args.records,
        "value_bytes": VALUE_BYTES,
        "partitions": args.partitions,
        "spark_master": "local[2]",
        "fill": {"seconds": round(fill_s, 2), "records_per_s": round(args.records / fill_s)},
        "export": {"seconds": round(export_s, 2), "files": len(files)},
        "liftlog_lake": _figures(liftlog, args.records),
        "native_parquet": _figures(native, args.records),
        "ratio_vs_native": round(min(native) / min(liftlog), 3),
        "target_ratio": TARGET_RATIO,
        "tail_records": args.tail_records,
        "liftlog_tail": _figures(tail, args.tail_records),
    }


def _spark() -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("liftlog-spark-read-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _liftlog(spark: Any, api: str, stream: str) -> dict[str, Any]:
    df = spark.read.format("liftlog").option("servers", api).option("stream", stream).load()
    return df.selectExpr(*AGGREGATES.split(", ")).first().asDict()


def _native(spark: Any, uri: str, files: list[str]) -> dict[str, Any]:
    df = spark.read.option("basePath", uri).schema(NATIVE_SCHEMA).parquet(*files)
    return df.selectExpr(*AGGREGATES.split(", ")).first().asDict()


def _time(spark: Any, query: Any, rounds: int, label: str) -> list[float]:
    """Seconds per round after one warm-up run (planning, Python workers, page cache)."""
    first = query()
    print(f"  {label}: warm-up {first}", flush=True)
    seconds = []
    for i in range(rounds):
        started = time.perf_counter()
        query()
        seconds.append(time.perf_counter() - started)
        print(f"  {label}: round {i + 1} {seconds[-1]:.2f}s", flush=True)
    return seconds


def _figures(seconds: list[float], records: int) -> dict[str, Any]:
    best = min(seconds)
    return {
        "seconds": [round(s, 3) for s in seconds],
        "best_seconds": round(best, 3),
        "rows_per_s": round(records / best),
    }


def _print(result: dict[str, Any]) -> None:
    print()
    print(
        f"Spark batch read, {result['records']:,} records of {result['value_bytes']} B, "
        f"{result['partitions']} partitions, {result['spark_master']} "
        f"({result['machine']['summary']})"
    )
    rows = [
        ("liftlog source, lake", result["liftlog_lake"]),
        ("native Parquet scan, same files", result["native_parquet"]),
        (f"liftlog source, tail only ({result['tail_records']:,} records)", result["liftlog_tail"]),
    ]
    for label, fig in rows:
        print(f"  {label:<48} {fig['rows_per_s']:>12,} rows/s   best {fig['best_seconds']:.2f}s")
    print(f"  liftlog / native: {result['ratio_vs_native']:.2f}x (target >= {TARGET_RATIO}x)")


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
