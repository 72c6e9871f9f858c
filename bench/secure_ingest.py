"""Acked ingest on ``liftlog standalone`` beside ``liftlog standalone --secure``, in one run.

Run from the repository root (``make bench-secure`` does this)::

    .venv/bin/python bench/secure_ingest.py --runs 3 \
        --json bench/results/secure.json

Two embedded stacks run side by side for the whole benchmark, each with one node: the plain
one, and the secured one that ``liftlog standalone --secure`` starts (HTTPS and token auth on
the node's REST API, NATS with TLS and logins judged by the nodes (Liftlog tokens),
ZooKeeper over TLS with client certificates and digest ACLs). The nodes' settings are the same
in both but for security (``fsync = "always"``, the default). The publisher is the real
``spark_log.Client`` in both: anonymous on the plain stack; on the secured one with the stack's
``credentials.toml`` for REST and the user of ``tls/nats-publisher.env`` for NATS, as a user
would run it.

Per run, each stack in turn (the first one alternating from run to run, so load from
elsewhere hits both alike; the other stack idles meanwhile), on one stream per record size
(1 partition, ``ack_policy = "all"``), with the measurements of ``liftlog bench``:

1. per-message acked throughput: one record per NATS message, a window of 256 in flight;
2. producer batches: many records per NATS message, 4 batches in flight;
3. single-publish ack latency, paced at 1,000 publishes/s (p50, p99);
4. producer-batch ack latency, paced at a moderate batch rate (p50, p99).

Every figure is printed as the median of the runs with their spread (min..max) for each
stack, with secure ÷ plain of the medians, then every run's value; the JSON keeps every run.
Every acknowledged record is counted and held against the stream's high watermark at the end:
an acked record the stream does not hold is reported as lost. Nothing is asserted; every
process is stopped (by PID) whatever happens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from liftlog.bench.compare.sides import NATS, NODE, PUBLISHER
from liftlog.bench.errors import BenchError
from liftlog.bench.jetstream.server import varz
from liftlog.bench.publish.acked import measure_acked
from liftlog.bench.publish.batches import measure_batches
from liftlog.bench.publish.latency import measure_latency
from liftlog.bench.publish.publishers import LiftlogPublisher
from liftlog.bench.publish.settings import (
    ACK_TIMEOUT_S,
    DEFAULT_RECORDS,
    LATENCY_DURATION_S,
    BenchSettings,
)
from liftlog.bench.publish.tally import AckTally, CountingBatchSender, CountingPublisher
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.node_probe import peak_rss_mb
from liftlog.bench.toolkit.payload import payload, size_label
from liftlog.bench.toolkit.plumbing import data_root, loadavg, write_json
from liftlog.bench.toolkit.progress import Progress
from liftlog.bench.toolkit.spread import Spread, ratio
from liftlog.bench.toolkit.stats import Latency, Throughput
from liftlog.bench.toolkit.table import num, render_table
from liftlog.embedded.ports import free_port
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.client.credentials import ClientCredentials, load_credentials_file
from spark_log.errors import LiftlogError
from spark_log.nats_config import NatsCredentials, nats_credentials_from_env

PLAIN = "plain"
SECURE = "secure"
MODES = (PLAIN, SECURE)
MODE_TITLES = {PLAIN: "plain", SECURE: "--secure"}
DEFAULT_RUNS = 3
DEFAULT_SIZES = (1024,)
# Producer batches sent per second in the batch-latency run: with 1 KiB records (1,000 per
# batch) about a quarter of what one node takes in producer batches on two cores, so the
# figure is the cost of one batch rather than of a queue building up (single publishes are
# paced the same way, at 1,000/s).
BATCH_LATENCY_RATE_PER_S = 40
SECURITY_SUMMARY = (
    "HTTPS + bearer-token auth on the node's REST API; NATS over TLS with a password user "
    "limited by subject permissions; ZooKeeper over TLS with client certificates and digest "
    "ACLs"
)


@dataclass(frozen=True)
class Figure:
    """One printed figure: its key in ``ModeRun.figures``, its row label, its decimals."""

    key: str
    label: str
    decimals: int


FIGURES = (
    Figure("acked_records_per_s", "per-message acked (window {window}), records/s", 0),
    Figure("acked_mb_per_s", "per-message acked, MB/s", 2),
    Figure(
        "batch_records_per_s",
        "producer batches ({per_batch}/msg, {in_flight} in flight), records/s",
        0,
    ),
    Figure("batch_mb_per_s", "producer batches, MB/s", 2),
    Figure("latency_p50_ms", "single publish at {rate}/s, ack p50 ms", 2),
    Figure("latency_p99_ms", "single publish, ack p99 ms", 2),
    Figure("batch_latency_p50_ms", "producer batch at {batch_rate}/s, ack p50 ms", 2),
    Figure("batch_latency_p99_ms", "producer batch, ack p99 ms", 2),
)


@dataclass(frozen=True)
class ModeRun:
    """One run's measurements on one stack for one record size."""

    acked: Throughput
    batches: Throughput
    records_per_batch: int
    latency: Latency
    batch_latency: Latency

    def figures(self) -> dict[str, float]:
        return {
            "acked_records_per_s": self.acked.records_per_s,
            "acked_mb_per_s": self.acked.mb_per_s,
            "batch_records_per_s": self.batches.records_per_s,
            "batch_mb_per_s": self.batches.mb_per_s,
            "latency_p50_ms": self.latency.p50_ms,
            "latency_p99_ms": self.latency.p99_ms,
            "batch_latency_p50_ms": self.batch_latency.p50_ms,
            "batch_latency_p99_ms": self.batch_latency.p99_ms,
        }

    @property
    def failed_records(self) -> int:
        """Records of publishes that got no ack (a failed batch counts all of its records)."""
        return (
            self.acked.failed
            + self.batches.failed
            + self.latency.failed
            + self.batch_latency.failed * self.records_per_batch
        )

    def to_json(self) -> JsonObject:
        return {
            "per_message_acked": self.acked.to_json(),
            "producer_batches": {
                **self.batches.to_json(),
                "records_per_batch": self.records_per_batch,
            },
            "latency": self.latency.to_json(),
            "batch_latency": {
                **self.batch_latency.to_json(),
                "records_per_batch": self.records_per_batch,
            },
        }


@dataclass(frozen=True)
class StoredCheck:
    """What a stream holds at the end against what its publisher saw acknowledged."""

    acked: int
    stored: int

    @property
    def lost(self) -> int:
        """Acked records the stream does not hold (its high watermark below the acked count;
        a publish that failed may still be stored, so ``stored`` may exceed ``acked``)."""
        return max(0, self.acked - self.stored)

    def to_json(self) -> dict[str, int]:
        return {"acked": self.acked, "stored": self.stored, "lost": self.lost}


@dataclass
class SizeResult:
    """Every run of both stacks for one record size, and what each stream held at the end."""

    record_bytes: int
    runs: dict[str, list[ModeRun]] = field(default_factory=lambda: {m: [] for m in MODES})
    stored: dict[str, StoredCheck] = field(default_factory=dict)

    def spreads(self, mode: str) -> dict[str, Spread]:
        figures = [run.figures() for run in self.runs[mode]]
        return {f.key: Spread.of([run[f.key] for run in figures]) for f in FIGURES}

    def failed_records(self, mode: str) -> int:
        return sum(run.failed_records for run in self.runs[mode])

    @property
    def records_per_batch(self) -> int:
        return self.runs[PLAIN][0].records_per_batch if self.runs[PLAIN] else 0

    def secure_over_plain(self) -> dict[str, float | None]:
        plain, secure = self.spreads(PLAIN), self.spreads(SECURE)
        return {f.key: ratio(secure[f.key], plain[f.key]) for f in FIGURES}

    def to_json(self) -> JsonObject:
        return {
            "record_bytes": self.record_bytes,
            "records_per_batch": self.records_per_batch,
            "modes": {
                mode: {
                    "figures": {k: s.to_json() for k, s in self.spreads(mode).items()},
                    "failed_records": self.failed_records(mode),
                    "stored": self.stored[mode].to_json(),
                    "runs": [run.to_json() for run in self.runs[mode]],
                }
                for mode in MODES
            },
            "secure_over_plain": {
                k: None if v is None else round(v, 3) for k, v in self.secure_over_plain().items()
            },
        }


@dataclass
class Side:
    """One stack under test, its client, what it acked per stream, and the processes whose
    CPU each measurement reports (this publisher, the stack's nats-server, its node)."""

    mode: str
    stack: Standalone
    client: Client
    tally: AckTally = field(default_factory=AckTally)

    @property
    def title(self) -> str:
        return MODE_TITLES[self.mode]

    @property
    def pids(self) -> dict[str, int]:
        return {PUBLISHER: os.getpid(), NATS: self.stack.nats.pid, NODE: self.stack.node(1).pid}


class BatchPublisher:
    """A producer batch of ``records_per_batch`` copies of the value per ``publish``, so the
    paced latency run of ``liftlog bench`` (``measure_latency``) times batch acks too."""

    def __init__(
        self, sender: CountingBatchSender, stream: str, records_per_batch: int, label: str
    ) -> None:
        self.label = label
        self._sender = sender
        self._stream = stream
        self._records = records_per_batch
        self._value: bytes | None = None
        self._values: list[bytes] = []

    async def publish(self, value: bytes) -> None:
        if value is not self._value:  # the run publishes one value: build its batch once
            self._value, self._values = value, [value] * self._records
        ack = await self._sender.publish_batch(self._stream, self._values, timeout_s=ACK_TIMEOUT_S)
        if ack is None or ack.count != self._records:
            raise BenchError(f"batch ack {ack} does not cover {self._records} records")


def stream_for(size: int) -> tuple[str, str]:
    """(stream, subject) for one record size: the same names on both stacks."""
    return f"bench-ingest-{size}", f"bench.ingest.{size}"


def publisher_nats_credentials(env_file: Path) -> NatsCredentials:
    """The NATS user a secured stack writes for publishers (``export LIFTLOG_NATS_*=...``
    lines, values unquoted), read as ``nats_credentials_from_env`` reads the environment a
    user sourced the file into."""
    found: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep:
            found[name.strip()] = value.strip()
    return nats_credentials_from_env(found)


def open_client(stack: Standalone) -> Client:
    """The client a user would build: anonymous for the plain stack (credentials given
    explicitly empty, so ``LIFTLOG_*`` variables of the calling shell cannot leak in); the
    stack's ``credentials.toml`` and its NATS publisher user for the secured one."""
    node = stack.node(1)
    if stack.secure is None:
        return Client(
            node.api_url,
            nats_url=stack.nats.url,
            ack_timeout_s=ACK_TIMEOUT_S,
            nats_credentials=NatsCredentials(),
            credentials=ClientCredentials(),
        )
    if not node.api_url.startswith("https://"):
        raise BenchError(f"the --secure stack's node serves {node.api_url}, not HTTPS")
    return Client(
        node.api_url,
        nats_url=stack.nats.url,
        ack_timeout_s=ACK_TIMEOUT_S,
        nats_credentials=publisher_nats_credentials(stack.secure.publisher_env_file),
        credentials=load_credentials_file(str(stack.secure.credentials_file)),
    )


@contextlib.contextmanager
def two_stacks(root: Path, progress: Progress) -> Iterator[dict[str, Standalone]]:
    """Both stacks started, and stopped on the way out whatever happened. Their settings
    differ only by ``secure``; neither runs JetStream (nothing here publishes to it)."""
    stacks = {
        mode: Standalone(
            nodes=1,
            data_dir=root / mode,
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port(),
            liftbridge_port=free_port(),
            secure=mode == SECURE,
            report=progress.say,
        )
        for mode in MODES
    }
    progress.say("starting the plain stack and the --secure one (NATS, ZooKeeper, one node) ...")
    with stacks[PLAIN], stacks[SECURE]:
        for mode, stack in stacks.items():
            for name, url in stack.endpoints():
                progress.say(f"  {MODE_TITLES[mode]:<9} {name:<14} {url}")
        yield stacks


async def measure_mode(
    side: Side, size: int, settings: BenchSettings, max_payload: int, progress: Progress
) -> ModeRun:
    """The four measurements of one run on one stack, one after the other."""
    value = payload(size)
    stream, _subject = stream_for(size)
    label = f"{size_label(size)}, {side.title}"
    publisher = CountingPublisher(LiftlogPublisher(side.client, stream, label), side.tally, stream)
    sender = CountingBatchSender(side.client, side.tally, stream)

    progress.say(f"{label}: per-message acked, {settings.records:,} records ...")
    acked = await measure_acked(publisher, value, settings, progress, side.pids)
    progress.say(f"  {acked.records_per_s:,.0f} records/s, {acked.mb_per_s:.2f} MB/s")

    progress.say(f"{label}: producer batches, {settings.batch_total_records:,} records ...")
    batches, per_batch = await measure_batches(
        sender, stream, value, settings, max_payload, progress, side.pids
    )
    progress.say(
        f"  {batches.records_per_s:,.0f} records/s, {batches.mb_per_s:.2f} MB/s "
        f"({per_batch} records per batch)"
    )

    progress.say(
        f"{label}: single-publish latency, {settings.latency_messages:,} at "
        f"{settings.latency_rate_per_s}/s ..."
    )
    latency = await measure_latency(publisher, value, settings, side.pids)
    progress.say(f"  p50 {latency.p50_ms:.2f} ms, p99 {latency.p99_ms:.2f} ms")

    paced = dataclasses.replace(settings, latency_rate_per_s=BATCH_LATENCY_RATE_PER_S)
    progress.say(
        f"{label}: batch latency, {paced.latency_messages:,} batches at "
        f"{BATCH_LATENCY_RATE_PER_S}/s ..."
    )
    batch_publisher = BatchPublisher(sender, stream, per_batch, label)
    batch_latency = await measure_latency(batch_publisher, value, paced, side.pids)
    progress.say(f"  p50 {batch_latency.p50_ms:.2f} ms, p99 {batch_latency.p99_ms:.2f} ms")
    return ModeRun(acked, batches, per_batch, latency, batch_latency)


async def stored_check(side: Side, size: int) -> StoredCheck:
    stream, _subject = stream_for(size)
    described = await side.client.describe_stream(stream)
    stored = described.partition(0).high_watermark or 0
    return StoredCheck(side.tally.acked(stream), stored)


async def measure_all(
    stacks: Mapping[str, Standalone], settings: BenchSettings, runs: int, progress: Progress
) -> tuple[list[SizeResult], dict[str, float]]:
    """Every run of every size on both stacks; also each node's peak RSS (read before the
    nodes stop)."""
    async with contextlib.AsyncExitStack() as exits:
        sides = {
            mode: Side(mode, stack, await exits.enter_async_context(open_client(stack)))
            for mode, stack in stacks.items()
        }
        results = []
        for size in settings.sizes:
            stream, subject = stream_for(size)
            max_payload = {}
            for mode, side in sides.items():
                await side.client.create_stream(stream, subject, ack_policy="all")
                max_payload[mode] = await side.client.max_payload()
            result = SizeResult(size)
            for run in range(runs):
                order = MODES if run % 2 == 0 else MODES[::-1]
                for mode in order:
                    progress.say(f"run {run + 1}/{runs}, {MODE_TITLES[mode]} stack")
                    result.runs[mode].append(
                        await measure_mode(sides[mode], size, settings, max_payload[mode], progress)
                    )
            result.stored = {mode: await stored_check(sides[mode], size) for mode in MODES}
            results.append(result)
        rss = {mode: round(peak_rss_mb(stack.node(1).pid), 1) for mode, stack in stacks.items()}
    return results, rss


def _cpu(throughputs: Sequence[Throughput]) -> str:
    """``70 / 21 / 58``: the median over the runs of % of one core for the publisher, the
    stack's nats-server and its node."""
    cells = []
    for name in (PUBLISHER, NATS, NODE):
        values = [t.cpu_percent[name] for t in throughputs if name in t.cpu_percent]
        cells.append(num(statistics.median(values)) if values else "-")
    return " / ".join(cells)


def render_size(size: SizeResult, settings: BenchSettings) -> str:
    """One table: a row per figure with the median (min..max) per stack, secure ÷ plain of
    the medians and every run's value; then CPU, failures and the stored check."""
    words = {
        "window": settings.ack_window,
        "per_batch": size.records_per_batch,
        "in_flight": settings.batches_in_flight,
        "rate": num(settings.latency_rate_per_s),
        "batch_rate": BATCH_LATENCY_RATE_PER_S,
    }
    plain, secure = size.spreads(PLAIN), size.spreads(SECURE)
    ratios = size.secure_over_plain()
    rows = []
    for f in FIGURES:
        r = ratios[f.key]
        rows.append(
            [
                f.label.format(**words),
                plain[f.key].render(f.decimals),
                secure[f.key].render(f.decimals),
                "-" if r is None else f"{r:.2f}x",
                plain[f.key].render_runs(f.decimals),
                secure[f.key].render_runs(f.decimals),
            ]
        )
    runs = size.runs
    stored = size.stored
    rows += [
        [
            "per-message acked, CPU % publisher/NATS/node",
            _cpu([r.acked for r in runs[PLAIN]]),
            _cpu([r.acked for r in runs[SECURE]]),
        ],
        [
            "producer batches, CPU % publisher/NATS/node",
            _cpu([r.batches for r in runs[PLAIN]]),
            _cpu([r.batches for r in runs[SECURE]]),
        ],
        [
            "failed publishes, records (all runs)",
            num(size.failed_records(PLAIN)),
            num(size.failed_records(SECURE)),
        ],
        [
            "acked / stored / lost records (all runs)",
            *[
                f"{num(stored[m].acked)} / {num(stored[m].stored)} / {num(stored[m].lost)}"
                for m in MODES
            ],
        ],
    ]
    headers = [
        f"acked ingest, {size_label(size.record_bytes)} records",
        *[f"{MODE_TITLES[m]}, median (min..max)" for m in MODES],
        "secure / plain",
        *[f"{MODE_TITLES[m]}, each run" for m in MODES],
    ]
    return render_table(headers, rows)


def render_report(
    results: Sequence[SizeResult],
    settings: BenchSettings,
    runs: int,
    machine: JsonObject,
    rss: Mapping[str, float],
) -> str:
    parts = [
        f"Acked ingest, plain beside --secure, {runs} run(s), median (min..max) "
        f"({machine['summary']}; load average {machine['loadavg_at_start']} at start, "
        f"{machine['loadavg_at_end']} at end)",
        f"--secure: {SECURITY_SUMMARY}",
    ]
    for size in results:
        parts += ["", render_size(size, settings)]
    parts += [
        "",
        "node peak RSS (VmHWM): "
        + ", ".join(f"{MODE_TITLES[m]} {rss[m]:.0f} MB" for m in MODES if m in rss),
    ]
    return "\n".join(parts)


def settings_json(settings: BenchSettings, runs: int) -> JsonObject:
    return {
        "runs": runs,
        "records": settings.records,
        "sizes": list(settings.sizes),
        "ack_window": settings.ack_window,
        "batch_records": settings.batch_records,
        "batches_in_flight": settings.batches_in_flight,
        "batch_total_records": settings.batch_total_records,
        "latency_rate_per_s": settings.latency_rate_per_s,
        "latency_messages": settings.latency_messages,
        "batch_latency_rate_per_s": BATCH_LATENCY_RATE_PER_S,
        "latency_duration_s": settings.latency_duration_s,
        "partitions": 1,
        "node_fsync": "always",
        "liftlog_ack_policy": "all",
        "secure": SECURITY_SUMMARY,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--records",
        type=int,
        default=DEFAULT_RECORDS,
        help=f"records per per-message run; producer batches send 4x (default {DEFAULT_RECORDS})",
    )
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in DEFAULT_SIZES),
        help="record sizes in bytes, comma-separated (default 1024)",
    )
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help=f"runs per stack (default {DEFAULT_RUNS})"
    )
    parser.add_argument(
        "--latency-seconds",
        type=float,
        default=LATENCY_DURATION_S,
        help=f"length of each paced latency run (default {LATENCY_DURATION_S:g})",
    )
    parser.add_argument("--data-dir", help="keep both stacks' files here (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        settings = BenchSettings(
            records=args.records,
            sizes=tuple(int(s) for s in args.sizes.split(",") if s),
            latency_duration_s=args.latency_seconds,
        )
    except LiftlogError as exc:
        parser.error(exc.message)
    except ValueError as exc:
        parser.error(f"--sizes: {exc}")
    progress = Progress()
    started = time.monotonic()
    load_at_start = loadavg()
    try:
        with data_root(args.data_dir) as root, two_stacks(root, progress) as stacks:
            version = str(varz(stacks[PLAIN].nats.monitor_url).get("version", "unknown"))
            endpoints = {mode: dict(stack.endpoints()) for mode, stack in stacks.items()}
            results, rss = asyncio.run(measure_all(stacks, settings, args.runs, progress))
            progress.say("stopping every process the benchmark started ...")
    except LiftlogError as exc:
        print(f"secure_ingest failed: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    machine = {
        **describe_machine(version),
        "loadavg_at_start": load_at_start,
        "loadavg_at_end": loadavg(),
    }
    print()
    print(render_report(results, settings, args.runs, machine, rss), flush=True)
    if args.json:
        body = {
            "machine": machine,
            "settings": settings_json(settings, args.runs),
            "stacks": endpoints,
            "results": [size.to_json() for size in results],
            "node_peak_rss_mb": rss,
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        print(f"\nwrote {write_json(args.json, body)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
