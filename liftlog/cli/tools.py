"""``liftlog bench`` and ``liftlog demo``: the embedded stack put to work."""

from __future__ import annotations

import argparse

from liftlog.cli.common import Subcommands

DEFAULT_BENCH_SIZES = "100,1024"
DEFAULT_BENCH_REPLICATION = 1
DEFAULT_BENCH_FANOUT = 1000
DEFAULT_DEMO_EVENTS = 5000


def add_bench_parser(sub: Subcommands) -> None:
    p = sub.add_parser("bench", help="benchmark Liftlog beside JetStream on an embedded stack")
    p.add_argument(
        "--records",
        type=int,
        help="records per measurement (default: 50,000; 20,000 with --replication 3)",
    )
    p.add_argument(
        "--sizes",
        default=DEFAULT_BENCH_SIZES,
        help=f"record sizes in bytes, comma-separated (default: {DEFAULT_BENCH_SIZES})",
    )
    p.add_argument(
        "--replication",
        type=int,
        choices=(1, 3),
        default=DEFAULT_BENCH_REPLICATION,
        help="1: one node beside JetStream; 3: Liftlog RF=3 beside JetStream R3 "
        f"(default: {DEFAULT_BENCH_REPLICATION})",
    )
    p.add_argument(
        "--fanout",
        type=int,
        default=DEFAULT_BENCH_FANOUT,
        help="REST long polls on one partition woken by one publish, measured last "
        f"(default: {DEFAULT_BENCH_FANOUT}; 0: not measured)",
    )
    p.add_argument("--data-dir", help="where the stacks keep data (default: a temporary directory)")
    p.add_argument("--json", help="also write the results to this file (default: none)")
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
        fanout=args.fanout,
    )


def add_demo_parser(sub: Subcommands) -> None:
    p = sub.add_parser("demo", help="embedded stack, a stream, sample events, read back, stop")
    p.add_argument(
        "--events",
        type=int,
        default=DEFAULT_DEMO_EVENTS,
        help=f"sample events to publish (default: {DEFAULT_DEMO_EVENTS})",
    )
    p.add_argument("--data-dir", help="where the stack keeps data (default: a temporary directory)")
    p.set_defaults(run=_demo)


def _demo(args: argparse.Namespace) -> int:
    from liftlog.demo import run_demo

    return run_demo(events=args.events, data_dir=args.data_dir)
