"""``liftlog demo``: the main job on the embedded default, start to finish.

Starts NATS, ZooKeeper and three nodes; creates a stream replicated three times; publishes
sample events three ways
(plain NATS publishes recorded from the subject, acked single publishes, one producer batch);
reads everything back by offset and by time; runs a Spark query over what it read; stops.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import nats

from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.errors import LiftlogError
from spark_log.json_types import JsonObject

DEMO_STREAM = "demo-orders"
DEMO_SUBJECT = "demo.orders"
DEMO_PARTITIONS = 3
DEMO_NODES = 3
DEMO_REPLICATION_FACTOR = 3
CITIES = ("Lisbon", "Oslo", "Kyoto", "Lima", "Accra", "Perth")
BATCH_SHARE = 0.5
TAIL_EVENTS = 250
ORDER_SCHEMA = "order_id INT, city STRING, amount DOUBLE"


class DemoError(LiftlogError):
    """The demo's own check failed (Spark did not read back what was published)."""

    code = "demo_failed"


def run_demo(events: int = 5000, data_dir: str | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="liftlog-demo-") as tmp:
        root = Path(data_dir) if data_dir else Path(tmp)
        stack = Standalone(
            nodes=DEMO_NODES,
            data_dir=root,
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port_block(DEMO_NODES),
            liftbridge_port=free_port_block(DEMO_NODES),
        )
        started = time.monotonic()
        print(
            f"liftlog demo: starting NATS, ZooKeeper and {DEMO_NODES} ingest nodes ...", flush=True
        )
        stack.start()
        try:
            for name, url in stack.endpoints():
                print(f"  {name:<14} {url}", flush=True)
            print(f"  stack ready in {time.monotonic() - started:.1f}s", flush=True)
            api = ",".join(url for name, url in stack.endpoints() if name.endswith(" api"))
            nats_url = stack.nats.url
            summary = asyncio.run(_demo(api, nats_url, events))
            _spark_query(api, events + summary["tail_events"])
            print(json.dumps(summary, indent=2))
        except LiftlogError as exc:
            print(f"liftlog demo failed: {exc.code}: {exc.message}")
            return 1
        finally:
            stack.stop()
            print("liftlog demo: everything stopped", flush=True)
    return 0


def _event(i: int, rng: random.Random) -> dict[str, object]:
    return {"order_id": i, "city": rng.choice(CITIES), "amount": round(rng.uniform(1, 500), 2)}


async def _demo(api: str, nats_url: str, events: int) -> JsonObject:
    rng = random.Random(7)
    async with Client(api, nats_url=nats_url) as client:
        created = await client.create_stream(
            DEMO_STREAM,
            DEMO_SUBJECT,
            partitions=DEMO_PARTITIONS,
            replication_factor=DEMO_REPLICATION_FACTOR,
        )
        leaders = [p.leader for p in created.partitions]
        print(
            f"created stream {DEMO_STREAM} on {DEMO_SUBJECT} ({DEMO_PARTITIONS} partitions, "
            f"replication factor {DEMO_REPLICATION_FACTOR}, leaders on brokers {leaders})"
        )
        t0 = time.monotonic()
        wall_start_ms = int(time.time() * 1000)
        plain = events // 10
        batched = int((events - plain) * BATCH_SHARE)
        singles = events - plain - batched
        # Acked publishes first: the client retries until each partition's leader listens
        # (no_responders), while NATS drops a plain publish that finds nobody listening yet.
        acks = await asyncio.gather(
            *[
                client.publish(
                    DEMO_STREAM, json.dumps(_event(plain + i, rng)), key=f"customer-{i % 50}"
                )
                for i in range(singles)
            ]
        )
        batch_ack = await client.publish_batch(
            DEMO_STREAM,
            [json.dumps(_event(plain + singles + i, rng)) for i in range(batched)],
            partition=0,
        )
        await _plain_nats_publishes(nats_url, plain, rng)
        publish_s = time.monotonic() - t0
        print(
            f"published {events} events in {publish_s:.2f}s: {plain} plain NATS, "
            f"{len(acks)} acked singles, 1 producer batch of {batched}"
        )
        rows = await _read_back(client, events)
        since = await client.fetch(DEMO_STREAM, 0, timestamp_ms=wall_start_ms, max_records=1)
        flushed = await client.flush_stream(DEMO_STREAM)
        lake_offsets = {p.partition: p.lake_offset for p in flushed.partitions}
        print(f"exported to the Delta lake up to offsets {lake_offsets}")
        tail = await asyncio.gather(
            *[
                client.publish(DEMO_STREAM, json.dumps(_event(events + i, rng)))
                for i in range(TAIL_EVENTS)
            ]
        )
        print(f"published {len(tail)} more events, not yet in the lake (the live tail)")
    return {
        "events_published": events,
        "events_read_back": len(rows),
        "producer_batch_ack": {
            "partition": batch_ack.partition,
            "offset": batch_ack.offset,
            "count": batch_ack.count,
        }
        if batch_ack
        else None,
        "per_partition": dict(sorted(Counter(r["partition"] for r in rows).items())),
        "first_offset_by_time": since.records[0].offset if since.records else None,
        "publish_seconds": round(publish_s, 3),
        "lake_offsets": lake_offsets,
        "tail_events": len(tail),
    }


async def _plain_nats_publishes(nats_url: str, count: int, rng: random.Random) -> None:
    """What existing applications do: plain NATS publishes, no Liftlog client at all."""
    nc = await nats.connect(nats_url)
    for i in range(count):
        await nc.publish(f"{DEMO_SUBJECT}", json.dumps(_event(i, rng)).encode())
    await nc.flush()
    await nc.drain()


async def _read_back(client: Client, expected: int) -> list[JsonObject]:
    rows: list[JsonObject] = []
    deadline = time.monotonic() + 30
    offsets = dict.fromkeys(range(DEMO_PARTITIONS), 0)
    while len(rows) < expected and time.monotonic() < deadline:
        for p in range(DEMO_PARTITIONS):
            fetched = await client.fetch(DEMO_STREAM, p, offsets[p], max_records=5000, wait_ms=100)
            for r in fetched.records:
                rows.append({"partition": p, "offset": r.offset, **json.loads(r.value)})
            offsets[p] = fetched.next_offset
    print(f"read back {len(rows)} committed records by offset")
    return rows


def _spark_query(api: str, expected: int) -> None:
    """``spark.read.format("liftlog")`` over the stream just filled (local[2]): history from
    the Delta lake, the tail from the nodes, one DataFrame."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812

    print("starting Spark (local[2]) for a query over the stream ...", flush=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("liftlog-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = (
            spark.read.format("liftlog").option("servers", api).option("stream", DEMO_STREAM).load()
        )
        orders = df.select(
            "partition",
            "offset",
            F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"),
        ).select("partition", "offset", "o.*")
        total = orders.count()
        print(f'spark.read.format("liftlog"): {total} records (expected {expected})')
        result = (
            orders.groupBy("city")
            .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
            .orderBy(F.desc("revenue"))
        )
        print("revenue by city (Spark):")
        for row in result.collect():
            print(f"  {row['city']:<8} {row['orders']:>6} orders  {row['revenue']:>12,.2f}")
        if total != expected:
            raise DemoError(f"Spark read {total} records, expected {expected}")
    finally:
        spark.stop()
