"""``liftlog stream ...``: create, list, describe, alter and the other admin actions over REST."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from collections.abc import Callable

from liftlog.cli.common import Subcommands, add_json_arg, add_server_arg, rest
from liftlog.cli.describe import print_describe, print_flush, print_stream_list
from liftlog.cli.value_schema_flags import FIELD, add_value_schema_flags, merged_binding
from spark_log.api_models import (
    ClusterInfo,
    FlushResult,
    PreferredElection,
    ReassignmentStatus,
    StreamDescription,
    StreamList,
    UncleanElection,
)
from spark_log.json_types import JsonObject
from spark_log.spec_field import declared_fields
from spark_log.stream_spec import (
    ACK_POLICIES,
    ALTERABLE_FIELDS,
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_PARTITIONS,
    DEFAULT_REPLICATION_FACTOR,
    TIMESTAMP_TYPES,
    StreamSpec,
)

# A flush waits for the lake export on every leader (the node's lake.flush_timeout_s, 60 s by
# default, plus the forwarding margin), so the CLI waits longer than for other calls.
FLUSH_REST_TIMEOUT_S = 120.0


def add_stream_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Returns the ``stream create`` parser: its flags name the stream spec's fields."""
    p = sub.add_parser(
        "stream",
        help="create, list, describe, alter, delete, pause, resume, readonly, readwrite, flush",
    )
    ssub = p.add_subparsers(title="stream commands", metavar="COMMAND")
    create = _create_parser(ssub)
    _alter_parser(ssub)
    _unclean_parser(ssub)
    _preferred_parser(ssub)
    _reassign_parser(ssub)
    listing = ssub.add_parser("list", help="list streams")
    add_json_arg(listing, "the streams")
    add_server_arg(listing)
    listing.set_defaults(run=_stream_list)
    for name, fn, helptext in (
        ("describe", _stream_describe, "partitions, leaders, ISR, offsets, lake table"),
        ("delete", _stream_delete, "delete a stream and its data"),
        ("pause", _stream_action("pause"), "stop recording (records stay readable)"),
        ("resume", _stream_action("resume"), "start recording again"),
        (
            "readonly",
            _stream_action("readonly"),
            "refuse every publish with stream_readonly (reads go on)",
        ),
        ("readwrite", _stream_action("readwrite"), "accept publishes again after readonly"),
        ("flush", _stream_flush, "seal, fsync and export to the lake now; prints lake offsets"),
    ):
        sp = ssub.add_parser(name, help=helptext)
        sp.add_argument("name", help="the stream")
        add_json_arg(sp, "the server's answer")
        add_server_arg(sp)
        sp.set_defaults(run=fn)
    return create


def _create_parser(ssub: Subcommands) -> argparse.ArgumentParser:
    create: argparse.ArgumentParser = ssub.add_parser(
        "create", help="create a stream on a NATS subject"
    )
    create.add_argument("name", help="the stream's name")
    create.add_argument("--subject", required=True, help="the NATS subject to record (required)")
    create.add_argument(
        "--partitions",
        type=int,
        default=DEFAULT_PARTITIONS,
        help=f"number of partitions (default: {DEFAULT_PARTITIONS})",
    )
    create.add_argument(
        "--replication-factor",
        type=int,
        default=DEFAULT_REPLICATION_FACTOR,
        help=f"replicas per partition (default: {DEFAULT_REPLICATION_FACTOR})",
    )
    create.add_argument(
        "--min-isr", type=int, help="acks=all needs this many in-sync replicas (default: majority)"
    )
    create.add_argument(
        "--ack-policy", choices=ACK_POLICIES, help="default ack policy (default: all)"
    )
    create.add_argument(
        "--retention-ms", type=int, help="keep records this long (default: forever)"
    )
    create.add_argument(
        "--retention-bytes", type=int, help="keep at most this many bytes (default: no limit)"
    )
    create.add_argument(
        "--retention-messages", type=int, help="keep at most this many records (default: no limit)"
    )
    create.add_argument(
        "--max-record-bytes",
        type=int,
        help=f"largest record accepted (default: {DEFAULT_MAX_RECORD_BYTES})",
    )
    create.add_argument(
        "--load-balance",
        action="store_true",
        help="all partitions share the subject through a queue group (default: off)",
    )
    create.add_argument(
        "--compaction",
        action="store_true",
        help="keep the latest record per key in the lake (default: off)",
    )
    create.add_argument(
        "--compaction-interval-s",
        type=float,
        help="how often `liftlog compact --watch` compacts (default: on demand only)",
    )
    create.add_argument(
        "--delete-retention-ms",
        type=int,
        help=f"how long tombstones survive compaction (default: {DEFAULT_DELETE_RETENTION_MS})",
    )
    create.add_argument(
        "--timestamp-type",
        choices=TIMESTAMP_TYPES,
        help="record timestamps: the leader's append time, or the producer's "
        "Liftlog-Timestamp header (default: log_append)",
    )
    create.add_argument(
        "--auto-pause-ms",
        type=int,
        help="pause a partition after this long without appends; the next publish or "
        "consumer fetch resumes it (default: never)",
    )
    create.add_argument(
        "--auto-pause-disable-if-subscribers",
        action="store_true",
        help="a waiting or recent consumer fetch keeps a partition from pausing (default: off)",
    )
    create.add_argument(
        "--optimistic-concurrency-control",
        action="store_true",
        help="a Liftbridge publish's expectedOffset (not -1) must be the offset the record "
        "gets (default: off)",
    )
    create.add_argument(
        "--encryption",
        action="store_true",
        help="encrypt values at rest (needs a master key on every node; default: off)",
    )
    add_value_schema_flags(create)
    add_server_arg(create)
    create.set_defaults(run=_stream_create)
    return create


def _alter_parser(ssub: Subcommands) -> None:
    """Only the flags given are sent (default of each: unchanged); ``none`` clears a limit
    (or restores the default)."""
    alter = ssub.add_parser(
        "alter",
        help="grow partitions, change retention, ack policy, min ISR, max record size, "
        "compaction, timestamp type or auto-pause, live; "
        "every flag defaults to unchanged",
    )
    alter.add_argument("name", help="the stream")
    option = functools.partial(alter.add_argument, default=argparse.SUPPRESS)  # absent: unsent
    option(
        "--partitions",
        type=int,
        help="grow to this many partitions (never fewer; default: unchanged)",
    )
    option(
        "--min-isr",
        type=_int_or_none,
        help="in-sync replicas acks=all needs (none: majority; default: unchanged)",
    )
    option("--ack-policy", choices=ACK_POLICIES, help="default ack policy (default: unchanged)")
    for field, what in (
        ("retention-ms", "keep records this long"),
        ("retention-bytes", "keep at most this many bytes"),
        ("retention-messages", "keep at most this many records"),
    ):
        option(f"--{field}", type=_int_or_none, help=f"{what} (none: no limit; default: unchanged)")
    option("--max-record-bytes", type=int, help="largest record accepted (default: unchanged)")
    option(
        "--compaction",
        action=argparse.BooleanOptionalAction,
        help="keep the latest record per key in the lake (--no-compaction: off; "
        "default: unchanged)",
    )
    option(
        "--compaction-interval-s",
        type=_float_or_none,
        help="how often `liftlog compact --watch` compacts (none: on demand only; "
        "default: unchanged)",
    )
    option(
        "--delete-retention-ms",
        type=int,
        help="how long tombstones survive compaction (default: unchanged)",
    )
    option(
        "--timestamp-type",
        choices=TIMESTAMP_TYPES,
        help="log_append or create (the Liftlog-Timestamp header; default: unchanged)",
    )
    option(
        "--auto-pause-ms",
        type=_int_or_none,
        help="pause a partition after this long without appends (none: never; default: unchanged)",
    )
    option(
        "--auto-pause-disable-if-subscribers",
        action=argparse.BooleanOptionalAction,
        help="a waiting or recent consumer fetch keeps a partition from pausing "
        "(default: unchanged)",
    )
    add_value_schema_flags(alter, argparse.SUPPRESS)
    alter.add_argument(
        "--no-value-schema",
        action="store_true",
        help="unbind the values from their schema: any bytes are accepted again "
        "(default: unchanged)",
    )
    add_json_arg(alter, "the server's answer")
    add_server_arg(alter)
    alter.set_defaults(run=_stream_alter)


def _int_or_none(text: str) -> int | None:
    return None if text.lower() == "none" else int(text)


def _float_or_none(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def _stream_alter(args: argparse.Namespace) -> int:
    changes = {k: v for k, v in vars(args).items() if k in ALTERABLE_FIELDS}
    client = rest(args)
    if args.no_value_schema:
        if FIELD in changes:
            raise SystemExit("alter: --no-value-schema takes no other value schema flag")
        changes[FIELD] = None
    elif FIELD in changes:
        current = StreamDescription.from_json(client.get_json(f"/v1/streams/{args.name}"))
        binding = current.spec.value_schema
        changes[FIELD] = merged_binding(
            None if binding is None else dataclasses.asdict(binding), changes[FIELD]
        )
    if not changes:
        raise SystemExit("alter: give at least one setting to change (see --help)")
    response = client.request("PATCH", f"/v1/streams/{args.name}", json_body=changes)
    body = StreamDescription.from_json(response.json())
    if args.json:
        print(json.dumps(body.to_json(), indent=2))
    else:
        settings = ", ".join(f"{k}={getattr(body, k)!r}" for k in sorted(changes))
        print(f"stream {args.name} altered: {settings}")
    return 0


def _unclean_parser(ssub: Subcommands) -> None:
    unclean = ssub.add_parser(
        "elect-unclean",
        help="elect a replica outside the ISR (shows the offsets that may be lost first)",
    )
    unclean.add_argument("name", help="the stream")
    unclean.add_argument("--partition", type=int, required=True, help="the partition (required)")
    unclean.add_argument(
        "--broker", type=int, help="the replica to elect (default: the live one with most data)"
    )
    unclean.add_argument("--confirm", action="store_true", help="really elect (default: dry run)")
    add_server_arg(unclean)
    unclean.set_defaults(run=_stream_elect_unclean)


def _preferred_parser(ssub: Subcommands) -> None:
    preferred = ssub.add_parser(
        "elect-preferred",
        help="move leadership back to the preferred replica (where it is live and in sync)",
    )
    preferred.add_argument("name", help="the stream")
    preferred.add_argument("--partition", type=int, help="one partition (default: all)")
    add_json_arg(preferred, "the controller's answer")
    add_server_arg(preferred)
    preferred.set_defaults(run=_stream_elect_preferred)


def _reassign_parser(ssub: Subcommands) -> None:
    reassign = ssub.add_parser(
        "reassign",
        help="move partitions' replicas to other brokers (or show or cancel the moves in progress)",
    )
    reassign.add_argument("name", help="the stream")
    reassign.add_argument(
        "--partition",
        type=int,
        help="the partition to move or cancel (default: none, use --plan; --cancel: all)",
    )
    reassign.add_argument(
        "--replicas", help="its new replicas, comma-separated, leader first (2,3; no default)"
    )
    reassign.add_argument(
        "--plan",
        help='a JSON plan file (default: none): {"partitions": [{"partition": 0, '
        '"replicas": [2, 3]}]}',
    )
    action = reassign.add_mutually_exclusive_group()
    action.add_argument(
        "--status",
        action="store_true",
        help="only show the reassignments in progress (default: submit)",
    )
    action.add_argument(
        "--cancel",
        action="store_true",
        help="cancel the pending reassignment of --partition (without it: every pending one "
        "of the stream); the partitions go back to their original replicas (default: submit)",
    )
    add_json_arg(reassign, "the progress")
    add_server_arg(reassign)
    reassign.set_defaults(run=_stream_reassign)


def create_body(args: argparse.Namespace) -> JsonObject:
    """The create request: every spec field a flag of ``stream create`` set. The flags are
    named after the spec's declared fields; an optional one left unset (None, or a switch
    not given) is left to the server's default."""
    body: JsonObject = {"name": args.name, "subject": args.subject}
    for field, declared in declared_fields(StreamSpec):
        value = getattr(args, field.name, None)
        if declared.requested and field.name not in body and value not in (None, False):
            body[field.name] = value
    return body


def _stream_create(args: argparse.Namespace) -> int:
    body = create_body(args)
    resp = rest(args).request("POST", "/v1/streams", json_body=body)
    verb = "created" if resp.status == 201 else "already exists (identical spec)"
    print(f"stream {args.name} {verb}")
    print_describe(StreamDescription.from_json(resp.json()))
    return 0


def _stream_elect_unclean(args: argparse.Namespace) -> int:
    params = {"broker_id": args.broker, "confirm": "true" if args.confirm else "false"}
    path = f"/v1/streams/{args.name}/partitions/{args.partition}/unclean-election"
    body = UncleanElection.from_json(rest(args).request("POST", path, params=params).json())
    print(
        f"candidate broker {body.candidate}: log end offset "
        f"{body.candidate_log_end_offset}, highest known HW "
        f"{body.highest_known_high_watermark}"
    )
    qualifier = "exactly" if body.loss_known else "at least (the total cannot be known)"
    print(f"offsets known to be lost: {qualifier} {body.offsets_known_lost}")
    print(body.loss_explanation)
    print(f"warning: {body.warning}")
    if body.elected:
        print(f"elected broker {body.leader} at leader epoch {body.leader_epoch}")
    else:
        print("dry run: nothing changed; add --confirm to elect")
    return 0


def _stream_elect_preferred(args: argparse.Namespace) -> int:
    params = {} if args.partition is None else {"partition": args.partition}
    path = f"/v1/streams/{args.name}/elect-preferred"
    body = PreferredElection.from_json(rest(args).request("POST", path, params=params).json())
    if args.json:
        print(json.dumps(body.to_json(), indent=2))
        return 0
    for p in body.partitions:
        if p.elected:
            outcome = f"elected preferred broker {p.preferred} at leader epoch {p.leader_epoch}"
        elif p.reason is None:
            outcome = f"preferred broker {p.preferred} already leads"
        else:
            outcome = f"leader stays {p.leader}: {p.reason}"
        print(f"{args.name}/{p.partition}: {outcome}")
    return 0


def _reassign_plan(args: argparse.Namespace) -> JsonObject:
    """The REST body from ``--plan FILE`` or ``--partition P --replicas A,B``."""
    if args.plan is not None:
        with open(args.plan) as plan:
            body: JsonObject = json.load(plan)
        return body
    if args.partition is None or args.replicas is None:
        raise SystemExit("reassign: give --partition P --replicas A,B[,...], or --plan FILE")
    replicas = [int(b) for b in args.replicas.split(",") if b.strip()]
    return {"partitions": [{"partition": args.partition, "replicas": replicas}]}


def _reassign_request(args: argparse.Namespace) -> ReassignmentStatus:
    """Submit (``POST``), show (``GET``) or cancel (``DELETE``) and return the progress."""
    path = f"/v1/streams/{args.name}/reassign"
    if args.status:
        return ReassignmentStatus.from_json(rest(args).get_json(path))
    if args.cancel:
        if args.replicas is not None or args.plan is not None:
            raise SystemExit("reassign: --cancel takes no --replicas or --plan")
        params = {} if args.partition is None else {"partition": args.partition}
        response = rest(args).request("DELETE", path, params=params)
    else:
        response = rest(args).request("POST", path, json_body=_reassign_plan(args))
    return ReassignmentStatus.from_json(response.json())


def _stream_reassign(args: argparse.Namespace) -> int:
    body = _reassign_request(args)
    if args.json:
        print(json.dumps(body.to_json(), indent=2))
        return 0
    if args.cancel:
        print(f"{args.name}: cancel recorded; the controller reverts each partition below")
    if not body.partitions:
        print(f"{args.name}: no reassignment in progress")
    for p in body.partitions:
        print(
            f"{args.name}/{p.partition}: {list(p.original_replicas)} -> {list(p.target_replicas)}"
            f" ({p.phase}; replicas {list(p.replicas)}, isr {list(p.isr)}, leader {p.leader})"
        )
    return 0


def _stream_list(args: argparse.Namespace) -> int:
    listed = StreamList.from_json(rest(args).get_json("/v1/streams"))
    if args.json:
        print(json.dumps([s.to_json() for s in listed.streams], indent=2))
    else:
        print_stream_list(listed.streams)
    return 0


def _stream_describe(args: argparse.Namespace) -> int:
    client = rest(args)
    body = StreamDescription.from_json(client.get_json(f"/v1/streams/{args.name}"))
    if args.json:
        print(json.dumps(body.to_json(), indent=2))
    else:
        print_describe(body, ClusterInfo.from_json(client.get_json("/v1/cluster")).brokers)
    return 0


def _stream_delete(args: argparse.Namespace) -> int:
    rest(args).request("DELETE", f"/v1/streams/{args.name}")
    print(f"stream {args.name} deleted")
    return 0


def _stream_action(action: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        response = rest(args).request("POST", f"/v1/streams/{args.name}/{action}")
        body = StreamDescription.from_json(response.json())
        if args.json:
            print(json.dumps(body.to_json(), indent=2))
        else:
            print(f"stream {args.name}: {action} done")
        return 0

    return run


def _stream_flush(args: argparse.Namespace) -> int:
    response = rest(args, FLUSH_REST_TIMEOUT_S).request("POST", f"/v1/streams/{args.name}/flush")
    body = FlushResult.from_json(response.json())
    if args.json:
        print(json.dumps(body.to_json(), indent=2))
    else:
        print_flush(args.name, body)
    return 0
