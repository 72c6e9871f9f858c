"""``liftlog consume``: a consumer group member on the command line (Kafka's console consumer
with ``--group``).

It prints the records of the partitions the coordinator assigns it and commits what it
printed. SIGTERM (how containers and service managers stop a process) and SIGINT (Ctrl-C)
end it the same way: it commits, leaves the group, and the coordinator hands its partitions
to the other members at once instead of after the session timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import signal
import sys
from typing import TYPE_CHECKING

from liftlog.cli.common import Subcommands, add_server_arg, credentials

if TYPE_CHECKING:
    from spark_log.client.group_consumer import GroupConsumer, GroupRecord
    from spark_log.client.group_session import StreamPartition

DEFAULT_OFFSET_RESET = "latest"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def add_consume_parser(sub: Subcommands) -> None:
    p = sub.add_parser(
        "consume",
        help="consume streams as a member of a consumer group (commits, leaves on exit)",
        description="Joins the group, prints the records of the partitions it is assigned and "
        "commits them; SIGTERM or SIGINT commits and leaves the group, so its partitions "
        "move to the other members at once.",
    )
    p.add_argument("group", help="the consumer group")
    p.add_argument("streams", nargs="+", metavar="stream", help="the streams to consume")
    p.add_argument(
        "--from",
        dest="offset_reset",
        choices=("earliest", "latest"),
        default=DEFAULT_OFFSET_RESET,
        help="where a partition the group never committed starts (Kafka's auto.offset.reset; "
        f"default: {DEFAULT_OFFSET_RESET})",
    )
    p.add_argument(
        "--client-id",
        help="the name group describe shows for this member (Kafka's client.id; "
        "default: liftlog-consume-<hostname>-<pid>)",
    )
    p.add_argument(
        "--instance-id", help="static membership: a stable id across restarts (default: none)"
    )
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        help="how long the group waits for a silent member (default: the nodes' setting)",
    )
    p.add_argument(
        "-n", "--max", type=int, help="leave after this many records (default: no limit)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line (default: text)")
    add_server_arg(p)
    p.set_defaults(run=_consume)


def _consume(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_consume_async(args))
    except BrokenPipeError:  # `liftlog consume ... | head`
        return 0


async def _consume_async(args: argparse.Namespace) -> int:
    from spark_log.client import Client
    from spark_log.client.group_consumer import default_client_id

    stop = _stop_on_signals()
    client_id = args.client_id or default_client_id().replace("liftlog-", "liftlog-consume-", 1)
    async with Client(args.server, credentials=credentials(args)) as client:
        consumer = client.consume(
            args.group,
            args.streams,
            auto_offset_reset=args.offset_reset,
            session_timeout_ms=args.session_timeout_ms,
            instance_id=args.instance_id,
            client_id=client_id,
            on_assign=lambda ps: _say("assigned", ps),
            on_revoke=lambda ps: _say("revoked", ps),
        )
        async with consumer:  # leaving the block commits and leaves the group
            member = consumer.member_id
            print(f"joined group {args.group} as {member} ({client_id})", file=sys.stderr)
            printed = await _print_until_stopped(consumer, stop, args.max, args.json)
        print(f"left group {args.group} after {printed} record(s)", file=sys.stderr, flush=True)
    return 0


def _stop_on_signals() -> asyncio.Event:
    """An event SIGTERM and SIGINT set, instead of killing the process or raising
    KeyboardInterrupt in the middle of a commit."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    return stop


async def _print_until_stopped(
    consumer: GroupConsumer, stop: asyncio.Event, limit: int | None, as_json: bool
) -> int:
    """Print records until ``limit`` or a stop signal; how many were printed."""
    printed = 0

    async def print_records() -> None:
        nonlocal printed
        if limit is not None and limit <= 0:
            return
        async for record in consumer:
            _print_record(record, as_json)
            printed += 1
            if limit is not None and printed >= limit:
                return

    reader = asyncio.ensure_future(print_records())
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (reader, stopper):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stopper
        with contextlib.suppress(asyncio.CancelledError):
            await reader  # re-raises what ended the reading, a cancellation aside
    return printed


def _say(what: str, partitions: list[StreamPartition]) -> None:
    listed = ", ".join(f"{tp.stream}/{tp.partition}" for tp in sorted(partitions))
    print(f"{what}: {listed or 'nothing'}", file=sys.stderr, flush=True)


def _print_record(record: GroupRecord, as_json: bool) -> None:
    """One line per record, as ``tail`` prints them, with the stream first."""
    value = record.value.decode("utf-8", "replace")
    key = record.key.decode("utf-8", "replace") if record.key is not None else None
    if as_json:
        body = {
            "stream": record.stream,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": key,
            "value": value,
        }
        print(json.dumps(body), flush=True)
        return
    when = dt.datetime.fromtimestamp(record.timestamp / 1000, dt.UTC).isoformat(
        timespec="milliseconds"
    )
    key_part = f"\tkey={key}" if key is not None else ""
    print(
        f"stream={record.stream} partition={record.partition} offset={record.offset}\t{when}"
        f"{key_part}\t{value}",
        flush=True,
    )
