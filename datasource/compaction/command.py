"""``liftlog compact``: the command behind the CLI's options (imported only when it runs, so
the rest of the CLI never loads Spark)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import TextIO, TypeVar

from datasource.compaction.errors import InvalidCompactionOptionError
from datasource.compaction.lake_credentials import check_lake_credentials
from datasource.compaction.lake_options import parse_lake_options
from datasource.compaction.report import CompactionReport, format_report
from datasource.compaction.runner import compact_stream, compact_without_spark
from datasource.compaction.schedule import DEFAULT_WATCH_POLL_S, CompactionSchedule
from datasource.compaction.session import get_or_build_session
from datasource.compaction.settings import (
    DEFAULT_COMMIT_RETRIES,
    DEFAULT_MAX_RECORDS_PER_FILE,
    DEFAULT_VACUUM_RETENTION_HOURS,
    CompactionOptions,
    CompactionTarget,
    Progress,
)
from datasource.compaction.target import describe_target
from spark_log.client.credentials import ClientCredentials
from spark_log.client.credentials_file import credentials_file_lake
from spark_log.client.rest import RestClient
from spark_log.lake.packing import DEFAULT_TARGET_FILE_BYTES

BYTES_PER_MB = 1024 * 1024
T = TypeVar("T")


def _credentials(args: argparse.Namespace) -> ClientCredentials:
    """``--token``, ``--ca-file``, ... (the CLI's credential flags), else env and file."""
    given = {k: getattr(args, k, None) for k in ("token", "ca_file", "cert_file", "key_file")}
    return ClientCredentials.resolve(
        given, credentials_file=getattr(args, "credentials_file", None)
    )


def run(args: argparse.Namespace) -> int:
    options = options_from_args(args)
    client = RestClient(args.server, credentials=_credentials(args))
    if not args.watch and not args.stream:
        raise InvalidCompactionOptionError("name the stream to compact (or use --watch)")
    say = _progress(sys.stderr if args.json else sys.stdout)
    if args.watch:
        return _watch(args, client, options, say)
    lake_options = parse_lake_options(args.lake_option or ())
    from_file = credentials_file_lake(getattr(args, "credentials_file", None), os.environ)
    target = describe_target(client, args.stream, lake_options, from_file)
    check_lake_credentials(target.table_uri, target.storage.options, os.environ)
    report = compact_without_spark(target, options, say)
    if report is None:
        report = _compact_with_spark(args.master, target, options, say)
    _print_report(report, args.json)
    failed = report.maintenance is not None and report.maintenance.error is not None
    return 1 if failed else 0


def _compact_with_spark(
    master: str, target: CompactionTarget, options: CompactionOptions, say: Progress
) -> CompactionReport:
    """The run that computes: a SparkSession is started only here."""
    spark, created = get_or_build_session(master)
    try:
        return compact_stream(spark, target, options, say)
    finally:
        if created:
            spark.stop()


def options_from_args(args: argparse.Namespace) -> CompactionOptions:
    target_mb = args.optimize_target_mb
    target_bytes = DEFAULT_TARGET_FILE_BYTES if target_mb is None else target_mb * BYTES_PER_MB
    return CompactionOptions(
        boundary_offset=args.boundary_offset,
        partitions=tuple(args.partition) if args.partition else None,
        full=args.full,
        force=args.force,
        max_records_per_file=_or(args.max_records_per_file, DEFAULT_MAX_RECORDS_PER_FILE),
        commit_retries=_or(args.retries, DEFAULT_COMMIT_RETRIES),
        optimize=not args.no_optimize,
        optimize_target_bytes=target_bytes,
        vacuum=not args.no_vacuum,
        vacuum_retention_hours=_or(args.vacuum_retention_hours, DEFAULT_VACUUM_RETENTION_HOURS),
    )


def _watch(
    args: argparse.Namespace,
    client: RestClient,
    options: CompactionOptions,
    say: Progress,
) -> int:
    if args.stream:
        target = describe_target(client, args.stream)  # its settings only
        if not target.compaction_enabled or not target.compaction_interval_s:
            raise InvalidCompactionOptionError(
                f"stream {args.stream} has no compaction schedule (compaction=true and "
                "compaction_interval_s); run `liftlog compact` without --watch instead"
            )
    spark, created = get_or_build_session(args.master)
    stop = threading.Event()
    schedule = CompactionSchedule(
        spark,
        client,
        options,
        say,
        only_stream=args.stream,
        lake_options={
            **credentials_file_lake(getattr(args, "credentials_file", None), os.environ),
            **parse_lake_options(args.lake_option or ()),
        },
    )
    say("watching streams with a compaction_interval_s; Ctrl-C stops")
    try:
        schedule.run(stop, _or(args.watch_poll_s, DEFAULT_WATCH_POLL_S))
    finally:
        stop.set()
        if created:
            spark.stop()
    return 0


def _print_report(report: CompactionReport, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
        return
    for line in format_report(report):
        print(line, flush=True)


def _progress(stream: TextIO) -> Progress:
    started = time.monotonic()

    def say(line: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {line}", file=stream, flush=True)

    return say


def _or(value: T | None, default: T) -> T:
    return default if value is None else value
