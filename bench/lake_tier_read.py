"""REST reads from the lake tier beside reads from the local log, in one run.

Run from the repository root (``make bench-lake-tier`` does this)::

    .venv/bin/python bench/lake_tier_read.py --records 200000 --runs 3 \
        --json bench/results/lake-tier.json

One embedded stack (NATS, ZooKeeper, one node; ``--lake s3`` puts the lake on the stack's
SeaweedFS). One stream with ``retention_messages`` = ``--records`` gets about twice that many
records, is flushed to the lake, and retention deletes the exported segments below; then
``[0, records)`` is served by the lake tier (the partition's Delta table, read by the node)
and ``[log_start, log_start + records)`` by the local log. Per run, both ranges are read
from their first offset to their last by REST fetches of ``--page`` records, following
``next_offset``, once as Arrow and once as JSON (base64 values), the tier read first on even
runs and second on odd ones, so load from elsewhere hits both alike. Every read is checked
dense: each offset of its range exactly once.

Figures: rows/s and MB/s (values) per tier and encoding, median (min..max) over the runs
and every run's value. The node's lake tier keeps decoded row groups in a bounded cache, so a
run after the first may find some of the lake range decoded already; the first run's value
is in the JSON and the table. Nothing is asserted beyond the density check; every process
is stopped (by PID) whatever happens.
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.compute as pc

from liftlog.bench.errors import BenchError
from liftlog.bench.jetstream.server import varz
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.payload import payload, size_label
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread, ratio
from liftlog.bench.toolkit.table import render_table
from liftlog.embedded.ports import free_port
from liftlog.embedded.standalone import Standalone
from liftlog.embedded.standalone_lake import LAKE_LOCAL, LAKE_S3
from spark_log.client.client import encode_producer_batch
from spark_log.errors import LiftlogError
from spark_log.wire import ARROW_STREAM_MEDIA_TYPE

STREAM = "bench-lake-tier"
DEFAULT_RECORDS = 100_000
DEFAULT_SIZE = 1024
DEFAULT_RUNS = 3
DEFAULT_PAGE = 10_000
"""Records per fetch: the node's ``max_fetch_records`` (its ``max_fetch_bytes``, 4 MiB, may
cut a page of large records shorter)."""
PUBLISH_BATCH = 2000
SEGMENT_BYTES = 4 * 1024 * 1024
RETENTION_CHECK_MS = 200
RETENTION_WAIT_S = 120.0
HTTP_TIMEOUT_S = 120.0
NEVER_S = 3600.0
HUGE_BYTES = 1 << 40
TIERS = ("lake", "local")
ENCODINGS = ("arrow", "json")


@dataclass(frozen=True)
class Read:
    """One read of a whole range: its rows, value bytes and seconds."""

    rows: int
    value_bytes: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> JsonObject:
        return {
            "rows": self.rows,
            "value_bytes": self.value_bytes,
            "seconds": round(self.seconds, 4),
            "rows_per_s": round(self.rows_per_s, 1),
            "mb_per_s": round(self.mb_per_s, 3),
        }


@dataclass
class Results:
    """Every run's read per (tier, encoding)."""

    reads: dict[tuple[str, str], list[Read]] = field(
        default_factory=lambda: {(t, e): [] for t in TIERS for e in ENCODINGS}
    )

    def spread(self, tier: str, encoding: str, figure: Callable[[Read], float]) -> Spread:
        return Spread.of([figure(r) for r in self.reads[(tier, encoding)]])

    def to_json(self) -> JsonObject:
        out: JsonObject = {}
        for (tier, encoding), reads in self.reads.items():
            out.setdefault(tier, {})[encoding] = {
                "rows_per_s": self.spread(tier, encoding, lambda r: r.rows_per_s).to_json(1),
                "mb_per_s": self.spread(tier, encoding, lambda r: r.mb_per_s).to_json(3),
                "runs": [r.to_json() for r in reads],
            }
        out["lake_over_local_rows_per_s"] = {
            e: _rounded(
                ratio(
                    self.spread("lake", e, lambda r: r.rows_per_s),
                    self.spread("local", e, lambda r: r.rows_per_s),
                )
            )
            for e in ENCODINGS
        }
        return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def records_url(stream: str) -> str:
    return f"/v1/streams/{stream}/partitions/0/records"


def publish(api: httpx.Client, total: int, size: int, progress: Progress) -> None:
    """``total`` records of ``size`` bytes, as Arrow producer batches over REST."""
    value = payload(size)
    for first in range(0, total, PUBLISH_BATCH):
        n = min(PUBLISH_BATCH, total - first)
        body = encode_producer_batch([value] * n)
        sent = api.post(
            records_url(STREAM), content=body, headers={"Content-Type": ARROW_STREAM_MEDIA_TYPE}
        )
        if sent.status_code != 200:
            raise BenchError(f"publish failed: {sent.status_code} {sent.text[:200]}")
    progress.say(f"  published {total:,} records of {size_label(size)}")


def describe(api: httpx.Client) -> JsonObject:
    described = api.get(f"/v1/streams/{STREAM}")
    if described.status_code != 200:
        raise BenchError(f"describe failed: {described.status_code} {described.text[:200]}")
    partition: JsonObject = described.json()["partitions"][0]
    return partition


def build_history(api: httpx.Client, records: int, size: int, progress: Progress) -> int:
    """The stream with ``records`` in the lake below the log start and at least as many in
    the local log; the log start."""
    created = api.post(
        "/v1/streams",
        json={"name": STREAM, "subject": f"{STREAM}.in", "retention_messages": records},
    )
    if created.status_code not in (200, 201):
        raise BenchError(f"create failed: {created.status_code} {created.text[:200]}")
    segment_records = max(1, SEGMENT_BYTES // size)
    publish(api, 2 * records + 2 * segment_records, size, progress)
    flushed = api.post(f"/v1/streams/{STREAM}/flush")
    if flushed.status_code != 200:
        raise BenchError(f"flush failed: {flushed.status_code} {flushed.text[:200]}")
    progress.say("  flushed to the lake; waiting for retention to delete exported segments ...")
    deadline = time.monotonic() + RETENTION_WAIT_S
    while time.monotonic() < deadline:
        log_start = int(describe(api)["log_start_offset"])
        if log_start >= records:
            return log_start
        time.sleep(0.2)
    raise BenchError(f"retention did not move the log start to {records} in {RETENTION_WAIT_S}s")


def read_range(api: httpx.Client, start: int, count: int, page: int, encoding: str) -> Read:
    """Offsets ``[start, start + count)`` by fetches that follow ``next_offset``; checked
    dense (every offset once, in order)."""
    expected, rows, value_bytes = start, 0, 0
    end = start + count
    began = time.perf_counter()
    while expected < end:
        params: dict[str, int | str] = {
            "offset": expected,
            "max_records": min(page, end - expected),
        }
        if encoding == "arrow":
            resp = api.get(
                records_url(STREAM), params=params, headers={"Accept": ARROW_STREAM_MEDIA_TYPE}
            )
            _check(resp)
            table = pa.ipc.open_stream(pa.py_buffer(resp.content)).read_all()
            offsets = table.column("offset").to_pylist()
            value_bytes += pc.sum(pc.binary_length(table.column("value"))).as_py() or 0
            next_offset = int(resp.headers["liftlog-next-offset"])
        else:
            resp = api.get(records_url(STREAM), params={**params, "encoding": "base64"})
            _check(resp)
            body = resp.json()
            offsets = [r["offset"] for r in body["records"]]
            value_bytes += sum(len(base64.b64decode(r["value"])) for r in body["records"])
            next_offset = int(body["next_offset"])
        if offsets != list(range(expected, expected + len(offsets))) or next_offset <= expected:
            raise BenchError(f"a {encoding} read from {expected} is not dense: {offsets[:3]}...")
        rows += len(offsets)
        expected = next_offset
    seconds = time.perf_counter() - began
    if rows != count:
        raise BenchError(f"read {rows} rows of [{start}, {end}), wanted {count}")
    return Read(rows, value_bytes, seconds)


def _check(resp: httpx.Response) -> None:
    if resp.status_code != 200:
        raise BenchError(f"fetch failed: {resp.status_code} {resp.text[:200]}")


def measure(
    api: httpx.Client,
    records: int,
    runs: int,
    page: int,
    log_start: int,
    progress: Progress,
) -> Results:
    results = Results()
    starts = {"lake": 0, "local": log_start}
    for run in range(runs):
        order = TIERS if run % 2 == 0 else TIERS[::-1]
        for encoding in ENCODINGS:
            for tier in order:
                read = read_range(api, starts[tier], records, page, encoding)
                results.reads[(tier, encoding)].append(read)
                progress.say(
                    f"run {run + 1}/{runs} {tier:<5} {encoding:<5}: {read.rows:,} rows in "
                    f"{read.seconds:.2f}s = {read.rows_per_s:,.0f} rows/s, "
                    f"{read.mb_per_s:.1f} MB/s"
                )
    return results


def render_report(results: Results, settings: JsonObject, machine: JsonObject) -> str:
    rows = []
    for encoding in ENCODINGS:
        lake = results.spread("lake", encoding, lambda r: r.rows_per_s)
        local = results.spread("local", encoding, lambda r: r.rows_per_s)
        r = ratio(lake, local)
        rows.append(
            [
                f"REST {encoding}, rows/s",
                lake.render(0),
                local.render(0),
                "-" if r is None else f"{r:.2f}x",
                lake.render_runs(0),
                local.render_runs(0),
            ]
        )
        lake_mb = results.spread("lake", encoding, lambda r: r.mb_per_s)
        local_mb = results.spread("local", encoding, lambda r: r.mb_per_s)
        rows.append(
            [
                f"REST {encoding}, MB/s of values",
                lake_mb.render(1),
                local_mb.render(1),
                "",
                lake_mb.render_runs(1),
                local_mb.render_runs(1),
            ]
        )
    headers = [
        f"{settings['records']:,} records of {size_label(settings['record_bytes'])}, "
        f"pages of {settings['page']:,}",
        "lake tier, median (min..max)",
        "local log, median (min..max)",
        "lake / local",
        "lake tier, each run",
        "local log, each run",
    ]
    title = (
        f"REST reads, lake tier ({settings['lake']} lake) beside the local log, "
        f"{settings['runs']} run(s) ({machine['summary']}; load average "
        f"{machine['loadavg_at_start']} at start, {machine['loadavg_at_end']} at end)"
    )
    return "\n".join([title, "", render_table(headers, rows)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--records",
        type=int,
        default=DEFAULT_RECORDS,
        help=f"records read from each tier per run (default {DEFAULT_RECORDS})",
    )
    parser.add_argument(
        "--size", type=int, default=DEFAULT_SIZE, help=f"record bytes (default {DEFAULT_SIZE})"
    )
    parser.add_argument(
        "--page", type=int, default=DEFAULT_PAGE, help=f"records per fetch (default {DEFAULT_PAGE})"
    )
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs (default 3)")
    parser.add_argument(
        "--lake", choices=(LAKE_LOCAL, LAKE_S3), default=LAKE_LOCAL, help="where the lake is"
    )
    parser.add_argument("--data-dir", help="keep the stack's files here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.records < 1 or args.size < 1 or args.page < 1:
        parser.error("--runs, --records, --size and --page must be at least 1")
    settings = {
        "records": args.records,
        "record_bytes": args.size,
        "page": args.page,
        "runs": args.runs,
        "lake": args.lake,
        "segment_bytes": SEGMENT_BYTES,
        "partitions": 1,
    }
    progress = Progress()
    started = time.monotonic()
    load_at_start = loadavg()
    try:
        with data_root(args.data_dir) as root:
            stack = Standalone(
                nodes=1,
                data_dir=root / "stack",
                nats_port=free_port(),
                zk_port=free_port(),
                api_port=free_port(),
                liftbridge_port=free_port(),
                node_overrides={
                    "log": {
                        "segment_bytes": SEGMENT_BYTES,
                        "retention_check_interval_ms": RETENTION_CHECK_MS,
                    },
                    "lake": {"export_interval_s": NEVER_S, "export_min_bytes": HUGE_BYTES},
                },
                lake=args.lake,
                report=progress.say,
            )
            progress.say(f"starting a stack (NATS, ZooKeeper, one node, {args.lake} lake) ...")
            with stack:
                version = str(varz(stack.nats.monitor_url).get("version", "unknown"))
                with httpx.Client(base_url=stack.node(1).api_url, timeout=HTTP_TIMEOUT_S) as api:
                    log_start = build_history(api, args.records, args.size, progress)
                    progress.say(f"  log start {log_start:,}: [0, {args.records:,}) in the lake")
                    results = measure(api, args.records, args.runs, args.page, log_start, progress)
                progress.say("stopping every process the benchmark started ...")
    except LiftlogError as exc:
        print(f"lake_tier_read failed: {exc}", file=sys.stderr)
        return 1
    machine = {
        **describe_machine(version),
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": loadavg(),
    }
    print()
    print(render_report(results, settings, machine), flush=True)
    if args.json:
        body = {
            "machine": machine,
            "settings": settings,
            "log_start_offset": log_start,
            "results": results.to_json(),
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        print(f"\nwrote {write_json(args.json, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
