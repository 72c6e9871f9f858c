"""Cursor commits (``Client.set_cursor``) beside JetStream key-value puts, in one run.

Run from the repository root (``make bench-cursors`` does this)::

    .venv/bin/python bench/cursor_commits.py --runs 3 \
        --json bench/results/cursors.json

One embedded stack (``liftlog standalone`` with JetStream on): NATS, ZooKeeper and three
nodes, so ``__cursors`` has its production shape (replication factor 3, acks=all). The peer is
a JetStream key-value bucket on the same nats-server (one server: its puts are stored once,
where a cursor is stored on three nodes before it is acknowledged). Per run:

1. sequential: one commit after another, each waiting for its answer: p50/p99 latency;
2. concurrent: ``--writers`` tasks committing distinct cursor ids at once: commits/s.

A cursor commit is a REST ``PUT`` through the Python client (any node; a node that does not
lead the cursor's ``__cursors`` partition forwards it once). Every figure is the median of
the runs with the spread (min..max). Every cursor is read back at the end: a commit
acknowledged but not stored is reported. Nothing is asserted; every process is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats
from nats.js.kv import KeyValue

from liftlog.bench.jetstream.server import varz
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.node_probe import isr_changes
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread
from liftlog.bench.toolkit.table import render_table
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client

STREAM = "bench-cursors"
BUCKET = "bench_cursors"
LIFTLOG = "liftlog cursors"
JETSTREAM = "JetStream KV"
SIDES = (LIFTLOG, JETSTREAM)
Commit = Callable[[str, int], Awaitable[None]]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def sequential(commit: Commit, count: int) -> dict[str, float]:
    """``count`` commits of one cursor, one at a time: latency in ms."""
    latencies = []
    for offset in range(count):
        started = time.perf_counter()
        await commit("sequential", offset)
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "p50_ms": statistics.median(latencies),
        "p99_ms": _percentile(latencies, 0.99),
        "per_s": count / (sum(latencies) / 1000),
    }


async def concurrent(commit: Commit, writers: int, per_writer: int) -> float:
    """``writers`` tasks, each committing its own cursor ``per_writer`` times: commits/s."""

    async def one(writer: int) -> None:
        for offset in range(per_writer):
            await commit(f"writer-{writer}", offset)

    started = time.perf_counter()
    await asyncio.gather(*(one(w) for w in range(writers)))
    return writers * per_writer / (time.perf_counter() - started)


async def run_once(
    client: Client, kv: KeyValue, args: argparse.Namespace, first: str
) -> dict[str, dict[str, float]]:
    async def liftlog_commit(cursor_id: str, offset: int) -> None:
        await client.set_cursor(cursor_id, STREAM, 0, offset)

    async def jetstream_commit(cursor_id: str, offset: int) -> None:
        await kv.put(cursor_id, str(offset).encode())

    commits = {LIFTLOG: liftlog_commit, JETSTREAM: jetstream_commit}
    order = SIDES if first == LIFTLOG else tuple(reversed(SIDES))
    figures: dict[str, dict[str, float]] = {}
    for side in order:
        seq = await sequential(commits[side], args.sequential)
        rate = await concurrent(commits[side], args.writers, args.per_writer)
        figures[side] = {**seq, "concurrent_per_s": rate}
    return figures


async def check_stored(client: Client, args: argparse.Namespace) -> list[str]:
    """Every cursor holds its last acknowledged value."""
    wrong = []
    expected = {"sequential": args.sequential - 1}
    expected.update({f"writer-{w}": args.per_writer - 1 for w in range(args.writers)})
    for cursor_id, offset in expected.items():
        stored = await client.fetch_cursor(cursor_id, STREAM, 0)
        if stored != offset:
            wrong.append(f"{cursor_id}: stored {stored}, last acknowledged {offset}")
    return wrong


async def bench(stack: Standalone, args: argparse.Namespace, progress: Progress) -> JsonObject:
    runs: list[dict[str, dict[str, float]]] = []
    async with Client(stack.nodes[0].api_url, nats_url=stack.nats.url) as client:
        await client.create_stream(STREAM, f"{STREAM}.in")
        await client.set_cursor("warm-up", STREAM, 0, 0)  # creates __cursors
        nc = await nats.connect(stack.nats.url)
        try:
            kv = await nc.jetstream().create_key_value(bucket=BUCKET, history=1)
            for run in range(args.runs):
                first = SIDES[run % 2]
                progress.say(f"run {run + 1}/{args.runs} ({first} first), load {loadavg()}")
                runs.append(await run_once(client, kv, args, first))
        finally:
            await nc.close()
        lost = await check_stored(client, args)
    changes = await asyncio.to_thread(isr_changes, [n.api_url for n in stack.nodes])
    return {"runs": runs, "not_stored": lost, "isr_changes": changes}


def summarize(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, Spread]]:
    keys = ("concurrent_per_s", "per_s", "p50_ms", "p99_ms")
    return {side: {k: Spread.of([r[side][k] for r in runs]) for k in keys} for side in SIDES}


def render(summary: dict[str, dict[str, Spread]], args: argparse.Namespace) -> str:
    headers = [
        "",
        f"commits/s, {args.writers} writers",
        "commits/s, sequential",
        "p50 ms",
        "p99 ms",
    ]
    rows = [
        [
            side,
            summary[side]["concurrent_per_s"].render(),
            summary[side]["per_s"].render(),
            summary[side]["p50_ms"].render(2),
            summary[side]["p99_ms"].render(2),
        ]
        for side in SIDES
    ]
    return render_table(headers, rows)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs (default: 3)")
    parser.add_argument("--nodes", type=int, default=3, help="Liftlog nodes (default: 3)")
    parser.add_argument("--sequential", type=int, default=500, help="sequential commits")
    parser.add_argument("--writers", type=int, default=16, help="concurrent writers")
    parser.add_argument("--per-writer", type=int, default=100, help="commits per writer")
    parser.add_argument("--data-dir", default=None, help="keep the stack's data here")
    parser.add_argument("--json", default=None, help="write the results to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    progress = Progress()
    with data_root(args.data_dir) as root:
        stack = Standalone(
            nodes=args.nodes,
            data_dir=Path(root) / "stack",
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port_block(args.nodes),
            liftbridge_port=free_port_block(args.nodes),
            jetstream=True,
            nats_monitor_port=free_port(),
            report=progress.say,
        )
        with stack:
            version = str(varz(stack.nats.monitor_url).get("version", "unknown"))
            result = asyncio.run(bench(stack, args, progress))
    summary = summarize(result["runs"])
    print(render(summary, args))
    print(f"runs: {args.runs}; not stored: {result['not_stored'] or 'none'}")
    changes = result["isr_changes"]
    print(f"ISR changes: {changes['shrinks']} shrinks, {changes['expands']} expands")
    if args.json:
        body = {
            "machine": describe_machine(version),
            "settings": vars(args),
            "summary": {
                side: {k: v.to_json() for k, v in figures.items()}
                for side, figures in summary.items()
            },
            "runs": result["runs"],
            "not_stored": result["not_stored"],
            "isr_changes": result["isr_changes"],
        }
        print(f"results: {write_json(args.json, body)}")
    return 1 if result["not_stored"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
