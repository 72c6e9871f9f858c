"""``liftlog group list|describe|reset-offsets|delete``: consumer groups, over REST.

Shaped after ``kafka-consumer-groups``: ``describe`` prints one row per partition (STREAM
PARTITION MEMBER CLIENT-ID HOST COMMITTED HIGH_WATERMARK LAG) and then the members;
``reset-offsets`` prints the plan and changes nothing without ``--execute``. COMMITTED is the
last offset processed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Callable

from liftlog.cli.common import Subcommands, add_json_arg, add_server_arg, num, print_table, rest
from spark_log.api_models import GroupMember, GroupPartition
from spark_log.client import group_admin
from spark_log.errors import InvalidRequestError


def add_group_parser(sub: Subcommands) -> None:
    group = sub.add_parser("group", help="list, describe, reset or delete consumer groups")
    gsub = group.add_subparsers(title="group commands", metavar="COMMAND")
    _leaf(gsub, "list", "every consumer group", _list, named=False)
    _leaf(gsub, "describe", "members, committed offsets and lag", _describe)
    _leaf(gsub, "delete", "delete an empty group and its offsets", _delete)
    reset = _leaf(gsub, "reset-offsets", "move an empty group's offsets of a stream", _reset)
    reset.add_argument("--stream", required=True, help="the stream whose offsets move")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument(
        "--to-earliest",
        action="store_true",
        help="the first readable offset (one target is required: no default)",
    )
    to.add_argument("--to-latest", action="store_true", help="the high watermark (no default)")
    to.add_argument("--to-offset", type=int, metavar="N", help="read offset N next (no default)")
    to.add_argument(
        "--to-datetime",
        metavar="ISO",
        help="the first record at or after this time, UTC without a zone (no default)",
    )
    to.add_argument(
        "--shift-by",
        type=int,
        metavar="N",
        help="move the committed position by N records (no default)",
    )
    reset.add_argument("--partitions", help="comma-separated partitions (default: all of them)")
    reset.add_argument(
        "--execute", action="store_true", help="apply the plan (default: print it only)"
    )


def _leaf(
    sub: Subcommands,
    name: str,
    helptext: str,
    run: Callable[[argparse.Namespace], int],
    *,
    named: bool = True,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=helptext)
    if named:
        parser.add_argument("group", help="the consumer group")
    add_json_arg(parser)
    add_server_arg(parser)
    parser.set_defaults(run=run)
    return parser


def _print_json(document: object) -> int:
    print(json.dumps(document, indent=2))
    return 0


def _list(args: argparse.Namespace) -> int:
    groups = group_admin.list_groups(rest(args))
    if args.json:
        return _print_json([g.to_json() for g in groups])
    print_table(
        ["GROUP", "MEMBERS", "EPOCH", "STATE"],
        [[g.group, g.members, g.group_epoch, g.state] for g in groups],
    )
    return 0


def _describe(args: argparse.Namespace) -> int:
    described = group_admin.describe_group(rest(args), args.group)
    if args.json:
        return _print_json(described.to_json())
    print(
        f"group {described.group}: {described.state}, epoch {described.group_epoch}, "
        f"coordinator {described.coordinator}"
    )
    members = {m.member_id: m for m in described.members}
    print_table(
        [
            "STREAM",
            "PARTITION",
            "MEMBER",
            "CLIENT-ID",
            "HOST",
            "COMMITTED",
            "HIGH_WATERMARK",
            "LAG",
        ],
        [_partition_row(p, members.get(p.member_id or "")) for p in described.partitions],
    )
    if described.members:
        print()
        print_table(
            ["MEMBER", "CLIENT-ID", "HOST", "INSTANCE", "EPOCH", "STREAMS", "ASSIGNED", "REVOKING"],
            [_member_row(m) for m in described.members],
        )
    return 0


def _partition_row(p: GroupPartition, member: GroupMember | None) -> list[object]:
    return [
        p.stream,
        p.partition,
        p.member_id or "-",
        *_client(member),
        num(p.committed),
        num(p.high_watermark),
        num(p.lag),
    ]


def _client(member: GroupMember | None) -> list[str]:
    """CLIENT-ID and HOST: ``-`` for a partition no member holds, or a field not reported."""
    if member is None:
        return ["-", "-"]
    return [member.client_id or "-", member.client_host or "-"]


def _member_row(m: GroupMember) -> list[object]:
    assigned, revoking = _partitions(m.assigned), _partitions(m.revoking)
    return [
        m.member_id,
        *_client(m),
        m.instance_id or "-",
        m.member_epoch,
        ",".join(m.streams),
        assigned,
        revoking,
    ]


def _partitions(by_stream: dict[str, list[int]]) -> str:
    text = " ".join(f"{s}:{','.join(map(str, ps))}" for s, ps in sorted(by_stream.items()))
    return text or "-"


def _reset(args: argparse.Namespace) -> int:
    to, value = _target(args)
    partitions = None
    if args.partitions:
        try:
            partitions = [int(p) for p in args.partitions.split(",")]
        except ValueError as exc:
            raise InvalidRequestError(f"--partitions: {args.partitions!r}") from exc
    answer = group_admin.reset_offsets(
        rest(args), args.group, args.stream, to, value, partitions, args.execute
    )
    if args.json:
        return _print_json(answer.to_json())
    print_table(
        ["STREAM", "PARTITION", "COMMITTED", "NEW_COMMITTED"],
        [[e.stream, e.partition, num(e.current), e.new] for e in answer.offsets],
    )
    if answer.execute:
        print(f"group {args.group}: offsets reset")
    else:
        print(f"group {args.group}: plan only; add --execute to apply")
    return 0


def _target(args: argparse.Namespace) -> tuple[str, int | None]:
    if args.to_earliest:
        return "earliest", None
    if args.to_latest:
        return "latest", None
    if args.to_offset is not None:
        return "offset", args.to_offset
    if args.shift_by is not None:
        return "shift", args.shift_by
    try:
        when = dt.datetime.fromisoformat(args.to_datetime)
    except ValueError as exc:
        raise InvalidRequestError(f"--to-datetime: not an ISO time: {args.to_datetime}") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return "timestamp", int(when.timestamp() * 1000)


def _delete(args: argparse.Namespace) -> int:
    answer = group_admin.delete_group(rest(args), args.group)
    if args.json:
        return _print_json(answer.to_json())
    print(f"group {args.group}: deleted")
    return 0
