"""``liftlog bench``: start the stack, measure every size, print the table, write the JSON.

Returns 0 when every measurement ran (targets missed or not: the benchmark reports figures,
it does not assert them), 1 when a measurement could not run, 2 for invalid arguments.
``replication`` picks the line-up: one node beside JetStream, or RF=3 beside JetStream R3.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from liftlog.bench.compare.lineup import LINEUPS, Lineup
from liftlog.bench.compare.report import render_report
from liftlog.bench.compare.results import BenchResult
from liftlog.bench.compare.sides import PUBLISHER
from liftlog.bench.compare.size_run import Connections, measure_size
from liftlog.bench.compare.stack import BenchStack, bench_stack
from liftlog.bench.compare.verdicts import verdicts
from liftlog.bench.consume.fanout import DEFAULT_FANOUT, measure_client_fanout, measure_fanout
from liftlog.bench.jetstream.server import varz
from liftlog.bench.publish.plain_request import ReplyInbox
from liftlog.bench.publish.settings import ACK_TIMEOUT_S, DEFAULT_SIZES, BenchSettings
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.node_probe import isr_changes, peak_rss_mb
from liftlog.bench.toolkit.plumbing import data_root, loadavg, nats_connection, write_json
from liftlog.bench.toolkit.progress import Progress
from spark_log.client import Client
from spark_log.errors import InvalidRequestError, LiftlogError

# nats-server's default max_payload, if /varz does not say (it always does in 2.x).
DEFAULT_MAX_PAYLOAD = 1024 * 1024
PLAIN_INBOX = "_INBOX.bench-plain"


def run_bench(
    records: int | None = None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    data_dir: str | Path | None = None,
    json_path: str | Path | None = None,
    replication: int = 1,
    fanout: int = DEFAULT_FANOUT,
) -> int:
    """Run every measurement for every size in one embedded stack; print; write JSON.

    ``records`` is per measurement (producer batches send ``BATCH_RECORDS_FACTOR`` times as
    many; None means the line-up's default); ``data_dir`` keeps the stack's files (logs
    included) for a post-mortem; ``replication=3`` compares Liftlog RF=3 with JetStream R3;
    ``fanout`` long polls are woken by one publish at the end (0: not measured).
    """
    lineup = LINEUPS.get(replication)
    if lineup is None:
        print(
            f"liftlog bench: --replication must be one of {tuple(LINEUPS)}, got {replication}",
            file=sys.stderr,
        )
        return 2
    if fanout < 0:
        print(f"liftlog bench: --fanout must be >= 0, got {fanout}", file=sys.stderr)
        return 2
    try:
        settings = lineup.settings(records, sizes)
    except InvalidRequestError as exc:
        print(f"liftlog bench: {exc.message}", file=sys.stderr)
        return 2
    progress = Progress()
    try:
        with data_root(data_dir) as root, bench_stack(root, progress, lineup) as stack:
            result = asyncio.run(_measure_all(stack, lineup, settings, progress, root, fanout))
            # before the nodes stop
            result.node_peak_rss_mb = {n: peak_rss_mb(p) for n, p in stack.node_pids().items()}
            result.isr_changes = isr_changes(stack.api_urls)
            result.machine["loadavg_at_end"] = loadavg()
            progress.say("stopping every process the benchmark started ...")
        progress.say("stopped")  # a slow stop (a node's controlled shutdown) shows up here
    except LiftlogError as exc:
        print(f"liftlog bench failed: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    found = verdicts(result, lineup)
    print()
    print(render_report(result, lineup, found), flush=True)
    if json_path is not None:
        path = write_json(json_path, result.to_json([v.to_json() for v in found]))
        print(f"\nwrote {path}")
    return 0


async def _measure_all(
    stack: BenchStack,
    lineup: Lineup,
    settings: BenchSettings,
    progress: Progress,
    root: Path,
    fanout: int,
) -> BenchResult:
    nats_server = stack.standalone.nats
    nats_varz = varz(nats_server.monitor_url)
    machine = {
        **describe_machine(str(nats_varz.get("version", "unknown"))),
        "loadavg_at_start": loadavg(),
    }
    result = BenchResult(
        machine,
        _settings_json(settings, lineup),
        lineup.replication_factor,
        notes=[*lineup.notes(settings), *stack.notes],
        replica_names=stack.replica_names(lineup.liftlog.key),
    )
    for note in result.notes:
        progress.say(f"note: {note}")
    async with contextlib.AsyncExitStack() as exits:
        client = await exits.enter_async_context(
            Client(stack.api_urls, nats_url=nats_server.url, ack_timeout_s=ACK_TIMEOUT_S)
        )
        jetstreams = {}
        plain_nc = await exits.enter_async_context(nats_connection(nats_server.url))
        inboxes = {lineup.liftlog.key: await ReplyInbox(plain_nc, PLAIN_INBOX).open()}
        for peer in stack.peers:
            nc = await exits.enter_async_context(nats_connection(peer.url))
            jetstreams[peer.side] = nc.jetstream()
            inboxes[peer.side] = await ReplyInbox(nc, f"{PLAIN_INBOX}-{peer.side}").open()
        conns = Connections(
            client,
            jetstreams,
            nats_server.url,
            nats_server.monitor_url,
            stack.api_urls[0],
            int(nats_varz.get("max_payload") or DEFAULT_MAX_PAYLOAD),
            root,
            {PUBLISHER: os.getpid(), **stack.pids()},
            inboxes,
        )
        for size in settings.sizes:
            result.sizes.append(await measure_size(conns, lineup, size, settings, progress))
        if fanout > 0:
            progress.say(f"fan-out: {fanout} long polls woken by one publish ...")
            result.fanout = await measure_fanout(client, fanout)
            progress.say(f"fan-out: {fanout} Client.subscribe iterators woken by one publish ...")
            result.fanout_clients = await measure_client_fanout(client, fanout)
    return result


def _settings_json(settings: BenchSettings, lineup: Lineup) -> dict[str, object]:
    body = dataclasses.asdict(settings)
    body["sizes"] = list(settings.sizes)
    body["latency_messages"] = settings.latency_messages
    body["batch_total_records"] = settings.batch_total_records
    body.update(lineup.settings_notes)
    return body
