"""Consumer group rebalances: how long a join, a leave and a killed member take to settle, and
what a kill delivers again beside what its last commit says it must.

Run from the repository root (``make bench-groups`` does this)::

    .venv/bin/python bench/group_rebalance.py --runs 3 \
        --json bench/results/groups.json

One embedded stack (``liftlog standalone``: NATS, ZooKeeper, three nodes). Per run, a fresh
six-partition stream full of records and a fresh group with two members consuming it
(``Client.consume``, manual commits every ``--commit-every`` records, ``--delay-ms`` of work
per record), then three rebalances while they consume:

1. join: a third member joins (``Client.consume`` in this process);
2. leave: that member closes (it commits and leaves);
3. kill: a member in a process of its own (``liftlog.bench.group_member``) joins, consumes,
   and is killed with SIGKILL; the coordinator finds it gone when its session times out.

A rebalance's time runs from the trigger (the join's start, the close's start, the SIGKILL)
until the coordinator describes the group as ``stable`` with the new member count at a newer
group epoch: every member holds exactly its target. The kill's figure includes finding the
member gone: its session (``--session-ms``) ends that long after its last heartbeat, so
between one heartbeat interval (a third of the session) less than the session and the
session after the kill. After the kill, every record is
consumed to the end, and the records delivered twice are counted beside those the killed
member processed after its group's committed offset (read right after the kill): the two
must be equal. There is no peer: JetStream's consumers have no group membership to
rebalance. Nothing is asserted; every process is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from liftlog.bench.errors import BenchError
from liftlog.bench.group_member import expected_redelivery, member_view
from liftlog.bench.jetstream.server import varz
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread
from liftlog.bench.toolkit.table import render_table
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.client.group_admin import describe_group
from spark_log.client.group_consumer import GroupConsumer
from spark_log.client.rest import RestClient
from spark_log.errors import GroupNotFoundError

PARTITIONS = 6
POLL_S = 0.02
SETTLE_TIMEOUT_S = 120.0
REBALANCES = ("join", "leave", "kill")
Seen = list[tuple[int, int]]  # (partition, offset) delivered to the members of this process


async def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: not within {SETTLE_TIMEOUT_S:.0f} s")
        await asyncio.sleep(POLL_S)


async def settled(rest: RestClient, group: str, members: int, after_epoch: int) -> int:
    """Wait until the group is stable with ``members`` at an epoch past ``after_epoch``."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        try:
            described = await asyncio.to_thread(describe_group, rest, group)
        except GroupNotFoundError:  # nobody has joined yet
            described = None
        if (
            described is not None
            and described.state == "stable"
            and len(described.members) == members
            and described.group_epoch > after_epoch
        ):
            return described.group_epoch
        if time.monotonic() > deadline:
            raise BenchError(f"group {group}: not stable with {members} members")
        await asyncio.sleep(POLL_S)


async def consume(consumer: GroupConsumer, seen: Seen, args: argparse.Namespace) -> None:
    count = 0
    async for record in consumer:
        await asyncio.sleep(args.delay_ms / 1000)  # the work a record takes
        seen.append((record.partition, record.offset))
        count += 1
        if count % args.commit_every == 0:
            await consumer.commit()


class Run:
    """One run: its stream, its group and the members of this process."""

    def __init__(self, client: Client, rest: RestClient, args: argparse.Namespace, n: int) -> None:
        self.client = client
        self.rest = rest
        self.args = args
        self.stream = f"bench-groups-{n}"
        self.group = f"bench-group-{n}"
        self.seen: Seen = []
        self.members: list[GroupConsumer] = []
        self.tasks: list[asyncio.Task[None]] = []

    def start_member(self) -> GroupConsumer:
        consumer = self.client.consume(
            self.group,
            [self.stream],
            auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=self.args.session_ms,
            wait_ms=200,
        )
        self.members.append(consumer)
        self.tasks.append(asyncio.create_task(consume(consumer, self.seen, self.args)))
        return consumer

    async def stop(self) -> None:
        for consumer in self.members:
            await consumer.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def everything(self) -> set[tuple[int, int]]:
        """Both fills: before the members start, and once the killed member holds its share."""
        return {(p, o) for p in range(PARTITIONS) for o in range(2 * self.args.records)}


async def create(client: Client, stream: str) -> None:
    await client.create_stream(stream, f"{stream}.in", partitions=PARTITIONS)


async def fill(client: Client, stream: str, first: int, records: int) -> None:
    """``records`` more records in every partition, numbered from ``first``."""
    for p in range(PARTITIONS):
        for start in range(first, first + records, 1000):
            values = [f"{p}-{i}" for i in range(start, min(first + records, start + 1000))]
            await client.publish_batch(stream, values, partition=p)


async def join_and_leave(run: Run, epoch: int) -> tuple[dict[str, float], int]:
    started = time.monotonic()
    third = run.start_member()
    epoch = await settled(run.rest, run.group, 3, epoch)
    joined = time.monotonic() - started
    started = time.monotonic()
    await third.close()
    epoch = await settled(run.rest, run.group, 2, epoch)
    return {"join": joined, "leave": time.monotonic() - started}, epoch


def member_process(run: Run, servers: str, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    argv = [
        sys.executable, "-m", "liftlog.bench.group_member", servers, run.group, run.stream,
        str(out), str(run.args.commit_every), str(run.args.session_ms),
        str(run.args.delay_ms / 1000),
    ]  # fmt: skip
    return subprocess.Popen(argv, env=env)


async def kill_member(run: Run, servers: str, out: Path, epoch: int) -> dict[str, float]:
    proc = member_process(run, servers, out)
    try:
        epoch = await settled(run.rest, run.group, 3, epoch)
        await wait_until(lambda: bool(member_view(out)[0]), "the member holding partitions")
        # records for every member again, so the one to be killed is working when it dies
        await fill(run.client, run.stream, run.args.records, run.args.records)
        await wait_until(lambda: bool(member_view(out)[1]), "the member processing")
        proc.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        before = len(run.seen)  # what this process's members deliver from now on
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    committed = await asyncio.to_thread(committed_offsets, run)
    await settled(run.rest, run.group, 2, epoch)
    rebalance_s = time.monotonic() - killed_at
    held, processed = member_view(out)
    await wait_until(lambda: set(run.seen) | set(processed) >= run.everything(), "consumed")
    again = set(run.seen[before:]) & set(processed)
    expected = expected_redelivery(processed, held, committed)
    return {
        "kill": rebalance_s,
        "redelivered": float(len(again)),
        "expected": float(len(expected)),
        "equal": float(again == expected),
    }


def committed_offsets(run: Run) -> dict[int, int | None]:
    body = run.rest.request("GET", f"/v1/groups/{run.group}/offsets").json()
    return {o["partition"]: o["offset"] for o in body["offsets"]}


async def one_run(client: Client, rest: RestClient, servers: str, args: argparse.Namespace,
                  n: int, root: Path) -> dict[str, float]:  # fmt: skip
    run = Run(client, rest, args, n)
    await create(client, run.stream)
    await fill(client, run.stream, 0, args.records)
    try:
        run.start_member()
        run.start_member()
        epoch = await settled(rest, run.group, 2, 0)
        figures, epoch = await join_and_leave(run, epoch)
        figures |= await kill_member(run, servers, root / f"member-{n}.log", epoch)
    finally:
        await run.stop()
    return figures


async def bench(stack: Standalone, args: argparse.Namespace, progress: Progress,
                root: Path) -> list[dict[str, float]]:  # fmt: skip
    servers = ",".join(node.api_url for node in stack.nodes)
    rest = RestClient(stack.nodes[0].api_url, 30.0)
    runs = []
    async with Client(servers=servers.split(","), nats_url=stack.nats.url) as client:
        for n in range(args.runs):
            progress.say(f"run {n + 1}/{args.runs}, load {loadavg()}")
            runs.append(await one_run(client, rest, servers, args, n, root))
    return runs


def render(runs: list[dict[str, float]], args: argparse.Namespace) -> str:
    rows = [[name, Spread.of([r[name] for r in runs]).render(2)] for name in REBALANCES]
    table = render_table(["rebalance", "seconds, median (min..max)"], rows)
    again = ", ".join(
        f"run {i + 1}: {r['redelivered']:.0f} delivered again, {r['expected']:.0f} expected"
        for i, r in enumerate(runs)
    )
    session = f"session timeout {args.session_ms} ms"
    return f"{table}\n({session}: a kill is found that long after the last heartbeat)\n{again}"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs (default: 3)")
    parser.add_argument("--records", type=int, default=3000, help="records per partition")
    parser.add_argument("--delay-ms", type=float, default=2.0, help="work per record, ms")
    parser.add_argument("--commit-every", type=int, default=50, help="records per commit")
    parser.add_argument("--session-ms", type=int, default=3000, help="member session timeout")
    parser.add_argument("--data-dir", default=None, help="keep the stack's data here")
    parser.add_argument("--json", default=None, help="write the results to this file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    progress = Progress()
    with data_root(args.data_dir) as root:
        stack = Standalone(
            nodes=3,
            data_dir=Path(root) / "stack",
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port_block(3),
            liftbridge_port=free_port_block(3),
            nats_monitor_port=free_port(),
            report=progress.say,
        )
        with stack:
            version = str(varz(stack.nats.monitor_url).get("version", "unknown"))
            runs = asyncio.run(bench(stack, args, progress, Path(root)))
    print(render(runs, args))
    unequal = [i + 1 for i, r in enumerate(runs) if not r["equal"]]
    print(f"runs: {args.runs}; re-delivery differing from the last commit: {unequal or 'none'}")
    if args.json:
        body = {"machine": describe_machine(version), "settings": vars(args), "runs": runs}
        print(f"results: {write_json(args.json, body)}")
    return 1 if unequal else 0


if __name__ == "__main__":
    raise SystemExit(main())
