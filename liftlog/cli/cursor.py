"""``liftlog cursor set|get|delete``: durable cursors, over REST.

A cursor is the offset of the last record a consumer processed in one stream partition; the
consumer resumes at the next one. ``get`` of a cursor never set prints ``not set`` (JSON
``"offset": null``), which is not offset 0.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from liftlog.cli.common import Subcommands, add_json_arg, add_server_arg, print_result, rest
from spark_log.client import cursors


def add_cursor_parser(sub: Subcommands) -> None:
    cursor = sub.add_parser("cursor", help="set, get or delete a durable cursor")
    csub = cursor.add_subparsers(title="cursor commands", metavar="COMMAND")
    setter = _leaf(csub, "set", "store the last offset a consumer processed", _set)
    setter.add_argument("offset", type=int, help="the last offset processed (-1: none yet)")
    _leaf(csub, "get", "the cursor's offset ('not set' when never set)", _get)
    _leaf(csub, "delete", "forget the cursor (it reads as never set again)", _delete)


def _leaf(
    sub: Subcommands, name: str, helptext: str, run: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(name, help=helptext)
    parser.add_argument("stream", help="the stream")
    parser.add_argument("partition", type=int, help="the partition")
    parser.add_argument("cursor_id", help="the cursor's id (a consumer's name)")
    add_json_arg(parser, "the server's answer")
    add_server_arg(parser)
    parser.set_defaults(run=run)
    return parser


def _where(args: argparse.Namespace) -> str:
    return f"cursor {args.cursor_id} on {args.stream}/{args.partition}"


def _set(args: argparse.Namespace) -> int:
    view = cursors.set_cursor(rest(args), args.cursor_id, args.stream, args.partition, args.offset)
    return print_result(args, view.to_json(), f"{_where(args)}: {view.offset}")


def _get(args: argparse.Namespace) -> int:
    view = cursors.describe_cursor(rest(args), args.cursor_id, args.stream, args.partition)
    if view is None:
        document = {
            "stream": args.stream,
            "partition": args.partition,
            "cursor_id": args.cursor_id,
            "offset": None,
        }
        return print_result(args, document, f"{_where(args)}: not set")
    return print_result(args, view.to_json(), f"{_where(args)}: {view.offset}")


def _delete(args: argparse.Namespace) -> int:
    answer = cursors.delete_cursor(rest(args), args.cursor_id, args.stream, args.partition)
    return print_result(args, answer.to_json(), f"{_where(args)}: deleted")
