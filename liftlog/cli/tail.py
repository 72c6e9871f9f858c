"""``liftlog tail``: a stream's committed records, every partition merged, or chosen ones."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from liftlog.cli.common import Subcommands, add_server_arg, credentials
from liftlog.cli.decoded_values import decoded_json, decoded_text
from liftlog.cli.describe import lake_compaction_line
from liftlog.cli.merge import follow_partitions
from liftlog.cli.tail_last import caught_up, record_count
from spark_log.client.positions import START_NAMES, STOP_LATEST, Cursor, Start, Stop, check_order
from spark_log.errors import InvalidRequestError, LiftlogError

CURSOR_PREFIX = "cursor:"
NOT_DECODED = object()
"""``print_record``'s default: the value prints as stored."""

if TYPE_CHECKING:
    from spark_log.api_models import StreamDescription
    from spark_log.client import Client
    from spark_log.log import Record

DEFAULT_TAIL_START = "earliest"


def add_tail_parser(sub: Subcommands) -> None:
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
        help="earliest | latest (the last committed record) | new-only (records committed "
        "from now on) | OFFSET | ISO-8601 time | cursor:ID (after the cursor's offset), per "
        f"partition (default: {DEFAULT_TAIL_START})",
    )
    p.add_argument(
        "--until",
        dest="stop",
        help="OFFSET (inclusive) | latest (the last record committed now) | ISO-8601 time "
        "(before the first record stamped after it), per partition: wait for records up to "
        "it on every partition, then exit 0 (default: no stop)",
    )
    p.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep waiting for new records on every partition (default: stop at the end)",
    )
    p.add_argument(
        "-n",
        "--lines",
        type=record_count,
        metavar="N",
        help="print only the last N records (Unix tail's -n; with -f, then follow; default: all)",
    )
    p.add_argument(
        "--max",
        type=record_count,
        metavar="N",
        help="print only the first N records, following if needed, then exit (Kafka's "
        "--max-messages; default: no limit)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line (default: text)")
    p.add_argument(
        "--raw",
        action="store_true",
        help="print a typed stream's values as stored, not decoded by their schema "
        "(default: decoded, as JSON)",
    )
    add_server_arg(p)
    p.set_defaults(run=_tail)


def _tail(args: argparse.Namespace) -> int:
    start = parse_start(args.start)
    stop = parse_stop(args.stop) if args.stop is not None else None
    check_order(start, stop)
    if args.lines is not None and args.max is not None:
        raise InvalidRequestError("-n prints the last N records, --max the first N: give one")
    return asyncio.run(_tail_async(args, start, stop))


def parse_start(text: str) -> Start:
    """``--from``: a start name, an offset, an ISO-8601 time (UTC when it names no zone) or
    ``cursor:ID`` (after the cursor's offset; from the earliest when it was never set)."""
    for name in START_NAMES:
        if text == name:
            return name
    if text.startswith(CURSOR_PREFIX) and len(text) > len(CURSOR_PREFIX):
        return Cursor(text.removeprefix(CURSOR_PREFIX))
    position = _offset_or_time(text)
    if position is None:
        raise InvalidRequestError(
            f"--from wants {', '.join(START_NAMES)}, an offset, an ISO-8601 time or "
            f"cursor:ID, got {text!r}"
        )
    return position


def parse_stop(text: str) -> Stop:
    """``--until``: latest, an offset or an ISO-8601 time (UTC when it names no zone)."""
    if text == STOP_LATEST:
        return STOP_LATEST
    position = _offset_or_time(text)
    if position is None:
        raise InvalidRequestError(
            f"--until wants latest, an offset or an ISO-8601 time, got {text!r}"
        )
    return position


def _offset_or_time(text: str) -> int | dt.datetime | None:
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def follows(follow: bool, stop: Stop | None) -> bool:
    """Whether tail waits for new records after catching up: with ``-f``, or until a stop
    that lies ahead (``--until latest`` is the end of the catch-up itself)."""
    if stop == STOP_LATEST:
        return False
    return follow or stop is not None


async def _tail_async(args: argparse.Namespace, start: Start, stop: Stop | None) -> int:
    from spark_log.client import Client

    async with Client(args.server, credentials=credentials(args)) as client:
        partitions = await _partitions(client, args.stream, args.partition)
        offsets = {p: await client.start_offset(args.stream, p, start) for p in partitions}
        typed = not args.raw and (await client.stream_spec(args.stream)).value_schema is not None
        printed = 0
        async for partition, record in caught_up(client, args.stream, offsets, stop, args.lines):
            if args.max is not None and printed >= args.max:
                return 0
            await _print(client, args, partition, record, typed)
            printed += 1
        if follows(args.follow, stop) and (args.max is None or printed < args.max):
            remaining = None if args.max is None else args.max - printed
            async for partition, record in follow_partitions(
                client, args.stream, offsets, remaining, stop
            ):
                await _print(client, args, partition, record, typed)
    return 0


async def _print(
    client: Client, args: argparse.Namespace, partition: int, record: Record, typed: bool
) -> None:
    """A typed stream's record with its value decoded (as stored when it does not decode:
    tail shows what is there rather than stopping)."""
    if not typed:
        print_record(partition, record, args.json)
        return
    try:
        decoded = await client.decode_value(args.stream, record.value)
    except LiftlogError:
        print_record(partition, record, args.json)
        return
    print_record(partition, record, args.json, decoded=decoded)


async def _partitions(client: Client, stream: str, chosen: list[int] | None) -> list[int]:
    described = await client.describe_stream(stream)
    count = len(described.partitions)
    _note_compaction(described, chosen or ())
    if not chosen:
        return list(range(count))
    missing = sorted({p for p in chosen if not 0 <= p < count})
    if missing:
        raise InvalidRequestError(
            f"stream {stream} has partitions 0..{count - 1}; no partition "
            f"{', '.join(map(str, missing))}"
        )
    return sorted(set(chosen))


def _note_compaction(described: StreamDescription, chosen: Iterable[int]) -> None:
    """On stderr: a key-compacted lake holds fewer records than the log tail reads."""
    line = lake_compaction_line(described, chosen)
    if line is not None:
        print(f"note: {line}; tail reads the log", file=sys.stderr, flush=True)


def print_record(
    partition: int, record: Record, as_json: bool, *, decoded: object = NOT_DECODED
) -> None:
    """One line per record: ``partition=P offset=O<TAB>time[<TAB>key=K]<TAB>value``; a
    ``decoded`` value prints as JSON (``--json``: the value is that JSON, not a string)."""
    value: object = record.value.decode("utf-8", "replace")
    if decoded is not NOT_DECODED:
        value = decoded_json(decoded) if as_json else decoded_text(decoded)
    key = record.key.decode("utf-8", "replace") if record.key is not None else None
    if as_json:
        print(json.dumps(_record_json(partition, record, key, value)), flush=True)
        return
    when = dt.datetime.fromtimestamp(record.timestamp / 1000, dt.UTC).isoformat(
        timespec="milliseconds"
    )
    key_part = f"\tkey={key}" if key is not None else ""
    print(f"partition={partition} offset={record.offset}\t{when}{key_part}\t{value}", flush=True)


def _record_json(
    partition: int, record: Record, key: str | None, value: object
) -> dict[str, object]:
    return {
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": key,
        "value": value,
        "subject": record.subject,
        "headers": {k: v.decode("utf-8", "replace") for k, v in record.headers},
    }
