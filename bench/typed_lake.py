"""Typed Delta tables of bound streams beside the binary table of an unbound stream, in one run.

Run from the repository root (``make bench-typed-lake`` does this)::

    .venv/bin/python bench/typed_lake.py --runs 3 --json bench/results/typed_lake.json

One embedded stack (``liftlog standalone``: NATS, ZooKeeper and one node, its lake a directory
in the data dir, every lake setting at its default) serves the streams and the schema
registry. One Avro and one JSON Schema subject are registered once; the same N records of ten
fields (a timestamp, a double, a nested struct, a string array among them) are published per
run, in producer batches, to fresh one-partition streams with ``ack_policy = "all"``: (a) an
unbound stream, as JSON text; (b) a stream bound to the Avro subject, Avro in Confluent's wire
format; (c) a stream bound to the JSON Schema subject, the same JSON text as (a).

1. lake export: from the last publish acked, ``POST /v1/streams/{s}/flush`` (the export of
   everything committed, as the Spark read benchmarks force it) until the partition's
   ``lake_offset`` is N; rows/s counts the rows the flush exported (the default cadence may
   have exported some while publishing: that count is shown);
2. publish -> typed row visible: records paced at ``--visible-rate`` for ``--visible-seconds``
   to a stream bound to the Avro subject, each carrying its send time in ``ts``; the Delta table
   is polled every ``POLL_INTERVAL_S`` and each record's first appearance noted (the poll
   interval, plus one poll's duration, bounds the resolution). The export cadence is the
   default: a round when the oldest unexported record is ``export_interval_s`` old or the
   unexported bytes reach ``export_min_bytes``;
3. a local Spark session reads each table's current Parquet files (no Delta jars here) and runs
   one aggregation (a filter on the timestamp, sums grouped by a string field) over (b)'s and
   (c)'s typed columns and over ``from_json`` of (a)'s binary value; the answers must agree.
   Each side's figure in a run is the median of ``SPARK_ROUNDS`` rounds.

Every figure is the median of the runs with their spread (min..max); every table is held
against what was acknowledged. Nothing is asserted; every process is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

from liftlog.bench.errors import BenchError
from liftlog.bench.jetstream.server import varz
from liftlog.bench.lake.spark_reads import spark_session, time_interleaved
from liftlog.bench.publish.settings import ACK_TIMEOUT_S
from liftlog.bench.toolkit.embedded_stack import started_stack
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread
from liftlog.bench.toolkit.stats import percentile
from liftlog.bench.toolkit.table import render_table
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.client.credentials import ClientCredentials
from spark_log.config import LakeConfig
from spark_log.errors import LiftlogError
from spark_log.nats_config import NatsCredentials
from spark_log.schemas import ParsedSchema, SchemaType, frame, parse_schema

DEFAULT_RECORDS = 50_000
DEFAULT_RUNS = 3
DEFAULT_VISIBLE_RATE = 20
DEFAULT_VISIBLE_S = 10.0
BATCH_RECORDS = 1000
POLL_INTERVAL_S = 0.05
SPARK_ROUNDS = 3
"""Timed rounds of each Spark side per run (its figure is their median): one query is short."""
SPARK_EXTRA = {"spark.driver.memory": "2g"}
BASE_TS_MS = 1_764_412_800_000
TS_STEP_MS = 10

AVRO_SUBJECT = "bench-typed-lake-avro-value"
JSON_SUBJECT = "bench-typed-lake-json-value"

UNBOUND = "(a) unbound, JSON text"
AVRO_BOUND = "(b) Avro subject"
JSON_BOUND = "(c) JSON Schema subject, JSON text"
PATHS = (UNBOUND, AVRO_BOUND, JSON_BOUND)
SPARK_SIDES = {
    AVRO_BOUND: "typed columns, (b) Avro",
    JSON_BOUND: "typed columns, (c) JSON Schema",
    UNBOUND: "from_json(value), (a) unbound",
}

ACTIONS = ("view", "add_to_cart", "remove", "checkout", "search")
COUNTRIES = ("DE", "FR", "US", "JP", "BR", "IN", "GB", "ES")
DEVICES = (("ios", "iphone-15"), ("android", "pixel-8"), ("web", "firefox"))

AVRO_SCHEMA: JsonObject = {
    "type": "record",
    "name": "Purchase",
    "namespace": "bench.typed_lake",
    "fields": [
        {"name": "event_id", "type": "long"},
        {"name": "user_id", "type": "string"},
        {"name": "action", "type": "string"},
        {"name": "country", "type": "string"},
        {"name": "page", "type": "string"},
        {"name": "price", "type": "double"},
        {"name": "quantity", "type": "int"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "device",
            "type": {
                "type": "record",
                "name": "Device",
                "fields": [
                    {"name": "os", "type": "string"},
                    {"name": "model", "type": "string"},
                ],
            },
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
JSON_SCHEMA: JsonObject = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Purchase",
    "type": "object",
    "properties": {
        "event_id": {"type": "integer"},
        "user_id": {"type": "string"},
        "action": {"type": "string"},
        "country": {"type": "string"},
        "page": {"type": "string"},
        "price": {"type": "number"},
        "quantity": {"type": "integer"},
        "ts": {"type": "string", "format": "date-time"},
        "device": {
            "type": "object",
            "properties": {"os": {"type": "string"}, "model": {"type": "string"}},
            "required": ["os", "model"],
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": [f["name"] for f in AVRO_SCHEMA["fields"]],
    "additionalProperties": False,
}
FROM_JSON_SCHEMA = (
    "event_id BIGINT, user_id STRING, action STRING, country STRING, page STRING, "
    "price DOUBLE, quantity INT, ts TIMESTAMP, device STRUCT<os: STRING, model: STRING>, "
    "tags ARRAY<STRING>"
)
"""The records' fields as Spark reads the unbound stream's JSON text."""


def record(i: int, ts_ms: int) -> dict[str, object]:
    """Record ``i``, with ``ts`` (ms since the epoch) as Avro's ``timestamp-millis`` takes it."""
    os_name, model = DEVICES[i % len(DEVICES)]
    return {
        "event_id": i,
        "user_id": f"user-{i % 5000}",
        "action": ACTIONS[i % len(ACTIONS)],
        "country": COUNTRIES[i % len(COUNTRIES)],
        "page": f"/catalog/item-{i % 997}",
        "price": (i % 10_000) / 100,
        "quantity": 1 + i % 7,
        "ts": ts_ms,
        "device": {"os": os_name, "model": model},
        "tags": [f"tag-{i % 11}", f"tag-{i % 13}"],
    }


def json_text(rec: dict[str, object]) -> bytes:
    """The record as compact JSON text, ``ts`` an RFC 3339 date-time in UTC."""
    ts_ms = int(str(rec["ts"]))
    seconds, millis = divmod(ts_ms, 1000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
    return json.dumps({**rec, "ts": stamp}, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Codecs:
    """The subjects' schema ids and how a record becomes each path's value bytes."""

    avro_id: int
    json_id: int
    avro: ParsedSchema
    """The Avro subject's schema, parsed once."""

    def avro_value(self, rec: dict[str, object]) -> bytes:
        return frame(self.avro_id, self.avro.encode(rec))


def register(client: Client) -> Codecs:
    avro_text = json.dumps(AVRO_SCHEMA)
    registry = client.schema_registry
    avro_id = registry.register(AVRO_SUBJECT, avro_text, SchemaType.AVRO).schema_id
    json_id = registry.register(JSON_SUBJECT, json.dumps(JSON_SCHEMA), SchemaType.JSON).schema_id
    return Codecs(avro_id, json_id, parse_schema(SchemaType.AVRO, avro_text))


def all_values(codecs: Codecs, records: int) -> dict[str, list[bytes]]:
    """Every path's N value bytes, encoded once (Avro with one parsed schema)."""
    recs = [record(i, BASE_TS_MS + i * TS_STEP_MS) for i in range(records)]
    text = [json_text(r) for r in recs]
    return {
        UNBOUND: text,
        AVRO_BOUND: [codecs.avro_value(r) for r in recs],
        JSON_BOUND: text,
    }


def binding_for(path: str) -> JsonObject | None:
    if path == AVRO_BOUND:
        return {"format": "avro", "subject": AVRO_SUBJECT}
    if path == JSON_BOUND:
        return {"format": "json", "subject": JSON_SUBJECT}
    return None


@dataclass
class Export:
    """One path's publish and flush into the lake, and what its table holds after."""

    publish_s: float
    flush_s: float
    before_flush: int
    rows: int
    invalid: int
    parquet_bytes: int
    files: list[str]

    @property
    def rows_per_s(self) -> float:
        return (self.rows - self.before_flush) / self.flush_s if self.flush_s > 0 else 0.0

    def to_json(self) -> JsonObject:
        return {
            "publish_s": round(self.publish_s, 3),
            "flush_s": round(self.flush_s, 3),
            "rows_exported_before_flush": self.before_flush,
            "rows": self.rows,
            "invalid_values": self.invalid,
            "parquet_bytes": self.parquet_bytes,
            "export_rows_per_s": round(self.rows_per_s, 1),
        }


@dataclass
class Visible:
    """Publish -> typed row visible in the Delta table, per record (ms)."""

    latencies_ms: list[float]
    sent: int
    slowest_poll_ms: float

    def to_json(self) -> JsonObject:
        return {
            "sent": self.sent,
            "seen": len(self.latencies_ms),
            "p50_ms": round(percentile(self.latencies_ms, 50), 1),
            "p99_ms": round(percentile(self.latencies_ms, 99), 1),
            "max_ms": round(max(self.latencies_ms), 1),
            "slowest_poll_ms": round(self.slowest_poll_ms, 1),
        }


@dataclass
class RunResult:
    export: dict[str, Export] = field(default_factory=dict)
    visible: Visible | None = None
    spark_query_s: dict[str, float] = field(default_factory=dict)
    spark_scan_s: dict[str, float] = field(default_factory=dict)


async def fresh_stream(client: Client, name: str, path: str) -> str:
    options: dict[str, object] = {"ack_policy": "all"}
    binding = binding_for(path)
    if binding is not None:
        options["value_schema"] = binding
    await client.create_stream(name, name, **options)
    return name


async def publish_all(client: Client, stream: str, values: Sequence[bytes]) -> float:
    """Seconds to publish ``values`` in producer batches of ``BATCH_RECORDS``, each acked."""
    started = time.perf_counter()
    for lo in range(0, len(values), BATCH_RECORDS):
        batch = values[lo : lo + BATCH_RECORDS]
        await client.publish_batch(stream, batch, partition=0, timeout_s=ACK_TIMEOUT_S)
    return time.perf_counter() - started


async def export_path(client: Client, stream: str, values: Sequence[bytes]) -> Export:
    publish_s = await publish_all(client, stream, values)
    described = await client.describe_stream(stream)
    before = described.partition(0).lake_offset or 0
    started = time.perf_counter()
    flushed = await client.flush_stream(stream)
    flush_s = time.perf_counter() - started
    lake_offset = flushed.partitions[0].lake_offset if flushed.partitions else None
    if flushed.lake is None or lake_offset is None:
        raise BenchError(f"{stream}: the node runs without a lake; this benchmark needs one")
    table = DeltaTable(flushed.lake.uri)
    return Export(publish_s, flush_s, before, *table_counts(table), files=list(table.file_uris()))


def table_counts(table: DeltaTable) -> tuple[int, int, int]:
    """Rows, rows holding an ``invalid_value`` (typed tables), and bytes of Parquet."""
    columns = ["invalid_value"] if "invalid_value" in table.schema().to_arrow().names else []
    rows = table.to_pyarrow_table(columns=columns or ["offset"])
    invalid = rows.num_rows - rows.column(0).null_count if columns else 0
    actions = pa.table(table.get_add_actions())
    return rows.num_rows, invalid, int(pc.sum(actions["size_bytes"]).as_py() or 0)


async def measure_exports(
    client: Client, run: int, values: dict[str, list[bytes]], progress: Progress
) -> dict[str, Export]:
    exports: dict[str, Export] = {}
    for path in PATHS:
        stream = await fresh_stream(client, f"bench-typed-lake-{_slug(path)}-{run}", path)
        progress.say(f"run {run + 1}: {path}: {len(values[path]):,} records, then flush")
        done = await export_path(client, stream, values[path])
        exports[path] = done
        progress.say(
            f"  published in {done.publish_s:.1f}s; flushed {done.rows - done.before_flush:,} "
            f"rows in {done.flush_s:.2f}s ({done.rows_per_s:,.0f} rows/s); "
            f"{done.rows:,} rows, {done.invalid} invalid"
        )
    return exports


async def measure_visible(
    client: Client, codecs: Codecs, run: int, rate: int, seconds: float, progress: Progress
) -> Visible:
    """Paced publishes to a fresh Avro-bound stream, watched in its Delta table."""
    stream = await fresh_stream(client, f"bench-typed-lake-visible-{run}", AVRO_BOUND)
    described = await client.describe_stream(stream)
    if described.lake is None:
        raise BenchError(f"{stream}: the node runs without a lake; this benchmark needs one")
    count = max(1, int(rate * seconds))
    progress.say(f"run {run + 1}: {count} records at {rate}/s, the table polled every 50 ms")
    watcher = TableWatcher(described.lake.uri)
    watching = asyncio.create_task(watcher.watch(count, seconds + 6 * export_interval_s()))
    try:
        await paced_publish(client, codecs, stream, count, rate)
        seen = await watching
    finally:
        watching.cancel()
    latencies = sorted(seen_s * 1000 - sent_ms for sent_ms, seen_s in seen.values())
    visible = Visible(latencies, count, watcher.slowest_poll_s * 1000)
    if latencies:
        progress.say(
            f"  seen {len(latencies)}/{count}: p50 {percentile(latencies, 50):,.0f} ms, "
            f"p99 {percentile(latencies, 99):,.0f} ms"
        )
    return visible


async def paced_publish(client: Client, codecs: Codecs, stream: str, count: int, rate: int) -> None:
    """``count`` records at ``rate``/s, each stamped with its send time; acks awaited at the end."""
    started = time.monotonic()
    acks: list[asyncio.Task[object]] = []
    for i in range(count):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        value = codecs.avro_value(record(i, int(time.time() * 1000)))
        acks.append(asyncio.create_task(client.publish(stream, value, timeout_s=ACK_TIMEOUT_S)))
    await asyncio.gather(*acks)


def export_interval_s() -> float:
    return LakeConfig().export_interval_s


class TableWatcher:
    """Polls a Delta table and notes when each ``event_id`` first appears in it."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self._table: DeltaTable | None = None
        self._version = -1
        self.slowest_poll_s = 0.0

    async def watch(self, expected: int, timeout_s: float) -> dict[int, tuple[int, float]]:
        """``event_id -> (send time ms, wall time first seen)`` until all ``expected`` or the
        timeout (those missing are what the report calls lost)."""
        seen: dict[int, tuple[int, float]] = {}
        deadline = time.monotonic() + timeout_s
        while len(seen) < expected and time.monotonic() < deadline:
            began = time.monotonic()
            rows = await asyncio.to_thread(self._new_version_rows)
            at = time.time()
            self.slowest_poll_s = max(self.slowest_poll_s, time.monotonic() - began)
            for event_id, sent_ms in rows:
                seen.setdefault(event_id, (sent_ms, at))
            await asyncio.sleep(max(0.0, POLL_INTERVAL_S - (time.monotonic() - began)))
        return seen

    def _new_version_rows(self) -> list[tuple[int, int]]:
        """``(event_id, ts ms)`` of every row when the table has a new version, else none."""
        if self._table is None:
            try:
                self._table = DeltaTable(self._uri)
            except TableNotFoundError:
                return []
        else:
            self._table.update_incremental()
        version = self._table.version()
        if version == self._version or "event_id" not in self._table.schema().to_arrow().names:
            return []
        self._version = version
        rows = self._table.to_pyarrow_table(columns=["event_id", "ts"])
        ids = rows.column("event_id").to_pylist()
        sent = pc.cast(rows.column("ts"), pa.int64()).to_pylist()
        return [(int(e), int(s) // 1000) for e, s in zip(ids, sent, strict=True)]


def spark_frames(
    spark: SparkSession, exports: dict[str, Export]
) -> dict[str, Callable[[], DataFrame]]:
    """Per side, a fresh DataFrame of the records' fields over that table's Parquet files."""

    def typed(path: str) -> Callable[[], DataFrame]:
        return lambda: spark.read.parquet(*exports[path].files)

    def decoded() -> DataFrame:
        raw = spark.read.parquet(*exports[UNBOUND].files)
        parsed = F.from_json(F.col("value").cast("string"), FROM_JSON_SCHEMA)
        return raw.select(parsed.alias("v")).select("v.*")

    return {
        SPARK_SIDES[AVRO_BOUND]: typed(AVRO_BOUND),
        SPARK_SIDES[JSON_BOUND]: typed(JSON_BOUND),
        SPARK_SIDES[UNBOUND]: decoded,
    }


def aggregation(records: int) -> Callable[[DataFrame], JsonObject]:
    """The upper half of the records by ``ts``, summed per country (exact decimal sums)."""
    cutoff_ms = BASE_TS_MS + (records // 2) * TS_STEP_MS

    def query(df: DataFrame) -> JsonObject:
        rows = (
            df.where(F.col("ts") >= F.expr(f"timestamp_millis({cutoff_ms})"))
            .groupBy("country")
            .agg(
                F.count("*").alias("records"),
                F.sum(F.col("price").cast("decimal(18,2)")).alias("revenue"),
                F.sum("quantity").alias("quantity"),
                F.sum(F.size("tags")).alias("tags"),
                F.count("device.os").alias("devices"),
            )
            .orderBy("country")
            .collect()
        )
        return {"groups": [{k: str(v) for k, v in r.asDict().items()} for r in rows]}

    return query


def measure_spark(
    spark: SparkSession, exports: dict[str, Export], records: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median seconds of a query (planning included) and of a scan per side over
    ``SPARK_ROUNDS`` rounds, the sides interleaved within each round."""
    frames = spark_frames(spark, exports)
    figures = time_interleaved(spark, frames, SPARK_ROUNDS, aggregation(records))
    query = {path: statistics.median(figures[SPARK_SIDES[path]]["query"]) for path in PATHS}
    scan = {path: statistics.median(figures[SPARK_SIDES[path]]["scan"]) for path in PATHS}
    return query, scan


@dataclass(frozen=True)
class Settings:
    records: int
    runs: int
    visible_rate: int
    visible_seconds: float


async def measure_run(
    client: Client,
    spark: SparkSession,
    codecs: Codecs,
    values: dict[str, list[bytes]],
    settings: Settings,
    run: int,
    progress: Progress,
) -> RunResult:
    result = RunResult(export=await measure_exports(client, run, values, progress))
    result.visible = await measure_visible(
        client, codecs, run, settings.visible_rate, settings.visible_seconds, progress
    )
    progress.say(f"run {run + 1}: Spark reads of the three tables")
    query, scan = await asyncio.to_thread(measure_spark, spark, result.export, settings.records)
    result.spark_query_s, result.spark_scan_s = query, scan
    return result


@contextlib.contextmanager
def started_spark(progress: Progress) -> Iterator[SparkSession]:
    progress.say("starting a local Spark session ...")
    spark = spark_session("liftlog-bench-typed-lake", SPARK_EXTRA)
    try:
        yield spark
    finally:
        spark.stop()


async def measure_all(
    stack: Standalone, spark: SparkSession, settings: Settings, progress: Progress
) -> list[RunResult]:
    client = Client(
        stack.node(1).api_url,
        nats_url=stack.nats.url,
        ack_timeout_s=ACK_TIMEOUT_S,
        nats_credentials=NatsCredentials(),
        credentials=ClientCredentials(),
    )
    async with client:
        codecs = await asyncio.to_thread(register, client)
        progress.say(
            f"registered {AVRO_SUBJECT} ({codecs.avro_id}), {JSON_SUBJECT} ({codecs.json_id})"
        )
        values = await asyncio.to_thread(all_values, codecs, settings.records)
        return [
            await measure_run(client, spark, codecs, values, settings, run, progress)
            for run in range(settings.runs)
        ]


def _slug(path: str) -> str:
    return path.split(")")[0].strip("(")


def lost(results: Sequence[RunResult], records: int) -> dict[str, int]:
    """Records acknowledged but missing from a table, per measure (0 when all are there)."""
    exported = sum(max(0, records - r.export[p].rows) for r in results for p in PATHS)
    visible = sum(v.sent - len(v.latencies_ms) for r in results if (v := r.visible))
    invalid = sum(r.export[p].invalid for r in results for p in PATHS)
    return {"export": exported, "visible": visible, "invalid_values": invalid}


def export_table(results: Sequence[RunResult], records: int) -> str:
    rows = []
    for path in PATHS:
        exports = [r.export[path] for r in results]
        binary = [r.export[UNBOUND].rows_per_s for r in results]
        shares = [e.rows_per_s / b for e, b in zip(exports, binary, strict=True) if b > 0]
        rows.append(
            [
                path,
                Spread.of([e.rows_per_s for e in exports]).render(),
                f"{statistics.median(shares) * 100:.0f} %" if shares else "-",
                Spread.of([e.flush_s for e in exports]).render(2),
                Spread.of([e.before_flush for e in exports]).render(),
                Spread.of([e.parquet_bytes / 1e6 for e in exports]).render(1),
            ]
        )
    headers = [f"lake export, {records:,} records", "rows/s", "of (a)", "flush s"]
    return render_table([*headers, "exported before flush", "Parquet MB"], rows)


def visible_table(results: Sequence[RunResult], settings: Settings) -> str:
    figures = [v.to_json() for r in results if (v := r.visible) and v.latencies_ms]
    if not figures:
        return "publish -> typed row visible: no record became visible"
    row = [
        AVRO_BOUND,
        Spread.of([float(str(f["p50_ms"])) for f in figures]).render(),
        Spread.of([float(str(f["p99_ms"])) for f in figures]).render(),
        Spread.of([float(str(f["max_ms"])) for f in figures]).render(),
        Spread.of([float(str(f["slowest_poll_ms"])) for f in figures]).render(),
    ]
    title = f"publish -> row visible, {settings.visible_rate}/s for {settings.visible_seconds:g} s"
    return render_table([title, "p50 ms", "p99 ms", "max ms", "slowest poll ms"], [row])


def spark_table(results: Sequence[RunResult], records: int) -> str:
    rows = []
    for path in (AVRO_BOUND, JSON_BOUND, UNBOUND):
        query = [records / r.spark_query_s[path] for r in results]
        scan = [records / r.spark_scan_s[path] for r in results]
        rows.append([SPARK_SIDES[path], Spread.of(query).render(), Spread.of(scan).render()])
    title = f"Spark aggregation, {records:,} rows"
    return render_table([title, "rows/s (query)", "rows/s (planned, re-run)"], rows)


def render_report(results: Sequence[RunResult], settings: Settings, machine: JsonObject) -> str:
    config = LakeConfig()
    missing = lost(results, settings.records)
    return "\n".join(
        [
            f"Typed lake tables beside a binary one, {len(results)} run(s), median (min..max) "
            f"({machine['summary']}; load average {machine['loadavg_at_start']} at start, "
            f"{machine['loadavg_at_end']} at end)",
            "",
            export_table(results, settings.records),
            "",
            visible_table(results, settings),
            f"  lake defaults: export_interval_s {config.export_interval_s:g}, export_min_bytes "
            f"{config.export_min_bytes:,}; table polled every {POLL_INTERVAL_S * 1000:.0f} ms "
            "(the resolution: the poll interval plus one poll)",
            "",
            spark_table(results, settings.records),
            "  query: a fresh DataFrame (Parquet footers read, planned); re-run: the planned one",
            "",
            f"records missing from their tables: export {missing['export']}, visible "
            f"{missing['visible']}; invalid values in typed tables: {missing['invalid_values']}",
        ]
    )


def report_json(
    results: Sequence[RunResult], settings: Settings, machine: JsonObject
) -> JsonObject:
    records = settings.records
    config = LakeConfig()
    return {
        "machine": machine,
        "settings": {
            "records": records,
            "runs": settings.runs,
            "batch_records": BATCH_RECORDS,
            "visible_rate_per_s": settings.visible_rate,
            "visible_seconds": settings.visible_seconds,
            "poll_interval_s": POLL_INTERVAL_S,
            "lake_export_interval_s": config.export_interval_s,
            "lake_export_min_bytes": config.export_min_bytes,
            "ack_policy": "all",
        },
        "results": [
            {
                "export": {p: e.to_json() for p, e in r.export.items()},
                "visible": r.visible.to_json() if r.visible and r.visible.latencies_ms else None,
                "spark_query_rows_per_s": {p: records / s for p, s in r.spark_query_s.items()},
                "spark_scan_rows_per_s": {p: records / s for p, s in r.spark_scan_s.items()},
            }
            for r in results
        ],
        "lost": lost(results, records),
        "median_export_rows_per_s": {
            p: statistics.median(r.export[p].rows_per_s for r in results) for p in PATHS
        },
        "median_spark_query_rows_per_s": {
            p: statistics.median(records / r.spark_query_s[p] for r in results) for p in PATHS
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--visible-rate", type=int, default=DEFAULT_VISIBLE_RATE)
    parser.add_argument("--visible-seconds", type=float, default=DEFAULT_VISIBLE_S)
    parser.add_argument("--data-dir", help="keep the stack's files here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if min(args.runs, args.records, args.visible_rate) < 1 or args.visible_seconds <= 0:
        parser.error("--runs, --records, --visible-rate and --visible-seconds must be positive")
    settings = Settings(args.records, args.runs, args.visible_rate, args.visible_seconds)
    progress = Progress()
    started = time.monotonic()
    load_at_start = loadavg()
    try:
        with (
            data_root(args.data_dir) as root,
            started_stack(root, 1, progress, " (lake settings at their defaults)") as stack,
            started_spark(progress) as spark,
        ):
            version = str(varz(stack.nats.monitor_url).get("version", "unknown"))
            results = asyncio.run(measure_all(stack, spark, settings, progress))
            progress.say("stopping every process the benchmark started ...")
    except LiftlogError as exc:
        print(f"typed_lake failed: {exc}", file=sys.stderr)
        return 1
    machine = {
        **describe_machine(version),
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": loadavg(),
    }
    print()
    print(render_report(results, settings, machine), flush=True)
    if args.json:
        body = {
            **report_json(results, settings, machine),
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        print(f"\nwrote {write_json(args.json, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
