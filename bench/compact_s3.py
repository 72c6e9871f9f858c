"""Compaction time on an ``s3://`` lake beside a local one, same data, same SparkSession, same
run: the job reads and writes through pyarrow on both, so the difference is the store.

    PYTHONPATH=. .venv/bin/python bench/compact_s3.py --rows 2000000 --rounds 2

The S3 server is the embedded SeaweedFS on this machine (loopback), so the figures show the
job's overhead per object-store request, not a network's. Each round compacts fresh copies
(not timed: building them); the best round counts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from datasource.compaction import CompactionOptions, CompactionTarget, compact_stream
from datasource.compaction.bench.data import BENCH_STREAM, TableShape, build_table
from datasource.compaction.session import get_or_build_session
from liftlog.embedded.seaweedfs import SeaweedFsServer, create_bucket
from spark_log.lake.storage import LakeStorage

DAY_MS = 24 * 3_600_000
QUIET = CompactionOptions(optimize=False, vacuum=False)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    shape = TableShape(args.rows, args.partitions, args.files_per_partition, 0.1, 100)
    work = Path(tempfile.mkdtemp(prefix="liftlog-bench-compact-s3-"))
    server = SeaweedFsServer(work / "s3").start()
    try:
        results = _run(shape, work, server, args.master, args.rounds)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _run(
    shape: TableShape, work: Path, server: SeaweedFsServer, master: str, rounds: int
) -> dict[str, Any]:
    creds = server.credentials
    bucket = f"bench-{uuid.uuid4().hex[:8]}"
    create_bucket(creds, bucket)
    options = {
        "aws_endpoint_url": creds.endpoint_url,
        "aws_access_key_id": creds.access_key_id,
        "aws_secret_access_key": creds.secret_access_key,
        "aws_region": creds.region,
        "aws_allow_http": "true",
    }
    spark, _created = get_or_build_session(master)
    seconds: dict[str, list[float]] = {"local": [], "s3": []}
    for r in range(rounds):
        local = str(work / f"local-{r}")
        remote = LakeStorage(f"s3://{bucket}/lake/{BENCH_STREAM}@{r}", options)
        build_table(local, shape)
        build_table(remote.uri, shape, storage_options=remote.delta_options())
        for name, target in (
            ("local", CompactionTarget(BENCH_STREAM, local, shape.partitions, DAY_MS)),
            (
                "s3",
                CompactionTarget(
                    BENCH_STREAM, remote.uri, shape.partitions, DAY_MS, storage_options=options
                ),
            ),
        ):
            started = time.monotonic()
            report = compact_stream(spark, target, QUIET)
            seconds[name].append(round(time.monotonic() - started, 3))
            print(
                f"round {r + 1}: {name}: {seconds[name][-1]:.2f}s "
                f"({report.records_before:,} -> {report.records_after:,} rows)",
                flush=True,
            )
    return {
        "rows": shape.rows,
        "master": master,
        "seconds": seconds,
        "best_seconds": {k: min(v) for k, v in seconds.items()},
    }


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/compact_s3.py")
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--files-per-partition", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--json", help="also write the results to this file")
    return p


if __name__ == "__main__":
    sys.exit(main())
