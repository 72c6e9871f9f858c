"""``liftlog compact``: the options live here (so ``--help`` needs no Spark); the job is in
``datasource.compaction``, imported only when the command runs, and only after the stream's
spec says it may be compacted: refusing must not cost a Spark start-up."""

from __future__ import annotations

import argparse

from liftlog.cli.common import Subcommands, add_server_arg, rest
from spark_log.api_models import StreamDescription
from spark_log.errors import InvalidRequestError

DEFAULT_SPARK_MASTER = "local[*]"


class CompactionNotEnabledError(InvalidRequestError):
    """The stream was created without compaction and ``--force`` was not given: the job's own
    refusal (same code), made before Spark starts (its errors module imports pyspark)."""

    code = "compaction_disabled"


def add_compact_parser(sub: Subcommands) -> None:
    p = sub.add_parser(
        "compact",
        help="key compaction of a stream's lake table as a Spark job (latest record per key)",
    )
    p.add_argument("stream", nargs="?", help="the stream (with --watch: default every stream)")
    p.add_argument(
        "--master",
        default=DEFAULT_SPARK_MASTER,
        help=f"Spark master (default: {DEFAULT_SPARK_MASTER})",
    )
    p.add_argument(
        "--boundary-offset",
        type=int,
        help="compact only offsets below this (default: each partition's lake offset)",
    )
    p.add_argument(
        "--partition",
        type=int,
        action="append",
        help="only this partition (repeatable; default: every partition)",
    )
    p.add_argument(
        "--full", action="store_true", help="recompute partitions already compacted (default: off)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="compact a stream created without --compaction (default: off)",
    )
    p.add_argument(
        "--max-records-per-file", type=int, help="split compacted files (default: 1000000)"
    )
    p.add_argument("--retries", type=int, help="retries after losing a commit race (default: 2)")
    p.add_argument(
        "--no-optimize", action="store_true", help="skip packing small files (default: pack)"
    )
    p.add_argument(
        "--optimize-target-mb", type=int, help="pack files smaller than this (default: 128)"
    )
    p.add_argument(
        "--no-vacuum",
        action="store_true",
        help="skip deleting unreferenced files (default: vacuum)",
    )
    p.add_argument(
        "--vacuum-retention-hours",
        type=float,
        help="delete removed files only after this long (default: 168, Delta's default)",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="keep running: compact each stream whose compaction_interval_s elapsed "
        "(default: once)",
    )
    p.add_argument(
        "--lake-option",
        action="append",
        metavar="KEY=VALUE",
        help="an object-store option of the lake, delta-rs names (e.g. AWS_ENDPOINT_URL=...; "
        "repeatable; default: spark.liftlog.lake.<KEY> of the Spark session, then the "
        "AWS_* environment, then [lake] of the credentials file, for s3:// lakes)",
    )
    p.add_argument("--watch-poll-s", type=float, help="how often --watch looks (default: 30)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (default: text)")
    add_server_arg(p)
    p.set_defaults(run=_compact)


def _compact(args: argparse.Namespace) -> int:
    if args.stream and not args.watch and not args.force:
        refuse_without_compaction(args)
    from datasource.compaction import command

    return int(command.run(args))


def refuse_without_compaction(args: argparse.Namespace) -> None:
    """One REST call: a stream without compaction is refused before Spark starts."""
    described = StreamDescription.from_json(rest(args).get_json(f"/v1/streams/{args.stream}"))
    if not described.spec.compaction:
        raise CompactionNotEnabledError(
            f"stream {args.stream} was created without compaction (Kafka's "
            "cleanup.policy=compact); recreate it with --compaction, or pass --force to "
            "compact it anyway"
        )
