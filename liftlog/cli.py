"""The ``liftlog`` command line: run the embedded stack or a node, administer and use streams.

Every command that talks to a running cluster takes ``--server URL`` (comma-separated REST
base URLs; default ``$LIFTLOG_SERVER`` or http://127.0.0.1:9644).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_log.errors import LiftlogError
from spark_log.rest import DEFAULT_SERVER

DEFAULT_DATA_DIR = "./liftlog-data"
# A flush waits for the lake export on every leader (the node's lake.flush_timeout_s, 60 s by
# default, plus the forwarding margin), so the CLI waits longer than for other calls.
FLUSH_REST_TIMEOUT_S = 120.0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except LiftlogError as exc:
        print(f"liftlog: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="liftlog", description="Durable streams for NATS.")
    sub = parser.add_subparsers(title="commands")
    _standalone_parser(sub)
    _node_parser(sub)
    _stream_parser(sub)
    _publish_parser(sub)
    _tail_parser(sub)
    _compact_parser(sub)
    _bench_parser(sub)
    _demo_parser(sub)
    return parser


def _server_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server",
        default=os.environ.get("LIFTLOG_SERVER", DEFAULT_SERVER),
        help="REST base URL(s) of any node, comma-separated",
    )


# --------------------------------------------------------------------- standalone / node


def _standalone_parser(sub: Any) -> None:
    p = sub.add_parser("standalone", help="run NATS, ZooKeeper and N nodes on this machine")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--nats-port", type=int, default=4222)
    p.add_argument("--zk-port", type=int, default=2181)
    p.add_argument("--api-port", type=int, default=9644, help="first node's; others follow")
    p.set_defaults(run=_run_standalone)


def _run_standalone(args: argparse.Namespace) -> int:
    from liftlog.embedded.standalone import Standalone

    stack = Standalone(
        nodes=args.nodes,
        data_dir=Path(args.data_dir),
        nats_port=args.nats_port,
        zk_port=args.zk_port,
        api_port=args.api_port,
    )
    print(
        f"starting Liftlog standalone ({args.nodes} node(s), data in {args.data_dir}) ...",
        flush=True,
    )
    stack.start()
    for name, url in stack.endpoints():
        print(f"{name:<14} {url}", flush=True)
    print("ready; Ctrl-C stops everything", flush=True)
    stack.run_forever()
    return 0


def _node_parser(sub: Any) -> None:
    p = sub.add_parser("node", help="run one ingest node against existing NATS and ZooKeeper")
    p.add_argument("--config", required=True, help="node config file (TOML)")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(run=_run_node)


def _run_node(args: argparse.Namespace) -> int:
    from ingest.__main__ import main as ingest_main

    return int(ingest_main(["--config", args.config, "--log-level", args.log_level]))


# --------------------------------------------------------------------- streams


def _stream_parser(sub: Any) -> None:
    p = sub.add_parser("stream", help="create, list, describe, delete, pause, resume, flush")
    ssub = p.add_subparsers(title="stream commands")
    create = ssub.add_parser("create", help="create a stream on a NATS subject")
    create.add_argument("name")
    create.add_argument("--subject", required=True)
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replication-factor", type=int, default=1)
    create.add_argument("--min-isr", type=int)
    create.add_argument("--ack-policy", choices=["none", "leader", "all"])
    create.add_argument("--retention-ms", type=int)
    create.add_argument("--retention-bytes", type=int)
    create.add_argument("--retention-messages", type=int)
    create.add_argument("--max-record-bytes", type=int)
    create.add_argument(
        "--load-balance",
        action="store_true",
        help="all partitions share the subject through a queue group",
    )
    create.add_argument(
        "--compaction", action="store_true", help="keep the latest record per key in the lake"
    )
    create.add_argument(
        "--compaction-interval-s", type=float, help="how often `liftlog compact --watch` runs"
    )
    create.add_argument(
        "--delete-retention-ms", type=int, help="how long tombstones survive compaction"
    )
    _server_arg(create)
    create.set_defaults(run=_stream_create)
    unclean = ssub.add_parser(
        "elect-unclean",
        help="elect a replica outside the ISR (shows the offsets that may be lost first)",
    )
    unclean.add_argument("name")
    unclean.add_argument("--partition", type=int, required=True)
    unclean.add_argument("--broker", type=int, help="default: the live replica with most data")
    unclean.add_argument("--confirm", action="store_true", help="really elect (default: dry run)")
    _server_arg(unclean)
    unclean.set_defaults(run=_stream_elect_unclean)
    for name, helptext in (("list", "list streams"),):
        sp = ssub.add_parser(name, help=helptext)
        _server_arg(sp)
        sp.add_argument("--json", action="store_true")
        sp.set_defaults(run=_stream_list)
    for name, fn, helptext in (
        ("describe", _stream_describe, "partitions, leaders, ISR, offsets"),
        ("delete", _stream_delete, "delete a stream and its data"),
        ("pause", _stream_action("pause"), "stop recording (records stay readable)"),
        ("resume", _stream_action("resume"), "start recording again"),
        ("flush", _stream_flush, "seal, fsync and export to the lake now; prints lake offsets"),
    ):
        sp = ssub.add_parser(name, help=helptext)
        sp.add_argument("name")
        sp.add_argument("--json", action="store_true")
        _server_arg(sp)
        sp.set_defaults(run=fn)


def _rest(args: argparse.Namespace) -> Any:
    from spark_log.rest import RestClient

    return RestClient(args.server)


def _stream_create(args: argparse.Namespace) -> int:
    body = {
        "name": args.name,
        "subject": args.subject,
        "partitions": args.partitions,
        "replication_factor": args.replication_factor,
    }
    for key in (
        "min_isr",
        "ack_policy",
        "retention_ms",
        "retention_bytes",
        "retention_messages",
        "max_record_bytes",
        "compaction_interval_s",
        "delete_retention_ms",
    ):
        if getattr(args, key) is not None:
            body[key] = getattr(args, key)
    if args.load_balance:
        body["load_balance"] = True
    if args.compaction:
        body["compaction"] = True
    resp = _rest(args).request("POST", "/v1/streams", json_body=body)
    verb = "created" if resp.status == 201 else "already exists (identical spec)"
    print(f"stream {args.name} {verb}")
    _print_describe(resp.json())
    return 0


def _stream_elect_unclean(args: argparse.Namespace) -> int:
    params = {"broker_id": args.broker, "confirm": "true" if args.confirm else "false"}
    body = (
        _rest(args)
        .request(
            "POST",
            f"/v1/streams/{args.name}/partitions/{args.partition}/unclean-election",
            params=params,
        )
        .json()
    )
    print(
        f"candidate broker {body['candidate']}: log end offset "
        f"{body['candidate_log_end_offset']}, highest known HW "
        f"{body['highest_known_high_watermark']}"
    )
    print(f"offsets known to be lost: {body['offsets_known_lost']} ({body['warning']})")
    if body["elected"]:
        print(f"elected broker {body['leader']} at leader epoch {body['leader_epoch']}")
    else:
        print("dry run: nothing changed; add --confirm to elect")
    return 0


def _stream_list(args: argparse.Namespace) -> int:
    streams = _rest(args).get_json("/v1/streams")["streams"]
    if args.json:
        print(json.dumps(streams, indent=2))
        return 0
    rows = [
        [
            s["name"],
            s["subject"],
            s["partitions"],
            s["replication_factor"],
            "paused" if s["paused"] else "active",
        ]
        for s in streams
    ]
    _print_table(["NAME", "SUBJECT", "PARTITIONS", "RF", "STATE"], rows)
    return 0


def _stream_describe(args: argparse.Namespace) -> int:
    body = _rest(args).get_json(f"/v1/streams/{args.name}")
    if args.json:
        print(json.dumps(body, indent=2))
    else:
        _print_describe(body)
    return 0


def _stream_delete(args: argparse.Namespace) -> int:
    _rest(args).request("DELETE", f"/v1/streams/{args.name}")
    print(f"stream {args.name} deleted")
    return 0


def _stream_action(action: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        body = _rest(args).request("POST", f"/v1/streams/{args.name}/{action}").json()
        if args.json:
            print(json.dumps(body, indent=2))
        else:
            print(f"stream {args.name}: {action} done")
        return 0

    return run


def _stream_flush(args: argparse.Namespace) -> int:
    from spark_log.rest import RestClient

    client = RestClient(args.server, FLUSH_REST_TIMEOUT_S)
    body = client.request("POST", f"/v1/streams/{args.name}/flush").json()
    if args.json:
        print(json.dumps(body, indent=2))
        return 0
    lake = body.get("lake")
    print(f"stream {args.name}: sealed and flushed; lake {lake['uri'] if lake else 'disabled'}")
    rows = [
        [p["partition"], _num(p["high_watermark"]), _num(p.get("lake_offset"))]
        for p in body.get("partitions", [])
    ]
    _print_table(["PARTITION", "HW", "LAKE"], rows)
    return 0


def _print_describe(body: dict[str, Any]) -> None:
    state = "paused" if body.get("paused") else "active"
    print(
        f"{body['name']}  subject={body['subject']}  partitions={len(body['partitions'])}  "
        f"rf={body['replication_factor']}  ack_policy={body['ack_policy']}  {state}"
    )
    lake = body.get("lake")
    print(f"lake: {lake['uri'] if lake else 'disabled'}")
    print(_compaction_line(body))
    rows = [
        [
            p["partition"],
            _leader(p["leader"]),
            p["leader_epoch"],
            _ids(p["replicas"]),
            _ids(p["isr"]),
            _num(p["high_watermark"]),
            _num(p["log_end_offset"]),
            _leos(p.get("replica_log_end_offsets") or {}),
            _num(p.get("lake_offset")),
            "OFFLINE" if p["offline"] else "",
        ]
        for p in body.get("partitions", [])
    ]
    headers = ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "HW", "LEO", "REPLICA LEOS"]
    _print_table([*headers, "LAKE", ""], rows)


def _compaction_line(body: dict[str, Any]) -> str:
    if not body.get("compaction"):
        return "compaction: off"
    interval = body.get("compaction_interval_s")
    every = f"every {interval:g}s" if interval else "on demand"
    return f"compaction: on ({every}), delete retention {body.get('delete_retention_ms')} ms"


def _leader(leader: int) -> str:
    return "none" if leader < 0 else str(leader)


def _leos(leos: dict[str, int]) -> str:
    return ",".join(f"{b}:{o}" for b, o in sorted(leos.items(), key=lambda kv: int(kv[0])))


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def _num(value: Any) -> str:
    return "-" if value is None else str(value)


def _print_table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [headers, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# --------------------------------------------------------------------- publish / tail


def _publish_parser(sub: Any) -> None:
    p = sub.add_parser("publish", help="publish records to a stream (values as arguments or stdin)")
    p.add_argument("stream")
    p.add_argument("values", nargs="*", help="record values; read lines from stdin when none")
    p.add_argument("--key")
    p.add_argument("--header", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--partition", type=int)
    p.add_argument("--ack-policy", choices=["none", "leader", "all"])
    p.add_argument("--msg-id", help="Nats-Msg-Id for deduplication")
    p.add_argument("--batch", action="store_true", help="send all values as one producer batch")
    p.add_argument("--nats-url", help="default: learned from the cluster")
    _server_arg(p)
    p.set_defaults(run=_publish)


def _publish(args: argparse.Namespace) -> int:
    values = args.values or [line.rstrip("\n") for line in sys.stdin]
    headers = dict(_split_header(h) for h in args.header)
    return asyncio.run(_publish_async(args, values, headers))


def _split_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"liftlog: --header wants NAME=VALUE, got {text!r}")
    return name, value


async def _publish_async(
    args: argparse.Namespace, values: list[str], headers: dict[str, str]
) -> int:
    from spark_log.client import Client

    async with Client(args.server, nats_url=args.nats_url) as client:
        if args.batch:
            ack = await client.publish_batch(
                args.stream,
                values,
                keys=[args.key] * len(values) if args.key else None,
                headers=[headers] * len(values) if headers else None,
                partition=args.partition,
                ack_policy=args.ack_policy,
                msg_id=args.msg_id,
            )
            print(_ack_line(ack))
            return 0
        for i, value in enumerate(values):
            ack = await client.publish(
                args.stream,
                value,
                key=args.key,
                headers=headers,
                partition=args.partition,
                ack_policy=args.ack_policy,
                msg_id=f"{args.msg_id}-{i}" if args.msg_id and len(values) > 1 else args.msg_id,
            )
            print(_ack_line(ack))
    return 0


def _ack_line(ack: Any) -> str:
    if ack is None:
        return "published (no ack requested)"
    extra = f" count={ack.count}" if ack.count != 1 else ""
    return f"{ack.stream}/{ack.partition} offset={ack.offset}{extra}"


def _tail_parser(sub: Any) -> None:
    p = sub.add_parser("tail", help="print a partition's committed records")
    p.add_argument("stream")
    p.add_argument("--partition", type=int, default=0)
    p.add_argument(
        "--from",
        dest="start",
        default="earliest",
        help="earliest | latest | OFFSET | ISO-8601 time",
    )
    p.add_argument("-f", "--follow", action="store_true", help="keep waiting for new records")
    p.add_argument("-n", "--max", type=int, help="stop after this many records")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    _server_arg(p)
    p.set_defaults(run=_tail)


def _tail(args: argparse.Namespace) -> int:
    return asyncio.run(_tail_async(args))


def _parse_start(text: str) -> str | int | dt.datetime:
    if text in ("earliest", "latest"):
        return text
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise SystemExit(
            f"liftlog: --from wants earliest, latest, an offset or a time: {text!r}"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


async def _tail_async(args: argparse.Namespace) -> int:
    from spark_log.client import Client

    start = _parse_start(args.start)
    printed = 0
    async with Client(args.server) as client:
        if args.follow:
            async for record in client.subscribe(args.stream, args.partition, start):
                _print_record(record, args.json)
                printed += 1
                if args.max is not None and printed >= args.max:
                    break
            return 0
        offset = await client.start_offset(args.stream, args.partition, start)
        while args.max is None or printed < args.max:
            fetched = await client.fetch(args.stream, args.partition, offset)
            if not fetched.records:
                break
            for record in fetched.records[: None if args.max is None else args.max - printed]:
                _print_record(record, args.json)
                printed += 1
            offset = fetched.next_offset
    return 0


def _print_record(record: Any, as_json: bool) -> None:
    value = record.value.decode("utf-8", "replace")
    key = record.key.decode("utf-8", "replace") if record.key is not None else None
    if as_json:
        print(
            json.dumps(
                {
                    "offset": record.offset,
                    "timestamp": record.timestamp,
                    "key": key,
                    "value": value,
                    "subject": record.subject,
                    "headers": {k: v.decode("utf-8", "replace") for k, v in record.headers},
                }
            ),
            flush=True,
        )
        return
    when = dt.datetime.fromtimestamp(record.timestamp / 1000, dt.UTC).isoformat(
        timespec="milliseconds"
    )
    key_part = f" key={key}" if key is not None else ""
    print(f"{record.offset}\t{when}{key_part}\t{value}", flush=True)


# --------------------------------------------------------------------- compact


def _compact_parser(sub: Any) -> None:
    """The options live here (so ``--help`` needs no Spark); the job is in
    ``datasource.compaction``, imported only when the command runs."""
    p = sub.add_parser(
        "compact",
        help="key compaction of a stream's lake table as a Spark job (latest record per key)",
    )
    p.add_argument("stream", nargs="?", help="the stream (with --watch: default every stream)")
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    p.add_argument(
        "--boundary-offset",
        type=int,
        help="compact only offsets below this (default: each partition's lake offset)",
    )
    p.add_argument(
        "--partition", type=int, action="append", help="only this partition (repeatable)"
    )
    p.add_argument("--full", action="store_true", help="recompute partitions already compacted")
    p.add_argument("--force", action="store_true", help="compact a stream without compaction=true")
    p.add_argument("--max-records-per-file", type=int, help="split compacted files (default 1M)")
    p.add_argument("--retries", type=int, help="retries after losing a commit race (default 2)")
    p.add_argument("--no-optimize", action="store_true", help="skip packing small files")
    p.add_argument(
        "--optimize-target-mb", type=int, help="pack files smaller than this (default 128)"
    )
    p.add_argument("--no-vacuum", action="store_true", help="skip deleting unreferenced files")
    p.add_argument(
        "--vacuum-retention-hours",
        type=float,
        help="delete removed files only after this long (default 168, Delta's default)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep running: compact each stream whose compaction_interval_s elapsed",
    )
    p.add_argument("--watch-poll-s", type=float, help="how often --watch looks (default 30)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    _server_arg(p)
    p.set_defaults(run=_compact)


def _compact(args: argparse.Namespace) -> int:
    from datasource.compaction import command

    return int(command.run(args))


# --------------------------------------------------------------------- bench / demo


def _bench_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmark Liftlog beside JetStream on an embedded stack")
    p.add_argument(
        "--records",
        type=int,
        default=None,
        help="records per measurement (default 50,000; 20,000 with --replication 3)",
    )
    p.add_argument("--sizes", default="100,1024", help="record sizes in bytes")
    p.add_argument(
        "--replication",
        type=int,
        choices=(1, 3),
        default=1,
        help="1: one node beside JetStream; 3: Liftlog RF=3 beside JetStream R3",
    )
    p.add_argument("--data-dir", help="default: a temporary directory")
    p.add_argument("--json", help="also write the results to this file")
    p.set_defaults(run=_bench)


def _bench(args: argparse.Namespace) -> int:
    from liftlog.bench.runner import run_bench

    sizes = [int(s) for s in args.sizes.split(",") if s]
    return run_bench(
        records=args.records,
        sizes=sizes,
        data_dir=args.data_dir,
        json_path=args.json,
        replication=args.replication,
    )


def _demo_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="embedded stack, a stream, sample events, read back, stop")
    p.add_argument("--events", type=int, default=5000)
    p.add_argument("--data-dir", help="default: a temporary directory")
    p.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    from liftlog.demo import run_demo

    return run_demo(events=args.events, data_dir=args.data_dir)


if __name__ == "__main__":
    sys.exit(main())
