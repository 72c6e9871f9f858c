"""``liftlog bench --replication 3``: Liftlog RF=3 beside JetStream R3, side by side in one run.

Same exit codes as the single-node run: 0 when every measurement ran (targets met or not),
1 when one could not run, 2 for invalid arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from liftlog.bench.jetstream import varz
from liftlog.bench.machine import describe_machine
from liftlog.bench.node_probe import peak_rss_mb
from liftlog.bench.plumbing import data_root, loadavg, nats_connection, write_json
from liftlog.bench.progress import Progress
from liftlog.bench.replicated_report import render_replicated_report
from liftlog.bench.replicated_results import JETSTREAM_R3, LIFTLOG_RF3, ReplicatedResult
from liftlog.bench.replicated_size import ReplicatedSides, measure_replicated_size
from liftlog.bench.replicated_stack import ReplicatedStack, replicated_stack
from liftlog.bench.replicated_verdicts import replicated_verdicts
from liftlog.bench.results import PUBLISHER
from liftlog.bench.settings import (
    ACK_TIMEOUT_S,
    DEFAULT_RECORDS,
    REPLICATED_DEFAULT_RECORDS,
    REPLICATED_FACTOR,
    REPLICATED_LATENCY_RATE_PER_S,
    BenchSettings,
)
from spark_log.client import Client
from spark_log.errors import InvalidRequestError, LiftlogError

# nats-server's default max_payload, if /varz does not say (it always does in 2.x).
DEFAULT_MAX_PAYLOAD = 1024 * 1024


def replicated_settings(records: int | None, sizes: Sequence[int]) -> BenchSettings:
    """The replicated run's settings: fewer records and a lower latency rate by default."""
    return BenchSettings(
        records=REPLICATED_DEFAULT_RECORDS if records is None else records,
        sizes=tuple(sizes),
        latency_rate_per_s=REPLICATED_LATENCY_RATE_PER_S,
    )


def run_replicated_bench(
    records: int | None,
    sizes: Sequence[int],
    data_dir: str | Path | None,
    json_path: str | Path | None,
) -> int:
    """Start both replicated sides, measure every size, print the table, write the JSON."""
    try:
        settings = replicated_settings(records, sizes)
    except InvalidRequestError as exc:
        print(f"liftlog bench: {exc.message}", file=sys.stderr)
        return 2
    progress = Progress()
    try:
        with data_root(data_dir) as root, replicated_stack(root, progress) as stack:
            result = asyncio.run(_measure_all(stack, settings, progress))
            # before the nodes stop
            result.node_peak_rss_mb = {n: peak_rss_mb(p) for n, p in stack.node_pids().items()}
            result.machine["loadavg_at_end"] = loadavg()
            progress.say("stopping every process the benchmark started ...")
        progress.say("stopped")  # a slow stop (a node's controlled shutdown) shows up here
    except LiftlogError as exc:
        print(f"liftlog bench failed: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    found = replicated_verdicts(result)
    print()
    print(render_replicated_report(result, found), flush=True)
    if json_path is not None:
        path = write_json(json_path, result.to_json([v.to_json() for v in found]))
        print(f"\nwrote {path}")
    return 0


async def _measure_all(
    stack: ReplicatedStack, settings: BenchSettings, progress: Progress
) -> ReplicatedResult:
    liftlog_varz = varz(stack.standalone.nats.monitor_url)
    server_version = str(liftlog_varz.get("version", "unknown"))
    machine = {**describe_machine(server_version), "loadavg_at_start": loadavg()}
    result = ReplicatedResult(machine, _settings_json(settings), notes=_notes(settings))
    result.replica_names = {
        LIFTLOG_RF3: list(stack.node_pids()),
        JETSTREAM_R3: list(stack.js_cluster.pids()),
    }
    for note in result.notes:
        progress.say(f"note: {note}")
    pids = {PUBLISHER: os.getpid(), **stack.pids()}
    max_payload = int(liftlog_varz.get("max_payload") or DEFAULT_MAX_PAYLOAD)
    async with contextlib.AsyncExitStack() as exits:
        client = await exits.enter_async_context(
            Client(stack.api_urls, nats_url=stack.nats_url, ack_timeout_s=ACK_TIMEOUT_S)
        )
        nc = await exits.enter_async_context(nats_connection(stack.js_cluster.url))
        sides = ReplicatedSides(client, nc.jetstream(), max_payload, pids)
        for size in settings.sizes:
            result.sizes.append(await measure_replicated_size(sides, size, settings, progress))
    return result


def _notes(settings: BenchSettings) -> list[str]:
    """Say plainly where this run differs from the single-node one."""
    notes = []
    if settings.records < DEFAULT_RECORDS:
        notes.append(
            f"{settings.records:,} records per measurement (the single-node run uses "
            f"{DEFAULT_RECORDS:,}): fewer, to keep the replicated run within about "
            "four minutes"
        )
    notes.append(
        "JetStream publishers connect to one server of the cluster "
        "(the stream leader may be another); Liftlog publishes through its one "
        "nats-server to the partition leader"
    )
    return notes


def _settings_json(settings: BenchSettings) -> dict[str, object]:
    body = dataclasses.asdict(settings)
    body["sizes"] = list(settings.sizes)
    body["latency_messages"] = settings.latency_messages
    body["batch_total_records"] = settings.batch_total_records
    body["replication_factor"] = REPLICATED_FACTOR
    body["node_fsync"] = "always"
    body["liftlog_ack_policy"] = "all"
    body["jetstream_storage"] = f"file, {REPLICATED_FACTOR} replicas, default sync"
    return body
