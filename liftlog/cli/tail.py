"""``liftlog tail``: a stream's committed records, every partition merged, or chosen ones."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
from typing import TYPE_CHECKING, Any

from liftlog.cli.common import add_server_arg, credentials
from liftlog.cli.merge import follow_partitions, merged_records
from spark_log.errors import InvalidRequestError

if TYPE_CHECKING:
    from spark_log.client import Client

DEFAULT_TAIL_START = "earliest"


def add_tail_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tail",
        help="print a stream's committed records (every partition, merged by time)",
        description="Every partition is read and merged by timestamp (then partition, offset); "
        "each line shows its partition.",
    )
    p.add_argument("stream", help="the stream")
    p.add_argument(
        "--partition",
        type=int,
        action="append",
        help="only this partition (repeatable; default: every partition)",
    )
    p.add_argument(
        "--from",
        dest="start",
        default=DEFAULT_TAIL_START,
        help=f"earliest | latest | OFFSET | ISO-8601 time, per partition "
        f"(default: {DEFAULT_TAIL_START})",
    )
    p.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep waiting for new records on every partition (default: stop at the end)",
    )
    p.add_argument(
        "-n", "--max", type=int, help="stop after this many records in total (default: no limit)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line (default: text)")
    add_server_arg(p)
    p.set_defaults(run=_tail)


def _tail(args: argparse.Namespace) -> int:
    start = parse_start(args.start)
    try:
        return asyncio.run(_tail_async(args, start))
    except BrokenPipeError:  # `liftlog tail ... | head`
        return 0


def parse_start(text: str) -> str | int | dt.datetime:
    if text in ("earliest", "latest"):
        return text
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRequestError(
            f"--from wants earliest, latest, an offset or an ISO-8601 time, got {text!r}"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


async def _tail_async(args: argparse.Namespace, start: str | int | dt.datetime) -> int:
    from spark_log.client import Client

    async with Client(args.server, credentials=credentials(args)) as client:
        partitions = await _partitions(client, args.stream, args.partition)
        offsets = {p: await client.start_offset(args.stream, p, start) for p in partitions}
        printed = 0
        async for partition, record in merged_records(client, args.stream, offsets):
            if args.max is not None and printed >= args.max:
                return 0
            print_record(partition, record, args.json)
            printed += 1
        if args.follow and (args.max is None or printed < args.max):
            remaining = None if args.max is None else args.max - printed
            async for partition, record in follow_partitions(
                client, args.stream, offsets, remaining
            ):
                print_record(partition, record, args.json)
    return 0


async def _partitions(client: Client, stream: str, chosen: list[int] | None) -> list[int]:
    count = len((await client.describe_stream(stream)).partitions)
    if not chosen:
        return list(range(count))
    missing = sorted({p for p in chosen if not 0 <= p < count})
    if missing:
        raise InvalidRequestError(
            f"stream {stream} has partitions 0..{count - 1}; no partition "
            f"{', '.join(map(str, missing))}"
        )
    return sorted(set(chosen))


def print_record(partition: int, record: Any, as_json: bool) -> None:
    """One line per record: ``partition=P offset=O<TAB>time[<TAB>key=K]<TAB>value``."""
    value = record.value.decode("utf-8", "replace")
    key = record.key.decode("utf-8", "replace") if record.key is not None else None
    if as_json:
        print(json.dumps(_record_json(partition, record, key, value)), flush=True)
        return
    when = dt.datetime.fromtimestamp(record.timestamp / 1000, dt.UTC).isoformat(
        timespec="milliseconds"
    )
    key_part = f"\tkey={key}" if key is not None else ""
    print(f"partition={partition} offset={record.offset}\t{when}{key_part}\t{value}", flush=True)


def _record_json(partition: int, record: Any, key: str | None, value: str) -> dict[str, Any]:
    return {
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": key,
        "value": value,
        "subject": record.subject,
        "headers": {k: v.decode("utf-8", "replace") for k, v in record.headers},
    }
