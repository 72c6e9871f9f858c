"""Acked publish to streams bound to a value schema beside the same stream unbound, in one run.

Run from the repository root (``make bench-typed`` does this)::

    .venv/bin/python bench/typed_publish.py --runs 3 --json bench/results/typed_publish.json

One embedded stack (``liftlog standalone``: NATS, ZooKeeper and ``--nodes`` nodes, fsync
always) serves the streams and the schema registry. One Avro and one JSON Schema subject are
registered once; per run, each on a fresh stream of one partition with ``ack_policy = "all"``,
records of ten fields (about 200 bytes as JSON text), a NATS publish per record
(``spark_log.Client``):

1. acked publish throughput, 256 in flight, of (a) an unbound stream publishing the
   Avro-framed bytes (Confluent's wire format), (b) a stream bound to the Avro subject
   publishing the same bytes, (c) a stream bound to the JSON Schema subject publishing
   Confluent-framed JSON and (d) that JSON-Schema-bound stream publishing plain JSON;
2. publish -> ack latency paced at ``--rate`` publishes/s (p50, p99) for (a) and (b).

So the figures show what the leader's validation costs, nothing else: the same bytes, the same
path, only the binding differs. Before measuring, one bad record is sent to each bound stream
to show validation is on (each must be refused with ``schema_violation``). Every figure is the
median of the runs with their spread (min..max); every acknowledged record is held against
the stream's high watermark at the end. Nothing is asserted; every process is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from liftlog.bench.jetstream.server import varz
from liftlog.bench.publish.latency import LATENCY_WARMUP_MESSAGES, measure_latency
from liftlog.bench.publish.publishers import LiftlogPublisher
from liftlog.bench.publish.settings import ACK_TIMEOUT_S, BenchSettings
from liftlog.bench.publish.window import WindowOutcome, run_window
from liftlog.bench.toolkit.embedded_stack import started_stack
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread
from liftlog.bench.toolkit.stats import Latency, Throughput
from liftlog.bench.toolkit.table import render_table
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.client.credentials import ClientCredentials
from spark_log.errors import LiftlogError
from spark_log.nats_config import NatsCredentials
from spark_log.schemas import SchemaType, frame, parse_schema

WINDOW = 256
DEFAULT_RECORDS = 20_000
DEFAULT_RUNS = 3
DEFAULT_RATE_PER_S = 200
DEFAULT_LATENCY_S = 5.0

AVRO_SUBJECT = "bench-typed-avro-value"
JSON_SUBJECT = "bench-typed-json-value"

UNBOUND = "(a) unbound, Avro-framed bytes"
AVRO_BOUND = "(b) Avro subject, Avro-framed"
JSON_FRAMED = "(c) JSON Schema subject, framed JSON"
JSON_PLAIN = "(d) JSON Schema subject, plain JSON"
PUBLISH_PATHS = (UNBOUND, AVRO_BOUND, JSON_FRAMED, JSON_PLAIN)
LATENCY_PATHS = (UNBOUND, AVRO_BOUND)

# Ten fields of the kind a clickstream carries: about 200 bytes as compact JSON text.
RECORD: dict[str, object] = {
    "event_id": 1_764_412_800_123,
    "user_id": "user-42",
    "session_id": "s-3f2c9a1e7b4d",
    "action": "add_to_cart",
    "page": "/catalog/espresso",
    "country": "DE",
    "device": "mobile",
    "price": 249.99,
    "quantity": 2,
    "ts": 1_764_412_800_000,
}
AVRO_SCHEMA: JsonObject = {
    "type": "record",
    "name": "ClickEvent",
    "namespace": "bench.typed",
    "fields": [
        {"name": "event_id", "type": "long"},
        {"name": "user_id", "type": "string"},
        {"name": "session_id", "type": "string"},
        {"name": "action", "type": "string"},
        {"name": "page", "type": "string"},
        {"name": "country", "type": "string"},
        {"name": "device", "type": "string"},
        {"name": "price", "type": "double"},
        {"name": "quantity", "type": "int"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
JSON_SCHEMA: JsonObject = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "ClickEvent",
    "type": "object",
    "properties": {
        "event_id": {"type": "integer"},
        "user_id": {"type": "string"},
        "session_id": {"type": "string"},
        "action": {"type": "string"},
        "page": {"type": "string"},
        "country": {"type": "string"},
        "device": {"type": "string"},
        "price": {"type": "number"},
        "quantity": {"type": "integer"},
        "ts": {"type": "integer"},
    },
    "required": sorted(RECORD),
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Values:
    """The value bytes each path publishes, and the subjects' schema ids."""

    avro_id: int
    json_id: int
    avro_framed: bytes
    json_framed: bytes
    json_plain: bytes

    def for_path(self, path: str) -> bytes:
        if path in (UNBOUND, AVRO_BOUND):
            return self.avro_framed
        return self.json_framed if path == JSON_FRAMED else self.json_plain


@dataclass
class RunResult:
    publish: dict[str, Throughput] = field(default_factory=dict)
    latency: dict[str, Latency] = field(default_factory=dict)


@dataclass
class Totals:
    """What was acknowledged per stream, held against what the streams hold at the end."""

    acked: dict[str, int] = field(default_factory=dict)

    def add(self, stream: str, count: int) -> None:
        self.acked[stream] = self.acked.get(stream, 0) + count


def register_values(client: Client) -> Values:
    """Register both schemas and serialise the record with them (the client's own codecs)."""
    avro_text = json.dumps(AVRO_SCHEMA)
    json_text = json.dumps(JSON_SCHEMA)
    avro_id = client.schema_registry.register(AVRO_SUBJECT, avro_text, SchemaType.AVRO).schema_id
    json_id = client.schema_registry.register(JSON_SUBJECT, json_text, SchemaType.JSON).schema_id
    avro_payload = parse_schema(SchemaType.AVRO, avro_text).encode(RECORD)
    json_payload = parse_schema(SchemaType.JSON, json_text).encode(RECORD)
    return Values(
        avro_id=avro_id,
        json_id=json_id,
        avro_framed=frame(avro_id, avro_payload),
        json_framed=frame(json_id, json_payload),
        json_plain=json.dumps(RECORD, separators=(",", ":")).encode(),
    )


def binding_for(path: str) -> JsonObject | None:
    """The stream's ``value_schema`` for a path (None: the stream is unbound)."""
    if path == UNBOUND:
        return None
    if path == AVRO_BOUND:
        return {"format": "avro", "subject": AVRO_SUBJECT}
    return {"format": "json", "subject": JSON_SUBJECT}


@dataclass
class Sides:
    client: Client
    replication_factor: int


async def fresh_stream(sides: Sides, name: str, path: str) -> str:
    options: dict[str, object] = {
        "ack_policy": "all",
        "replication_factor": sides.replication_factor,
    }
    binding = binding_for(path)
    if binding is not None:
        options["value_schema"] = binding
    await sides.client.create_stream(name, name, **options)
    return name


async def windowed(publisher: LiftlogPublisher, value: bytes, count: int) -> Throughput:
    outcome = await run_window(count, WINDOW, lambda: publisher.publish(value), WindowOutcome())
    return Throughput(
        outcome.acked, len(value), outcome.seconds, outcome.failed, outcome.first_error
    )


async def refusals(sides: Sides, values: Values, progress: Progress) -> dict[str, str]:
    """One bad record per bound format: the error code each got (``accepted`` if stored)."""
    bad = {
        AVRO_BOUND: frame(values.avro_id, b"\xff\xff\xff"),  # a long that never ends
        JSON_PLAIN: json.dumps({**RECORD, "quantity": "two"}).encode(),
    }
    codes: dict[str, str] = {}
    for path, value in bad.items():
        stream = await fresh_stream(sides, f"bench-typed-refusal-{_slug(path)}", path)
        try:
            await sides.client.publish(stream, value, timeout_s=ACK_TIMEOUT_S)
        except LiftlogError as exc:
            codes[path] = exc.code
        else:
            codes[path] = "accepted"
        progress.say(f"a bad record on {path}: {codes[path]}")
    return codes


async def measure_run(
    sides: Sides,
    run: int,
    values: Values,
    settings: BenchSettings,
    totals: Totals,
    progress: Progress,
) -> RunResult:
    result = RunResult()
    for path in PUBLISH_PATHS:
        stream = await fresh_stream(sides, f"bench-typed-{_slug(path)}-{run}", path)
        value = values.for_path(path)
        progress.say(f"run {run + 1}: {path}, {settings.records:,} records, {WINDOW} in flight")
        publisher = LiftlogPublisher(sides.client, stream, path)
        figure = await windowed(publisher, value, settings.records)
        totals.add(stream, figure.records)
        result.publish[path] = figure
        progress.say(f"  {figure.records_per_s:,.0f} records/s ({figure.failed} failed)")
    for path in LATENCY_PATHS:
        stream = await fresh_stream(sides, f"bench-typed-latency-{_slug(path)}-{run}", path)
        progress.say(f"run {run + 1}: {path} latency at {settings.latency_rate_per_s}/s")
        publisher = LiftlogPublisher(sides.client, stream, path)
        figure_l = await measure_latency(publisher, values.for_path(path), settings, {})
        totals.add(stream, figure_l.count + LATENCY_WARMUP_MESSAGES)  # warm-up stored too
        result.latency[path] = figure_l
        progress.say(f"  p50 {figure_l.p50_ms:.2f} ms, p99 {figure_l.p99_ms:.2f} ms")
    return result


def _slug(path: str) -> str:
    return path.split(")")[0].strip("(")


async def lost_records(client: Client, totals: Totals) -> int:
    """Acked records a stream does not hold (its high watermark below the acked count)."""
    lost = 0
    for stream, acked in totals.acked.items():
        described = await client.describe_stream(stream)
        lost += max(0, acked - (described.partition(0).high_watermark or 0))
    return lost


@dataclass
class Outcome:
    results: list[RunResult]
    lost: int
    refused: dict[str, str]
    values: Values


async def measure_all(
    stack: Standalone, settings: BenchSettings, runs: int, progress: Progress
) -> Outcome:
    node = stack.node(1)
    client = Client(
        node.api_url,
        nats_url=stack.nats.url,
        ack_timeout_s=ACK_TIMEOUT_S,
        nats_credentials=NatsCredentials(),
        credentials=ClientCredentials(),
    )
    async with client:
        values = await asyncio.to_thread(register_values, client)
        progress.say(
            f"registered {AVRO_SUBJECT} (id {values.avro_id}) and {JSON_SUBJECT} "
            f"(id {values.json_id})"
        )
        sides = Sides(client, len(stack.nodes))
        refused = await refusals(sides, values, progress)
        totals = Totals()
        results = [
            await measure_run(sides, run, values, settings, totals, progress) for run in range(runs)
        ]
        lost = await lost_records(client, totals)
    return Outcome(results, lost, refused, values)


def _relative(results: Sequence[RunResult], path: str) -> str:
    """The path's median throughput as a share of the unbound stream's (same run's pairs)."""
    shares = [r.publish[path].records_per_s / r.publish[UNBOUND].records_per_s for r in results]
    return f"{statistics.median(shares) * 100:.0f} %"


def render_report(outcome: Outcome, machine: JsonObject) -> str:
    results = outcome.results
    runs = len(results)
    rows = [
        [
            path,
            f"{len(outcome.values.for_path(path))} B",
            Spread.of([r.publish[path].records_per_s for r in results]).render(),
            _relative(results, path),
        ]
        for path in PUBLISH_PATHS
    ]
    latency_rows = [
        [
            path,
            Spread.of([r.latency[path].p50_ms for r in results]).render(2),
            Spread.of([r.latency[path].p99_ms for r in results]).render(2),
        ]
        for path in LATENCY_PATHS
    ]
    rate = results[0].latency[UNBOUND].rate_per_s
    refused = ", ".join(f"{p.split(')')[0]}) {c}" for p, c in outcome.refused.items())
    return "\n".join(
        [
            f"Typed streams beside an unbound stream, {runs} run(s), median (min..max) "
            f"({machine['summary']}; load average {machine['loadavg_at_start']} at start, "
            f"{machine['loadavg_at_end']} at end)",
            "",
            render_table(["acked publish, 256 in flight", "value", "records/s", "of (a)"], rows),
            "",
            render_table([f"publish -> ack at {rate}/s", "p50 ms", "p99 ms"], latency_rows),
            "",
            f"a bad record on a bound stream: {refused}",
            f"acked records missing from their streams: {outcome.lost}",
        ]
    )


def results_json(results: Sequence[RunResult]) -> list[JsonObject]:
    return [
        {
            "publish": {k: v.to_json() for k, v in r.publish.items()},
            "latency": {k: v.to_json() for k, v in r.latency.items()},
        }
        for r in results
    ]


def report_json(outcome: Outcome, machine: JsonObject, args: argparse.Namespace) -> JsonObject:
    results = outcome.results
    return {
        "machine": machine,
        "settings": {
            "records": args.records,
            "runs": args.runs,
            "nodes": args.nodes,
            "window": WINDOW,
            "latency_rate_per_s": args.rate,
            "latency_seconds": args.latency_seconds,
            "ack_policy": "all",
            "value_bytes": {p: len(outcome.values.for_path(p)) for p in PUBLISH_PATHS},
        },
        "results": results_json(results),
        "refused_bad_record": dict(outcome.refused),
        "lost": outcome.lost,
        "median_publish_records_per_s": {
            p: statistics.median(r.publish[p].records_per_s for r in results) for p in PUBLISH_PATHS
        },
        "median_latency_ms": {
            p: {
                "p50": statistics.median(r.latency[p].p50_ms for r in results),
                "p99": statistics.median(r.latency[p].p99_ms for r in results),
            }
            for p in LATENCY_PATHS
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--nodes", type=int, default=1, help="nodes, and the streams' RF")
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE_PER_S, help="latency pace")
    parser.add_argument("--latency-seconds", type=float, default=DEFAULT_LATENCY_S)
    parser.add_argument("--data-dir", help="keep the stack's files here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.nodes < 1:
        parser.error("--runs and --nodes must be at least 1")
    try:
        settings = BenchSettings(
            records=args.records,
            latency_rate_per_s=args.rate,
            latency_duration_s=args.latency_seconds,
        )
    except LiftlogError as exc:
        parser.error(exc.message)
    progress = Progress()
    started = time.monotonic()
    load_at_start = loadavg()
    try:
        with data_root(args.data_dir) as root, started_stack(root, args.nodes, progress) as stack:
            version = str(varz(stack.nats.monitor_url).get("version", "unknown"))
            outcome = asyncio.run(measure_all(stack, settings, args.runs, progress))
            progress.say("stopping every process the benchmark started ...")
    except LiftlogError as exc:
        print(f"typed_publish failed: {exc}", file=sys.stderr)
        return 1
    machine = {
        **describe_machine(version),
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": loadavg(),
    }
    print()
    print(render_report(outcome, machine), flush=True)
    if args.json:
        body = {
            **report_json(outcome, machine, args),
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        print(f"\nwrote {write_json(args.json, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
