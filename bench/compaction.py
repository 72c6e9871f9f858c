"""Compaction rows/s beside plain Spark latest-per-key aggregations of the same files, same
SparkSession, same run; prints and writes JSON.

Run from the repository root (``make bench-compact`` runs this with the sizes below)::

    .venv/bin/python bench/compaction.py --rows 2000000 --rounds 3 \
        --json bench/results/compaction.json

Each round times every baseline, then a compaction of a fresh copy of the table (the copy is
not timed; the compaction is: planning, the Spark job, placing files, the Delta commit). The
best round counts, as JIT warm-up and the neighbours' load only ever make a round slower.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from datasource.compaction import CompactionOptions, CompactionTarget, compact_stream
from datasource.compaction.session import get_or_build_session
from liftlog.bench.lake.compaction_baselines import BASELINES, read_lake_files, write
from liftlog.bench.lake.compaction_table import BENCH_STREAM, TableShape, build_table
from liftlog.bench.toolkit.json_object import JsonObject
from spark_log.lake.rewrite import RewriteSnapshot
from spark_log.lake.storage import LakeStorage

TARGET_RATIO = 1.5


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    shape = TableShape(
        args.rows, args.partitions, args.files_per_partition, args.key_ratio, args.value_bytes
    )
    work = Path(args.data_dir or tempfile.mkdtemp(prefix="liftlog-bench-compact-"))
    try:
        results = run(shape, work, args.master, args.rounds)
    finally:
        if not args.data_dir:
            shutil.rmtree(work, ignore_errors=True)
    _print(results)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def run(shape: TableShape, work: Path, master: str, rounds: int) -> JsonObject:
    pristine = work / "pristine"
    t0 = time.monotonic()
    rows = build_table(pristine, shape)
    print(f"built {rows:,} rows in {time.monotonic() - t0:.1f}s at {pristine}", flush=True)
    spark, _created = get_or_build_session(master)
    snapshot = RewriteSnapshot.open(LakeStorage(str(pristine)), BENCH_STREAM)
    files = [f.location for f in snapshot.files()] if snapshot else []
    read_lake_files(spark, str(pristine), files).count()  # warm up the JVM and the file cache
    timings: dict[str, list[float]] = {name: [] for name in [*BASELINES, "compaction"]}
    compacted_rows = 0
    for r in range(rounds):
        for name, baseline in BASELINES.items():
            source = read_lake_files(spark, str(pristine), files)
            started = time.monotonic()
            write(baseline(source), str(work / "out"))
            timings[name].append(time.monotonic() - started)
            print(f"round {r + 1}: {name}: {timings[name][-1]:.2f}s", flush=True)
        copy = work / f"copy-{r}"
        shutil.copytree(pristine, copy)
        target = CompactionTarget(BENCH_STREAM, str(copy), shape.partitions, 24 * 3_600_000)
        options = CompactionOptions(optimize=False, vacuum=False)
        started = time.monotonic()
        report = compact_stream(spark, target, options)
        timings["compaction"].append(time.monotonic() - started)
        compacted_rows = report.records_after
        print(f"round {r + 1}: compaction: {timings['compaction'][-1]:.2f}s", flush=True)
        shutil.rmtree(copy, ignore_errors=True)
    return _results(shape, rows, compacted_rows, timings, master, spark.version)


def _results(
    shape: TableShape,
    rows: int,
    after: int,
    timings: dict[str, list[float]],
    master: str,
    spark_version: str,
) -> JsonObject:
    best = {name: min(ts) for name, ts in timings.items()}
    fastest_baseline = min(best[name] for name in BASELINES)
    return {
        "rows": rows,
        "rows_after": after,
        "shape": shape.__dict__,
        "master": master,
        "spark": spark_version,
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
        },
        "seconds": {name: [round(t, 3) for t in ts] for name, ts in timings.items()},
        "best_seconds": {name: round(t, 3) for name, t in best.items()},
        "rows_per_s": {name: round(rows / t) for name, t in best.items()},
        "ratio_vs_max_by": round(best["compaction"] / best["max_by_struct"], 3),
        "ratio_vs_same_plan": round(best["compaction"] / best["max_offset_semi_join"], 3),
        "ratio_vs_fastest_baseline": round(best["compaction"] / fastest_baseline, 3),
        "target_ratio": TARGET_RATIO,
    }


def _print(results: JsonObject) -> None:
    print(f"\n{results['rows']:,} rows -> {results['rows_after']:,} after compaction")
    for name, rate in results["rows_per_s"].items():
        print(f"  {name:<18} {results['best_seconds'][name]:7.2f}s  {rate:>12,} rows/s")
    ratio = results["ratio_vs_fastest_baseline"]
    verdict = "within" if ratio <= TARGET_RATIO else "NOT within"
    print(
        f"  compaction time / fastest plain aggregation = {ratio:.2f} "
        f"({verdict} the {TARGET_RATIO}x target)"
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/compaction.py")
    p.add_argument("--rows", type=int, default=2_000_000)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--files-per-partition", type=int, default=10)
    p.add_argument("--key-ratio", type=float, default=0.1)
    p.add_argument("--value-bytes", type=int, default=100)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--data-dir", help="keep the data here (default: a temporary directory)")
    p.add_argument("--json", help="also write the results to this file")
    return p


if __name__ == "__main__":
    sys.exit(main())
