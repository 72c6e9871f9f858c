"""What the Spark batch-read benchmarks share (``bench/spark_read.py``,
``bench/spark_read_lake.py``): a one-node stack whose lake exports only on flush, a flushed
stream, the SparkSession, the DataFrames of each side, the queries, and the interleaved timing
of sides.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from datasource.lake_view import load_lake_view
from liftlog.bench.errors import BenchError
from liftlog.bench.lake.fill import fill
from liftlog.bench.lake.spark_cpu import jvm_pid, tree_cpu_seconds
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.embedded.ports import free_port
from liftlog.embedded.standalone import Standalone
from spark_log.api_models import FlushResult
from spark_log.client.rest import RestClient
from spark_log.lake.storage import LakeStorage

FLUSH_TIMEOUT_S = 1800.0
MANUAL_EXPORT = {
    "export_interval_s": 86400.0,
    "export_min_bytes": 2**40,
    "flush_timeout_s": FLUSH_TIMEOUT_S,
}
"""Export only on flush: no export competes with the reads, and a tail stream stays a tail."""
NATIVE_SCHEMA = (
    "partition INT, offset BIGINT, timestamp TIMESTAMP, key BINARY, value BINARY, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>, subject STRING"
)
AGGREGATES = (
    "count(*) AS records, sum(length(value)) AS value_bytes, max(offset) AS max_offset, "
    "count(DISTINCT partition) AS partitions, max(timestamp) AS newest, "
    "sum(length(key)) AS key_bytes, count(subject) AS subjects"
)
"""One full-row aggregation: every column is decoded on every side (a Python source cannot
prune columns in Spark 4.3, so a narrow query would only flatter the native scan)."""
SPARK_EXTRA = {"spark.driver.memory": "4g"}

Query = Callable[[DataFrame], JsonObject]
"""A query over a side's DataFrame, returning its one result row."""


@dataclass(frozen=True)
class FlushedStream:
    """A stream whose records are all in its Delta table."""

    name: str
    records: int
    fill_s: float
    export_s: float
    table_uri: str
    files: list[str]


@contextmanager
def one_node_stack(data_dir: Path) -> Iterator[str]:
    """NATS, ZooKeeper and one node exporting only on flush; yields its REST URL."""
    stack = Standalone(
        nodes=1,
        data_dir=data_dir,
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port(),
        liftbridge_port=free_port(),
        node_overrides={"lake": MANUAL_EXPORT},
    )
    print("starting NATS, ZooKeeper and one node ...", flush=True)
    stack.start()
    try:
        yield stack.nodes[0].api_url
    finally:
        stack.stop()


def create_stream(api: str, name: str, partitions: int) -> None:
    RestClient(api, FLUSH_TIMEOUT_S).request(
        "POST",
        "/v1/streams",
        json_body={"name": name, "subject": f"{name}.in", "partitions": partitions},
    )


def fill_and_flush(
    api: str, stream: str, partitions: int, records: int, value_bytes: int
) -> FlushedStream:
    """Publish ``records`` into ``stream`` and flush them all into its Delta table."""
    fill_s = asyncio.run(fill(api, stream, partitions, records, value_bytes, stream))
    print(f"published {records:,} records in {fill_s:.1f}s; exporting to the lake ...", flush=True)
    started = time.monotonic()
    rest = RestClient(api, FLUSH_TIMEOUT_S)
    flushed = FlushResult.from_json(rest.request("POST", f"/v1/streams/{stream}/flush").json())
    export_s = time.monotonic() - started
    if flushed.lake is None:
        raise BenchError("the nodes run without a lake; this benchmark reads from one")
    uri = flushed.lake.uri
    files = snapshot_files(LakeStorage(uri), stream, partitions)
    print(f"exported in {export_s:.1f}s: {len(files)} Parquet files", flush=True)
    return FlushedStream(stream, records, fill_s, export_s, uri, files)


def snapshot_files(storage: LakeStorage, stream: str, partitions: int) -> list[str]:
    """The data files of the table's latest snapshot: what a liftlog read of it scans."""
    lake = load_lake_view(storage.uri, stream, partitions, storage)
    return [f.path for fs in lake.files.values() for f in fs] if lake else []


def spark_session(app_name: str, extra: dict[str, str] | None = None) -> SparkSession:
    from datasource.local_spark import local_session

    return local_session(app_name, extra={**SPARK_EXTRA, **(extra or {})})


def liftlog_df(
    spark: SparkSession, api: str, stream: str, options: dict[str, str] | None = None
) -> DataFrame:
    reader = spark.read.format("liftlog").option("servers", api).option("stream", stream)
    for name, value in (options or {}).items():
        reader = reader.option(name, value)
    return reader.load()


def native_df(spark: SparkSession, uri: str, files: list[str]) -> DataFrame:
    """Spark's own Parquet scan of exactly ``files`` (local paths: no S3A connector here)."""
    return spark.read.option("basePath", uri).schema(NATIVE_SCHEMA).parquet(*files)


def aggregate(df: DataFrame) -> JsonObject:
    """The full-row aggregation (``AGGREGATES``)."""
    return one_row(df.selectExpr(*AGGREGATES.split(", ")))


def one_row(df: DataFrame) -> JsonObject:
    """The one row an aggregation returns, by column name."""
    row = df.first()
    if row is None:
        raise BenchError("an aggregation returned no row")
    return dict(row.asDict())


def time_interleaved(
    spark: SparkSession,
    sides: dict[str, Callable[[], DataFrame]],
    rounds: int,
    query: Query = aggregate,
) -> dict[str, dict[str, list[float]]]:
    """Per round and side, a ``query`` on a fresh DataFrame (planning included: for liftlog one
    describe, one Delta snapshot and Spark's Python planner workers) and a ``scan`` re-running an
    already planned DataFrame (what the read itself costs), each in wall seconds and in CPU
    seconds of Spark's JVM and Python workers. Sides alternate within a round, so load from
    elsewhere on the machine hits both alike; one warm-up each first, whose results must agree
    (every side reads the same records)."""
    jvm = jvm_pid(spark)
    planned: dict[str, DataFrame] = {}
    answers: dict[str, JsonObject] = {}
    for label, make_df in sides.items():
        planned[label] = make_df()
        answers[label] = query(planned[label])
        print(f"  {label}: warm-up {answers[label]}", flush=True)
    if len({repr(a) for a in answers.values()}) > 1:
        raise BenchError(f"the sides disagree on the same records: {answers}")
    kinds = ("query", "scan", "query_cpu", "scan_cpu")
    figures: dict[str, dict[str, list[float]]] = {
        label: {kind: [] for kind in kinds} for label in sides
    }
    for i in range(rounds):
        for label, make_df in sides.items():
            for kind, df_of in (("query", make_df), ("scan", lambda label=label: planned[label])):
                cpu, started = tree_cpu_seconds(jvm), time.perf_counter()
                query(df_of())
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
