"""Freshness: publish → visible in a ``readStream.format("liftlog")`` micro-batch (1 s trigger),
and acked → visible in the stream's Delta table at the default export cadence.

Run from the repository root (``make bench-latency`` does this)::

    .venv/bin/python bench/stream_latency.py --json bench/results/latency.json

One local node (default config: lake on, ``export_interval_s`` 10 s). Each record carries its
publish wall-clock time; a ``foreachBatch`` sink notes when each record reaches the driver, so
the figure covers trigger wait, planning, the tail fetch from the leader and the batch itself.
The lake figure polls the table's app-transaction version for the partition until it passes
the acked offset. Nothing is asserted: the figures are printed and saved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from liftlog.bench.errors import BenchError
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.lake.layout import app_id

STREAM = "freshness"
DEFAULT_RATE_PER_S = 20
DEFAULT_SECONDS = 40
LAKE_SAMPLES = 5
LAKE_TIMEOUT_S = 120.0
DRAIN_TIMEOUT_S = 60.0


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Arrivals:
    """Driver-side notes of when each published record showed up in a micro-batch."""

    def __init__(self) -> None:
        self.lag_s: list[float] = []
        self.batches = 0
        self._lock = threading.Lock()

    def on_batch(self, frame: DataFrame, _batch_id: int) -> None:
        now = time.time()
        rows = frame.selectExpr("cast(value as string) as v").collect()
        with self._lock:
            self.batches += 1
            self.lag_s.extend(now - float(row.v) for row in rows)

    def count(self) -> int:
        with self._lock:
            return len(self.lag_s)


def start_query(
    spark: SparkSession, servers: str, arrivals: Arrivals, checkpoint: str
) -> StreamingQuery:
    frame = (
        spark.readStream.format("liftlog")
        .option("servers", servers)
        .option("stream", STREAM)
        .option("startingOffsets", "latest")
        .load()
    )
    return (
        frame.writeStream.foreachBatch(arrivals.on_batch)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )


async def publish_paced(client: Client, rate: int, seconds: int) -> int:
    count = rate * seconds
    t0 = time.monotonic()
    for i in range(count):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await client.publish(STREAM, repr(time.time()), partition=0)
    return count


async def lake_visibility(client: Client, table_uri: str) -> list[float]:
    """Ack → the table's transaction version for partition 0 passes the acked offset."""
    samples = []
    for _ in range(LAKE_SAMPLES):
        ack = await client.publish(STREAM, repr(time.time()), partition=0)
        acked = time.monotonic()
        if ack is None:
            raise BenchError(f"publish to {STREAM} returned no ack (ack policy none?)")
        deadline = acked + LAKE_TIMEOUT_S
        while time.monotonic() < deadline:
            version = await asyncio.to_thread(_lake_version, table_uri)
            if version is not None and version > ack.offset:
                samples.append(time.monotonic() - acked)
                break
            await asyncio.sleep(0.1)
    return samples


def _lake_version(table_uri: str) -> int | None:
    try:
        return DeltaTable(table_uri).transaction_version(app_id(STREAM, 0))
    except TableNotFoundError:  # before the first export
        return None


def spark_session() -> SparkSession:
    from datasource.local_spark import local_session

    return local_session("liftlog-freshness")


async def measure(stack: Standalone, spark: SparkSession, rate: int, seconds: int) -> JsonObject:
    arrivals = Arrivals()
    async with Client(stack.servers, nats_url=stack.nats.url) as client:
        created = await client.create_stream(STREAM, STREAM, partitions=1)
        with tempfile.TemporaryDirectory(prefix="liftlog-freshness-") as checkpoint:
            query = start_query(spark, stack.servers, arrivals, checkpoint)
            while query.lastProgress is None:  # the first (empty) micro-batch ran
                await asyncio.sleep(0.2)
            published = await publish_paced(client, rate, seconds)
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while arrivals.count() < published and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            query.stop()
        described = await client.describe_stream(STREAM)
        if described.lake is None:
            raise SystemExit("the nodes run without a lake; this benchmark measures it")
        lake = await lake_visibility(client, described.lake.uri)
    lag_ms = [s * 1000 for s in arrivals.lag_s]
    return {
        "stream_partitions": len(created.partitions),
        "rate_per_s": rate,
        "published": published,
        "seen_in_micro_batches": len(lag_ms),
        "micro_batches": arrivals.batches,
        "micro_batch_visibility_ms": {
            "p50": round(percentile(lag_ms, 0.5), 1),
            "p99": round(percentile(lag_ms, 0.99), 1),
            "max": round(max(lag_ms), 1),
            "mean": round(statistics.fmean(lag_ms), 1),
        },
        "lake_visibility_s": {
            "samples": [round(s, 2) for s in lake],
            "p50": round(percentile(lake, 0.5), 2) if lake else None,
            "max": round(max(lake), 2) if lake else None,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE_PER_S)
    parser.add_argument("--seconds", type=int, default=DEFAULT_SECONDS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    spark = spark_session()
    try:
        with Standalone.local(nodes=1) as stack:
            result = asyncio.run(measure(stack, spark, args.rate, args.seconds))
    finally:
        spark.stop()
    result["machine"] = describe_machine("")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
