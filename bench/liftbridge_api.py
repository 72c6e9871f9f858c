"""The Liftbridge gRPC API beside the same work over NATS and REST, on one stack, in one run.

Run from the repository root (``make bench-liftbridge`` does this)::

    .venv/bin/python bench/liftbridge_api.py --runs 3 --json bench/results/liftbridge.json

One embedded stack (``liftlog standalone``: NATS, ZooKeeper and ``--nodes`` nodes, fsync
always) serves all three APIs. Per run, each on a fresh stream of one partition with
``ack_policy = "all"`` and the replication factor of ``--nodes``, records of ``--size`` bytes:

1. acked publish throughput, 256 in flight: gRPC ``Publish`` (unary calls with a deadline, so
   each waits for its ack), gRPC ``PublishAsync`` (one bidirectional stream, 256 requests
   outstanding), a NATS publish per record (``spark_log.Client``), a REST ``POST .../records``
   of one record per request;
2. publish -> ack latency paced at ``--rate`` publishes/s (p50, p99) for gRPC ``Publish``, NATS
   and REST;
3. read throughput of the whole stream from the first record to the last: gRPC ``Subscribe``
   (EARLIEST to STOP_LATEST) beside ``Client.subscribe`` (REST fetches of Arrow batches).
   Liftlog has no read path over NATS, so reads have no NATS column.

The publishes go to the partition's leader (node 1 leads every stream here), so the figures
compare the APIs, not a forward between nodes. Every figure is the median of the runs with
their spread (min..max). Every acknowledged record is held against the stream's high
watermark at the end. Nothing is asserted; every process is stopped whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx

from liftlog.bench.errors import BenchError
from liftlog.bench.jetstream.server import varz
from liftlog.bench.publish.latency import measure_latency
from liftlog.bench.publish.publishers import LiftlogPublisher, Publisher
from liftlog.bench.publish.settings import ACK_TIMEOUT_S, BenchSettings
from liftlog.bench.publish.window import WindowOutcome, run_window
from liftlog.bench.toolkit.embedded_stack import started_stack
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.payload import payload
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread
from liftlog.bench.toolkit.stats import Latency, Throughput
from liftlog.bench.toolkit.table import render_table
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.client.credentials import ClientCredentials
from spark_log.errors import LiftlogError
from spark_log.liftbridge import api_pb2 as pb
from spark_log.liftbridge import api_pb2_grpc
from spark_log.nats_config import NatsCredentials

WINDOW = 256
DEFAULT_RECORDS = 10_000
DEFAULT_SIZE = 1024
DEFAULT_RUNS = 3
DEFAULT_RATE_PER_S = 100
DEFAULT_LATENCY_S = 5.0
PHASE_TIMEOUT_S = 600.0

GRPC_UNARY = "gRPC Publish"
GRPC_ASYNC = "gRPC PublishAsync"
NATS = "NATS"
REST = "REST"
PUBLISH_PATHS = (GRPC_UNARY, GRPC_ASYNC, NATS, REST)
LATENCY_PATHS = (GRPC_UNARY, NATS, REST)
GRPC_SUBSCRIBE = "gRPC Subscribe"
REST_FETCH = "REST fetch (Arrow)"
READ_PATHS = (GRPC_SUBSCRIBE, REST_FETCH)


class RpcFailedError(LiftlogError):
    """A gRPC call of the benchmark failed (counted as a failed publish, never retried)."""

    code = "rpc_failed"


@dataclass
class RunResult:
    publish: dict[str, Throughput] = field(default_factory=dict)
    latency: dict[str, Latency] = field(default_factory=dict)
    read: dict[str, Throughput] = field(default_factory=dict)


@dataclass
class Totals:
    """What was acknowledged per stream, held against what the streams hold at the end."""

    acked: dict[str, int] = field(default_factory=dict)

    def add(self, stream: str, count: int) -> None:
        self.acked[stream] = self.acked.get(stream, 0) + count


class GrpcPublisher:
    """``Publish`` with a deadline and AckPolicy ALL: the unary call returns with the ack."""

    def __init__(self, stub: api_pb2_grpc.APIAsyncStub, stream: str) -> None:
        self.label = GRPC_UNARY
        self._stub = stub
        self._stream = stream

    async def publish(self, value: bytes) -> None:
        request = pb.PublishRequest(stream=self._stream, value=value, ackPolicy=pb.ALL)
        try:
            response = await self._stub.Publish(request, timeout=ACK_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            raise RpcFailedError(f"{exc.code().name}: {exc.details()}") from exc
        if not response.HasField("ack"):
            raise BenchError("Publish with a deadline answered without an ack")


class RestPublisher:
    """One record per ``POST /v1/streams/{stream}/partitions/0/records`` (acks=all)."""

    def __init__(self, http: httpx.AsyncClient, stream: str) -> None:
        self.label = REST
        self._http = http
        self._path = f"/v1/streams/{stream}/partitions/0/records"

    async def publish(self, value: bytes) -> None:
        body = {"records": [{"value": base64.b64encode(value).decode()}]}
        try:
            response = await self._http.post(self._path, json=body, params={"ack_policy": "all"})
        except httpx.HTTPError as exc:
            raise RpcFailedError(f"REST publish: {type(exc).__name__}: {exc}") from exc
        if response.status_code != httpx.codes.OK:
            raise RpcFailedError(f"REST publish: {response.status_code} {response.text[:200]}")


async def publish_async(
    stub: api_pb2_grpc.APIAsyncStub, stream: str, value: bytes, count: int
) -> Throughput:
    """``count`` requests on one PublishAsync stream, ``WINDOW`` outstanding at any time."""
    window = asyncio.Semaphore(WINDOW)
    acked = failed = 0
    first_error: str | None = None

    async def requests() -> AsyncIterator[pb.PublishRequest]:
        for i in range(count):
            await window.acquire()
            yield pb.PublishRequest(
                stream=stream, value=value, ackPolicy=pb.ALL, correlationId=str(i)
            )

    started = time.perf_counter()
    call = stub.PublishAsync(requests(), timeout=PHASE_TIMEOUT_S)
    async for response in call:
        window.release()
        if response.HasField("asyncError"):
            failed += 1
            first_error = first_error or response.asyncError.message
        else:
            acked += 1
        if acked + failed == count:
            break
    seconds = time.perf_counter() - started
    call.cancel()
    return Throughput(acked, len(value), seconds, failed, first_error)


async def windowed(publisher: Publisher, value: bytes, count: int) -> Throughput:
    outcome = await run_window(count, WINDOW, lambda: publisher.publish(value), WindowOutcome())
    return Throughput(
        outcome.acked, len(value), outcome.seconds, outcome.failed, outcome.first_error
    )


async def subscribe_all(stub: api_pb2_grpc.APIAsyncStub, stream: str, size: int) -> Throughput:
    """The stream from EARLIEST to STOP_LATEST over gRPC (the handshake message not counted)."""
    request = pb.SubscribeRequest(
        stream=stream, startPosition=pb.EARLIEST, stopPosition=pb.STOP_LATEST
    )
    records = 0
    started = time.perf_counter()
    call = stub.Subscribe(request, timeout=PHASE_TIMEOUT_S)
    try:
        async for message in call:
            if message.stream:  # the empty handshake message has none
                records += 1
    except grpc.aio.AioRpcError as exc:
        if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:  # the stop position reached
            raise RpcFailedError(f"Subscribe: {exc.code().name}: {exc.details()}") from exc
    return Throughput(records, size, time.perf_counter() - started)


async def fetch_all(client: Client, stream: str, size: int) -> Throughput:
    records = 0
    started = time.perf_counter()
    async for _record in client.subscribe(stream, start="earliest", stop_at_end=True):
        records += 1
    return Throughput(records, size, time.perf_counter() - started)


@dataclass
class Sides:
    stub: api_pb2_grpc.APIAsyncStub
    client: Client
    http: httpx.AsyncClient
    replication_factor: int


async def fresh_stream(sides: Sides, name: str) -> str:
    await sides.client.create_stream(
        name, name, ack_policy="all", replication_factor=sides.replication_factor
    )
    return name


def publisher_for(path: str, sides: Sides, stream: str) -> Publisher:
    if path == GRPC_UNARY:
        return GrpcPublisher(sides.stub, stream)
    if path == NATS:
        return LiftlogPublisher(sides.client, stream, NATS)
    return RestPublisher(sides.http, stream)


async def measure_run(
    sides: Sides, run: int, settings: BenchSettings, totals: Totals, progress: Progress
) -> RunResult:
    value = payload(settings.sizes[0])
    result = RunResult()
    for path in PUBLISH_PATHS:
        stream = await fresh_stream(sides, f"bench-lb-{_slug(path)}-{run}")
        progress.say(f"run {run + 1}: {path}, {settings.records:,} records, {WINDOW} in flight")
        if path == GRPC_ASYNC:
            figure = await publish_async(sides.stub, stream, value, settings.records)
        else:
            figure = await windowed(publisher_for(path, sides, stream), value, settings.records)
        totals.add(stream, figure.records)
        result.publish[path] = figure
        progress.say(f"  {figure.records_per_s:,.0f} records/s ({figure.failed} failed)")
    for path in LATENCY_PATHS:
        stream = await fresh_stream(sides, f"bench-lb-latency-{_slug(path)}-{run}")
        progress.say(f"run {run + 1}: {path} latency at {settings.latency_rate_per_s}/s")
        figure_l = await measure_latency(publisher_for(path, sides, stream), value, settings, {})
        totals.add(stream, figure_l.count + 20)  # the warm-up publishes are stored too
        result.latency[path] = figure_l
        progress.say(f"  p50 {figure_l.p50_ms:.2f} ms, p99 {figure_l.p99_ms:.2f} ms")
    source = f"bench-lb-{_slug(NATS)}-{run}"
    reads: dict[str, Awaitable[Throughput]] = {
        GRPC_SUBSCRIBE: subscribe_all(sides.stub, source, len(value)),
        REST_FETCH: fetch_all(sides.client, source, len(value)),
    }
    for path, read in reads.items():
        progress.say(f"run {run + 1}: {path} of {source}")
        figure = await asyncio.wait_for(read, PHASE_TIMEOUT_S)
        result.read[path] = figure
        progress.say(f"  {figure.records_per_s:,.0f} records/s ({figure.records:,} records)")
    return result


def _slug(path: str) -> str:
    return path.lower().replace(" ", "-").replace("(", "").replace(")", "")


async def lost_records(client: Client, totals: Totals) -> int:
    """Acked records a stream does not hold (its high watermark below the acked count)."""
    lost = 0
    for stream, acked in totals.acked.items():
        described = await client.describe_stream(stream)
        lost += max(0, acked - (described.partition(0).high_watermark or 0))
    return lost


async def measure_all(
    stack: Standalone, settings: BenchSettings, runs: int, progress: Progress
) -> tuple[list[RunResult], int]:
    node = stack.node(1)
    channel = grpc.aio.insecure_channel(node.config.advertised_liftbridge_address)
    client = Client(
        node.api_url,
        nats_url=stack.nats.url,
        ack_timeout_s=ACK_TIMEOUT_S,
        nats_credentials=NatsCredentials(),
        credentials=ClientCredentials(),
    )
    limits = httpx.Limits(max_connections=WINDOW, max_keepalive_connections=WINDOW)
    async with (
        client,
        httpx.AsyncClient(base_url=node.api_url, timeout=ACK_TIMEOUT_S, limits=limits) as http,
    ):
        sides = Sides(api_pb2_grpc.APIStub(channel), client, http, len(stack.nodes))
        totals = Totals()
        results = [await measure_run(sides, run, settings, totals, progress) for run in range(runs)]
        lost = await lost_records(client, totals)
    await channel.close()
    return results, lost


def render_report(results: Sequence[RunResult], lost: int, machine: JsonObject) -> str:
    runs = len(results)
    rows = [
        [path, Spread.of([r.publish[path].records_per_s for r in results]).render()]
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
    read_rows = [
        [path, Spread.of([r.read[path].records_per_s for r in results]).render()]
        for path in READ_PATHS
    ]
    return "\n".join(
        [
            f"Liftbridge gRPC beside NATS and REST, {runs} run(s), median (min..max) "
            f"({machine['summary']}; load average {machine['loadavg_at_start']} at start, "
            f"{machine['loadavg_at_end']} at end)",
            "",
            render_table(["acked publish, 256 in flight", "records/s"], rows),
            "",
            render_table(["publish -> ack", "p50 ms", "p99 ms"], latency_rows),
            "",
            render_table(["read the stream", "records/s"], read_rows),
            "",
            f"acked records missing from their streams: {lost}",
        ]
    )


def results_json(results: Sequence[RunResult]) -> list[JsonObject]:
    return [
        {
            "publish": {k: v.to_json() for k, v in r.publish.items()},
            "latency": {k: v.to_json() for k, v in r.latency.items()},
            "read": {k: v.to_json() for k, v in r.read.items()},
        }
        for r in results
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS)
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="record bytes")
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
            sizes=(args.size,),
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
            results, lost = asyncio.run(measure_all(stack, settings, args.runs, progress))
            progress.say("stopping every process the benchmark started ...")
    except (LiftlogError, grpc.aio.AioRpcError) as exc:
        print(f"liftbridge_api failed: {exc}", file=sys.stderr)
        return 1
    machine = {
        **describe_machine(version),
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": loadavg(),
    }
    print()
    print(render_report(results, lost, machine), flush=True)
    if args.json:
        body = {
            "machine": machine,
            "settings": {
                "records": args.records,
                "size": args.size,
                "runs": args.runs,
                "nodes": args.nodes,
                "window": WINDOW,
                "latency_rate_per_s": args.rate,
                "latency_seconds": args.latency_seconds,
                "ack_policy": "all",
            },
            "results": results_json(results),
            "lost": lost,
            "median_publish_records_per_s": {
                p: statistics.median(r.publish[p].records_per_s for r in results)
                for p in PUBLISH_PATHS
            },
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        print(f"\nwrote {write_json(args.json, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
