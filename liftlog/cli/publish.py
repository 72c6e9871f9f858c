"""``liftlog publish``: records to a stream through the Liftlog client, or ``--plain`` as any
NATS client would send them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from liftlog.cli.common import Subcommands, ack_line, add_server_arg, credentials
from liftlog.cli.unstored import warn_if_not_stored
from spark_log.errors import InvalidRequestError
from spark_log.stream_spec import ACK_POLICIES

if TYPE_CHECKING:
    from spark_log.client import Client

# Options that add Liftlog headers or batching, which a plain NATS message does not have.
LIFTLOG_ONLY_OPTIONS = {
    "key": "--key",
    "header": "--header",
    "ack_policy": "--ack-policy",
    "msg_id": "--msg-id",
    "batch": "--batch",
}


def add_publish_parser(sub: Subcommands) -> None:
    p = sub.add_parser(
        "publish",
        help="publish records to a stream (values as arguments or stdin lines)",
        description="Publish records. Options may come before, between or after the values.",
    )
    p.add_argument("stream", help="the stream")
    p.add_argument("values", nargs="*", help="record values (default: lines read from stdin)")
    p.add_argument("--key", help="record key, routes to a partition (default: none)")
    p.add_argument(
        "--header",
        action="append",
        metavar="NAME=VALUE",
        help="a record header (repeatable; default: none)",
    )
    p.add_argument(
        "--partition",
        type=int,
        help="the partition (default: by key, else round robin; partition 0 with --plain)",
    )
    p.add_argument(
        "--ack-policy", choices=ACK_POLICIES, help="none | leader | all (default: the stream's)"
    )
    p.add_argument("--msg-id", help="Nats-Msg-Id for deduplication (default: none)")
    p.add_argument(
        "--batch", action="store_true", help="send all values as one producer batch (default: off)"
    )
    p.add_argument(
        "--raw",
        action="store_true",
        help="send the values as text unchanged even to a typed stream (default: a JSON value "
        "to a stream bound to a schema is serialised with it, Confluent's wire format)",
    )
    p.add_argument(
        "--plain",
        action="store_true",
        help="send plain NATS messages on the stream's subject, no Liftlog headers, as any "
        "NATS client would (a request, so the ack is printed; default: off)",
    )
    p.add_argument(
        "--nats-url",
        help="NATS server URL (default: learned from the cluster); NATS credentials and TLS "
        "come from LIFTLOG_NATS_USER/_PASSWORD, _TOKEN, _NKEY_SEED, _CREDS, _CA_FILE, "
        "_CERT_FILE/_KEY_FILE",
    )
    add_server_arg(p)
    p.set_defaults(run=_publish)


def _publish(args: argparse.Namespace) -> int:
    values = args.values or [line.rstrip("\n") for line in sys.stdin]
    if args.plain:
        from liftlog.cli.plain_publish import publish_plain  # NATS alone, loaded when used

        _refuse_liftlog_options(args)
        return asyncio.run(publish_plain(args, values))
    headers = dict(_split_header(h) for h in args.header or [])
    return asyncio.run(_publish_async(args, values, headers))


def _refuse_liftlog_options(args: argparse.Namespace) -> None:
    given = [flag for dest, flag in LIFTLOG_ONLY_OPTIONS.items() if getattr(args, dest)]
    if given:
        raise InvalidRequestError(
            f"--plain sends bare NATS messages; {', '.join(given)} need Liftlog headers "
            "(drop --plain or those options)"
        )


def _split_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise InvalidRequestError(f"--header wants NAME=VALUE, got {text!r}")
    return name, value


async def _publish_async(
    args: argparse.Namespace, values: list[str], headers: dict[str, str]
) -> int:
    from spark_log.client import Client

    async with Client(args.server, nats_url=args.nats_url, credentials=credentials(args)) as client:
        payloads = await _payloads(client, args, values)
        if args.batch:
            ack = await client.publish_batch(
                args.stream,
                payloads,
                keys=[args.key] * len(values) if args.key else None,
                headers=[headers] * len(values) if headers else None,
                partition=args.partition,
                ack_policy=args.ack_policy,
                msg_id=args.msg_id,
            )
            print(ack_line(ack))
            await warn_if_not_stored(client, args.stream, len(values) if ack is None else 0)
            return 0
        unacked = 0
        for i, value in enumerate(payloads):
            ack = await client.publish(
                args.stream,
                value,
                key=args.key,
                headers=headers,
                partition=args.partition,
                ack_policy=args.ack_policy,
                msg_id=f"{args.msg_id}-{i}" if args.msg_id and len(values) > 1 else args.msg_id,
            )
            print(ack_line(ack), flush=True)
            if ack is None:
                unacked += 1
        await warn_if_not_stored(client, args.stream, unacked)
    return 0


async def _payloads(
    client: Client, args: argparse.Namespace, values: list[str]
) -> list[bytes | str]:
    """The values as sent: on a stream bound to a schema (unless ``--raw``) each one that is
    JSON serialised with the subject's latest schema and framed with its id, as the client's
    typed publish does; text that is not JSON is sent as it is (the leader checks it)."""
    if args.raw or (await client.stream_spec(args.stream)).value_schema is None:
        return list(values)
    payloads: list[bytes | str] = []
    for value in values:
        try:
            datum = json.loads(value)
        except ValueError:
            payloads.append(value)
            continue
        payloads.append(await client.serialize_value(args.stream, datum))
    return payloads
