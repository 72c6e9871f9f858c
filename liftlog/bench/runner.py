"""``liftlog bench``: start the stack, measure every size, print the table, write the JSON.

Returns 0 when every measurement ran (targets missed or not: the benchmark reports figures,
it does not assert them), 1 when a measurement could not run, 2 for invalid arguments.
``replication=3`` runs the replicated benchmark instead (see ``replicated_runner``).
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
from liftlog.bench.report import render_report
from liftlog.bench.results import NATS, NATS_SYNC, NODE, PUBLISHER, BenchResult
from liftlog.bench.settings import (
    ACK_TIMEOUT_S,
    DEFAULT_RECORDS,
    DEFAULT_SIZES,
    REPLICATION_FACTORS,
    BenchSettings,
)
from liftlog.bench.size_run import Sides, measure_size
from liftlog.bench.stack import BenchStack, bench_stack
from liftlog.bench.verdicts import verdicts
from spark_log.client import Client
from spark_log.errors import InvalidRequestError, LiftlogError


def run_bench(
    records: int | None = None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    data_dir: str | Path | None = None,
    json_path: str | Path | None = None,
    replication: int = 1,
) -> int:
    """Run every measurement for every size in one embedded stack; print; write JSON.

    ``records`` is per measurement (producer batches send ``BATCH_RECORDS_FACTOR`` times as
    many; None means the mode's default); ``data_dir`` keeps the stack's files (logs included)
    for a post-mortem; ``replication=3`` compares Liftlog RF=3 with JetStream R3 instead.
    """
    if replication not in REPLICATION_FACTORS:
        print(
            f"liftlog bench: --replication must be one of {REPLICATION_FACTORS}, got {replication}",
            file=sys.stderr,
        )
        return 2
    if replication > 1:
        from liftlog.bench.replicated_runner import run_replicated_bench

        return run_replicated_bench(records, sizes, data_dir, json_path)
    try:
        settings = BenchSettings(
            records=DEFAULT_RECORDS if records is None else records, sizes=tuple(sizes)
        )
    except InvalidRequestError as exc:
        print(f"liftlog bench: {exc.message}", file=sys.stderr)
        return 2
    progress = Progress()
    try:
        with data_root(data_dir) as root, bench_stack(root, progress) as stack:
            result = asyncio.run(_measure_all(stack, settings, progress, root))
            result.node_peak_rss_mb = peak_rss_mb(stack.node_pid)  # before the node stops
            result.machine["loadavg_at_end"] = loadavg()
            progress.say("stopping every process the benchmark started ...")
    except LiftlogError as exc:
        print(f"liftlog bench failed: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    found = verdicts(result)
    print()
    print(render_report(result, found), flush=True)
    if json_path is not None:
        path = write_json(json_path, result.to_json([v.to_json() for v in found]))
        print(f"\nwrote {path}")
    return 0


async def _measure_all(
    stack: BenchStack, settings: BenchSettings, progress: Progress, root: Path
) -> BenchResult:
    nats_server = stack.standalone.nats
    server_version = str(varz(nats_server.monitor_url).get("version", "unknown"))
    machine = {**describe_machine(server_version), "loadavg_at_start": loadavg()}
    result = BenchResult(machine, _settings_json(settings), notes=list(stack.notes))
    pids = {PUBLISHER: os.getpid(), NATS: nats_server.pid, NODE: stack.node_pid}
    if stack.sync_server is not None:
        pids[NATS_SYNC] = stack.sync_server.pid
    async with contextlib.AsyncExitStack() as exits:
        client = await exits.enter_async_context(
            Client(stack.api_url, nats_url=nats_server.url, ack_timeout_s=ACK_TIMEOUT_S)
        )
        nc = await exits.enter_async_context(nats_connection(nats_server.url))
        js_sync = None
        if stack.sync_server is not None:
            sync_nc = await exits.enter_async_context(nats_connection(stack.sync_server.url))
            js_sync = sync_nc.jetstream()
        sides = Sides(
            client,
            nc.jetstream(),
            js_sync,
            nats_server.url,
            nats_server.monitor_url,
            stack.api_url,
            nc.max_payload,
            root,
            pids,
        )
        for size in settings.sizes:
            result.sizes.append(await measure_size(sides, size, settings, progress))
    return result


def _settings_json(settings: BenchSettings) -> dict[str, object]:
    body = dataclasses.asdict(settings)
    body["sizes"] = list(settings.sizes)
    body["latency_messages"] = settings.latency_messages
    body["batch_total_records"] = settings.batch_total_records
    body["node_fsync"] = "always"
    body["liftlog_ack_policy"] = "all"
    body["jetstream_storage"] = "file, 1 replica"
    return body
