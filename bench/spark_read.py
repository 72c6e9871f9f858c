"""Batch read throughput of ``format("liftlog")`` beside Spark's native Parquet scan of the same
lake files, in one run on one machine.

Run from the repository root (``make bench-spark`` does this)::

    PYTHONPATH=. .venv/bin/python bench/spark_read.py --json bench/results-spark-read.json
    PYTHONPATH=. .venv/bin/python bench/spark_read.py --records 1000000   # a quicker run

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
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.spark_cpu import tree_cpu_seconds
from bench.spark_read_data import fill
from datasource.lake_view import load_lake_view
from liftlog.bench.machine import describe_machine
from liftlog.embedded.process import free_port
from liftlog.embedded.standalone import Standalone
from spark_log.api_models import FlushResult
from spark_log.rest import RestClient

DEFAULT_RECORDS = 10_000_000
DEFAULT_TAIL_RECORDS = 1_000_000
DEFAULT_PARTITIONS = 2
DEFAULT_ROUNDS = 5
VALUE_BYTES = 100
FLUSH_TIMEOUT_S = 1800.0
TARGET_RATIO = 0.5
MANUAL_EXPORT = {
    "export_interval_s": 86400.0,
    "export_min_bytes": 2**40,
    "flush_timeout_s": FLUSH_TIMEOUT_S,
}
"""Export only on flush: no export competes with the reads, and the tail stream stays a tail."""
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
            node_overrides={"lake": MANUAL_EXPORT},
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
    flushed = FlushResult.from_json(rest.request("POST", f"/v1/streams/{lake_stream}/flush").json())
    export_s = time.monotonic() - started
    if flushed.lake is None:
        raise SystemExit("the nodes run without a lake; this benchmark reads from one")
    uri = flushed.lake.uri
    lake = load_lake_view(uri, lake_stream, args.partitions)
    files = [f.path for fs in lake.files.values() for f in fs] if lake else []
    print(f"exported in {export_s:.1f}s: {len(files)} Parquet files", flush=True)
    asyncio.run(
        fill(api, tail_stream, args.partitions, args.tail_records, VALUE_BYTES, "tail stream")
    )
    spark = _spark()
    try:
        sides = {
            "liftlog (lake)": lambda: _liftlog_df(spark, api, lake_stream),
            "native Parquet": lambda: _native_df(spark, uri, files),
        }
        timed = _time_interleaved(spark, sides, args.rounds)
        liftlog, native = timed["liftlog (lake)"], timed["native Parquet"]
        tail_side = {"liftlog (tail)": lambda: _liftlog_df(spark, api, tail_stream)}
        tail = _time_interleaved(spark, tail_side, args.rounds)["liftlog (tail)"]
    finally:
        spark.stop()
    return {
        "machine": _machine(),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "records": args.records,
        "value_bytes": VALUE_BYTES,
        "partitions": args.partitions,
        "spark_master": "local[2]",
        "fill": {"seconds": round(fill_s, 2), "records_per_s": round(args.records / fill_s)},
        "export": {"seconds": round(export_s, 2), "files": len(files)},
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


def _machine() -> dict[str, Any]:
    """The machine, with the versions that matter here (Spark, pyarrow, deltalake)."""
    import pyspark

    machine = describe_machine("n/a")
    machine["pyspark"] = pyspark.__version__
    machine["deltalake"] = metadata.version("deltalake")
    machine["summary"] = (
        f"{machine['cpus']} CPUs, {machine['cpu_model'] or 'unknown CPU'}, "
        f"{machine['memory_mib'] // 1024} GiB RAM, Python {machine['python']}, "
        f"pyspark {machine['pyspark']}, pyarrow {machine['pyarrow']}, "
        f"deltalake {machine['deltalake']}"
    )
    return machine


def _spark() -> Any:
    from datasource.local_spark import local_session

    return local_session("liftlog-spark-read-bench", extra={"spark.driver.memory": "4g"})


def _liftlog_df(spark: Any, api: str, stream: str) -> Any:
    return spark.read.format("liftlog").option("servers", api).option("stream", stream).load()


def _native_df(spark: Any, uri: str, files: list[str]) -> Any:
    return spark.read.option("basePath", uri).schema(NATIVE_SCHEMA).parquet(*files)


def _aggregate(df: Any) -> dict[str, Any]:
    return df.selectExpr(*AGGREGATES.split(", ")).first().asDict()


def _time_interleaved(
    spark: Any, sides: dict[str, Any], rounds: int
) -> dict[str, dict[str, list[float]]]:
    """Per round and side, a ``query`` on a fresh DataFrame (planning included: for liftlog one
    describe, one Delta snapshot and Spark's Python planner workers) and a ``scan`` re-running an
    already planned DataFrame (what the read itself costs), each in wall seconds and in CPU
    seconds of Spark's JVM and Python workers. Sides alternate within a round, so load from
    elsewhere on the machine hits both alike; one warm-up each first."""
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    planned = {}
    for label, make_df in sides.items():
        planned[label] = make_df()
        print(f"  {label}: warm-up {_aggregate(planned[label])}", flush=True)
    kinds = ("query", "scan", "query_cpu", "scan_cpu")
    figures = {label: {kind: [] for kind in kinds} for label in sides}
    for i in range(rounds):
        for label, make_df in sides.items():
            for kind, df_of in (("query", make_df), ("scan", lambda label=label: planned[label])):
                cpu, started = tree_cpu_seconds(jvm), time.perf_counter()
                _aggregate(df_of())
                figures[label][kind].append(time.perf_counter() - started)
                figures[label][f"{kind}_cpu"].append(tree_cpu_seconds(jvm) - cpu)
            f = figures[label]
            print(
                f"  {label}: round {i + 1}: query {f['query'][-1]:.2f}s "
                f"(cpu {f['query_cpu'][-1]:.2f}s), scan {f['scan'][-1]:.2f}s "
                f"(cpu {f['scan_cpu'][-1]:.2f}s)",
                flush=True,
            )
    return figures


def _median_ratio(native: list[float], liftlog: list[float]) -> float:
    """Median over median: the figure a single best round cannot flatter."""
    return round(statistics.median(native) / statistics.median(liftlog), 3)


def _figures(seconds: dict[str, list[float]], records: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, values in seconds.items():
        best = min(values)
        unit = "rows_per_cpu_s" if kind.endswith("_cpu") else "rows_per_s"
        out[kind] = {
            "seconds": [round(s, 3) for s in values],
            "best_seconds": round(best, 3),
            unit: round(records / best) if best > 0 else None,
        }
    return out


def _print(result: dict[str, Any]) -> None:
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
