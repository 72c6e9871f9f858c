"""``liftlog bench``: start the stack, measure every size, print the table, write the JSON.

Returns 0 when every measurement ran (targets missed or not: the benchmark reports figures,
it does not assert them), 1 when a measurement could not run, 2 for invalid arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import nats
import nats.errors
from nats.aio.client import Client as NatsClient

from spark_log.bench.jetstream import varz
from spark_log.bench.machine import describe_machine
from spark_log.bench.node_probe import peak_rss_mb
from spark_log.bench.progress import Progress
from spark_log.bench.report import render_report
from spark_log.bench.results import NATS, NATS_SYNC, NODE, PUBLISHER, BenchResult
from spark_log.bench.settings import (
    ACK_TIMEOUT_S,
    DEFAULT_RECORDS,
    DEFAULT_SIZES,
    BenchSettings,
)
from spark_log.bench.size_run import Sides, measure_size
from spark_log.bench.stack import BenchStack, bench_stack
from spark_log.bench.verdicts import verdicts
from spark_log.client import Client
from spark_log.errors import InvalidRequestError, LiftlogError, UnavailableError


def run_bench(
    records: int = DEFAULT_RECORDS,
    sizes: Sequence[int] = DEFAULT_SIZES,
    data_dir: str | Path | None = None,
    json_path: str | Path | None = None,
) -> int:
    """Run every measurement for every size in one embedded stack; print; write JSON.

    ``records`` is per measurement (producer batches send ``BATCH_RECORDS_FACTOR`` times as
    many); ``data_dir`` keeps the stack's files (logs included) for a post-mortem.
    """
    try:
        settings = BenchSettings(records=records, sizes=tuple(sizes))
    except InvalidRequestError as exc:
        print(f"liftlog bench: {exc.message}", file=sys.stderr)
        return 2
    progress = Progress()
    try:
        with _data_root(data_dir) as root, bench_stack(root, progress) as stack:
            result = asyncio.run(_measure_all(stack, settings, progress, root))
            result.node_peak_rss_mb = peak_rss_mb(stack.node_pid)  # before the node stops
            result.machine["loadavg_at_end"] = _loadavg()
            progress.say("stopping every process the benchmark started ...")
    except LiftlogError as exc:
        print(f"liftlog bench failed: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    found = verdicts(result)
    print()
    print(render_report(result, found), flush=True)
    if json_path is not None:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = result.to_json([v.to_json() for v in found])
        path.write_text(json.dumps(body, indent=2) + "\n")
        print(f"\nwrote {path}")
    return 0


@contextlib.contextmanager
def _data_root(data_dir: str | Path | None) -> Iterator[Path]:
    """The given directory (kept), else a temporary one (removed afterwards)."""
    if data_dir is not None:
        root = Path(data_dir)
        root.mkdir(parents=True, exist_ok=True)
        yield root
        return
    with tempfile.TemporaryDirectory(prefix="liftlog-bench-") as tmp:
        yield Path(tmp)


@contextlib.asynccontextmanager
async def _nats(url: str) -> AsyncIterator[NatsClient]:
    """A plain nats-py connection (the JetStream side's publisher), closed on exit."""
    try:
        nc = await nats.connect(url, max_reconnect_attempts=0)
    except (nats.errors.Error, OSError) as exc:
        raise UnavailableError(f"cannot connect to NATS at {url}: {exc}") from exc
    try:
        yield nc
    finally:
        await nc.close()


async def _measure_all(
    stack: BenchStack, settings: BenchSettings, progress: Progress, root: Path
) -> BenchResult:
    nats_server = stack.standalone.nats
    server_version = str(varz(nats_server.monitor_url).get("version", "unknown"))
    machine = {**describe_machine(server_version), "loadavg_at_start": _loadavg()}
    result = BenchResult(machine, _settings_json(settings), notes=list(stack.notes))
    pids = {PUBLISHER: os.getpid(), NATS: nats_server.pid, NODE: stack.node_pid}
    if stack.sync_server is not None:
        pids[NATS_SYNC] = stack.sync_server.pid
    async with contextlib.AsyncExitStack() as exits:
        client = await exits.enter_async_context(
            Client(stack.api_url, nats_url=nats_server.url, ack_timeout_s=ACK_TIMEOUT_S)
        )
        nc = await exits.enter_async_context(_nats(nats_server.url))
        js_sync = None
        if stack.sync_server is not None:
            js_sync = (await exits.enter_async_context(_nats(stack.sync_server.url))).jetstream()
        sides = Sides(client, nc.jetstream(), js_sync, nats_server.url, nats_server.monitor_url,
                      stack.api_url, nc.max_payload, root, pids)
        for size in settings.sizes:
            result.sizes.append(await measure_size(sides, size, settings, progress))
    return result


def _loadavg() -> str:
    """The 1/5/15-minute load averages: other work on a shared machine shows up here."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _settings_json(settings: BenchSettings) -> dict[str, object]:
    body = dataclasses.asdict(settings)
    body["sizes"] = list(settings.sizes)
    body["latency_messages"] = settings.latency_messages
    body["batch_total_records"] = settings.batch_total_records
    body["node_fsync"] = "always"
    body["liftlog_ack_policy"] = "all"
    body["jetstream_storage"] = "file, 1 replica"
    return body
