"""Reassigning a large partition to a new broker while an acks=all publisher runs.

Run from the repository root (``make bench-reassign`` does this)::

    .venv/bin/python bench/reassign.py --size-mb 1024 --runs 3 \
        --json bench/results/reassign.json

Each run starts ``Standalone(nodes=3)`` (one NATS server, one ZooKeeper server, local disks:
the HA topology's NATS cluster, ensemble and S3 lake play no part in copying a replica, and
the lake is off so exports do not compete with the copy), creates an RF=2 stream, fills its
one partition to ``--size-mb`` with large records (several acks=all publishers in parallel),
then starts a probe publisher (acks=all, 1 KB records at a fixed rate), measures it for a
while, and reassigns the partition from [a, b] to [b, c]: the leader leaves and broker c
copies the whole log from the new leader. Reported per run: the move time (request to the
controller's completion), the catch-up throughput (bytes of the copied log / move time), and
the probe's throughput and p50/p99 ack latency before and during the move. Variants: the
default ``reassignment_throttle_bytes_per_s`` and the throttle off (0); each variant fills its
own stack, since the throttle is a node setting. Figures: median and min..max over runs.
Nothing is asserted: the figures are printed and saved.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from liftlog.bench.jetstream.server import varz
from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_machine
from liftlog.bench.toolkit.payload import payload
from liftlog.bench.toolkit.plumbing import loadavg
from liftlog.bench.toolkit.stats import BYTES_PER_MB, Latency
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client
from spark_log.config import DEFAULT_REASSIGNMENT_THROTTLE_BYTES_PER_S
from spark_log.errors import LiftlogError
from spark_log.log.layout import LOG_SUFFIX

STREAM = "moving"
NODES = 3
FILL_RECORD_BYTES = 512 * 1024
FILL_PUBLISHERS = 8
PROBE_RECORD_BYTES = 1024
DEFAULT_PROBE_RATE_PER_S = 200
DEFAULT_BASELINE_S = 10.0
ACK_TIMEOUT_S = 30.0
MOVE_POLL_INTERVAL_S = 0.1
MOVE_TIMEOUT_S = 3600.0
THROTTLE_OFF = 0
VARIANTS = {"default": DEFAULT_REASSIGNMENT_THROTTLE_BYTES_PER_S, "off": THROTTLE_OFF}


@dataclass
class Probe:
    """A fixed-rate acks=all publisher: every publish is its own task, so a slow ack does not
    delay the next send and latency includes any queueing the move causes."""

    client: Client
    rate_per_s: int
    samples: list[tuple[float, float]] = field(default_factory=list)
    """(send time, ack latency) of every acknowledged record."""
    failures: list[tuple[float, str]] = field(default_factory=list)
    """(send time, error) of every publish that failed."""
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        value = payload(PROBE_RECORD_BYTES)
        interval = 1.0 / self.rate_per_s
        pending: set[asyncio.Task[None]] = set()
        next_send = time.monotonic()
        while not self._stopping.is_set():
            task = asyncio.create_task(self._one(value))
            pending.add(task)
            task.add_done_callback(pending.discard)
            next_send += interval
            await asyncio.sleep(max(0.0, next_send - time.monotonic()))
        await asyncio.gather(*pending)

    async def _one(self, value: bytes) -> None:
        sent = time.monotonic()
        try:
            await self.client.publish(STREAM, value, partition=0, timeout_s=ACK_TIMEOUT_S)
        except LiftlogError as exc:
            self.failures.append((sent, f"{exc.code}: {exc.message}"))
            return
        self.samples.append((sent, time.monotonic() - sent))

    def stop(self) -> None:
        self._stopping.set()

    def window(self, start: float, end: float) -> JsonObject:
        """Latency and acknowledged throughput of the records sent in ``[start, end)``."""
        latencies = [lat for sent, lat in self.samples if start <= sent < end]
        errors = [error for sent, error in self.failures if start <= sent < end]
        seconds = max(end - start, 1e-9)
        figures = Latency.from_samples(latencies, len(errors), self.rate_per_s).to_json()
        figures["acked_per_s"] = round(len(latencies) / seconds, 1)
        figures["mb_per_s"] = round(len(latencies) * PROBE_RECORD_BYTES / seconds / BYTES_PER_MB, 3)
        figures["seconds"] = round(seconds, 2)
        figures["first_error"] = errors[0] if errors else None
        return figures


async def fill(client: Client, size_bytes: int) -> float:
    """Publish ``size_bytes`` of large records (acks=all, several publishers); the MB/s."""
    value = payload(FILL_RECORD_BYTES)
    count = -(-size_bytes // FILL_RECORD_BYTES)
    queue = iter(range(count))
    started = time.monotonic()

    async def publisher() -> None:
        for _ in queue:
            await client.publish(STREAM, value, partition=0, timeout_s=ACK_TIMEOUT_S)

    await asyncio.gather(*(publisher() for _ in range(FILL_PUBLISHERS)))
    return count * FILL_RECORD_BYTES / (time.monotonic() - started) / BYTES_PER_MB


def _describe(api: httpx.Client) -> JsonObject:
    return dict(api.get(f"/v1/streams/{STREAM}").json()["partitions"][0])


def _wait_moved(api: httpx.Client, target: list[int]) -> None:
    """Until the partition's replicas are ``target`` and no move is pending."""
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    while time.monotonic() < deadline:
        pending = api.get(f"/v1/streams/{STREAM}/reassign").json()["partitions"]
        if not pending and _describe(api)["replicas"] == target:
            return
        time.sleep(MOVE_POLL_INTERVAL_S)
    raise TimeoutError(f"the move to {target} did not finish within {MOVE_TIMEOUT_S:.0f}s")


def _log_bytes(stack: Standalone, broker: int) -> int:
    root = Path(stack.node(broker).config.data_dir)
    return sum(f.stat().st_size for f in root.glob(f"streams/{STREAM}@*/0/*{LOG_SUFFIX}"))


def _stack(root: Path, throttle: int) -> Standalone:
    return Standalone(
        nodes=NODES,
        data_dir=root,
        nats_port=free_port(),
        zk_port=free_port(),
        api_port=free_port_block(NODES),
        liftbridge_port=free_port_block(NODES),
        nats_monitor_port=free_port(),
        node_overrides={"lake": {"enabled": False}, "reassignment_throttle_bytes_per_s": throttle},
    )


async def one_run(args: argparse.Namespace, throttle: int, root: Path) -> JsonObject:
    """Fill, probe, move, probe: the figures of one run on a fresh stack."""
    stack = _stack(root, throttle).start()
    try:
        figures = await _measure(args, stack)
        figures["nats_server"] = str(varz(stack.nats.monitor_url).get("version", "unknown"))
        return figures
    finally:
        stack.stop()


async def _measure(args: argparse.Namespace, stack: Standalone) -> JsonObject:
    with httpx.Client(base_url=stack.node(1).api_url, timeout=60) as api:
        api.post(
            "/v1/streams", json={"name": STREAM, "subject": STREAM, "replication_factor": 2}
        ).raise_for_status()
        a, b = _describe(api)["replicas"]
        (c,) = {n.broker_id for n in stack.nodes} - {a, b}
        async with Client(stack.servers, ack_timeout_s=ACK_TIMEOUT_S) as client:
            fill_mb_s = await fill(client, args.size_mb * BYTES_PER_MB)
            copied = _log_bytes(stack, a)
            probe = Probe(client, args.rate)
            probing = asyncio.create_task(probe.run())
            baseline_start = time.monotonic()
            await asyncio.sleep(args.baseline_s)
            move_start = time.monotonic()
            await client.reassign(STREAM, {0: [b, c]})
            await asyncio.to_thread(_wait_moved, api, [b, c])
            move_end = time.monotonic()
            probe.stop()
            await probing
    move_s = move_end - move_start
    return {
        "replicas": {"before": [a, b], "after": [b, c]},
        "fill_mb_per_s": round(fill_mb_s, 1),
        "copied_bytes": copied,
        "move_s": round(move_s, 2),
        "catch_up_mb_per_s": round(copied / move_s / BYTES_PER_MB, 1),
        "before": probe.window(baseline_start, move_start),
        "during": probe.window(move_start, move_end),
    }


def spread(values: Sequence[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


SUMMARY_FIELDS: dict[str, tuple[str, ...]] = {
    "move_s": ("move_s",),
    "catch_up_mb_per_s": ("catch_up_mb_per_s",),
    "before_acked_per_s": ("before", "acked_per_s"),
    "during_acked_per_s": ("during", "acked_per_s"),
    "before_p50_ms": ("before", "p50_ms"),
    "during_p50_ms": ("during", "p50_ms"),
    "before_p99_ms": ("before", "p99_ms"),
    "during_p99_ms": ("during", "p99_ms"),
    "during_failed": ("during", "failed"),
}
"""The summarized figures and where each is in a run's result."""


def _pick(run: JsonObject, path: tuple[str, ...]) -> float:
    *parents, name = path
    found = run
    for key in parents:
        found = found[key]
    return float(found[name])


def summarize(runs: list[JsonObject]) -> dict[str, dict[str, float]]:
    return {name: spread([_pick(r, path) for r in runs]) for name, path in SUMMARY_FIELDS.items()}


def render(variant: str, throttle: int, summary: dict[str, dict[str, float]]) -> str:
    def fmt(name: str) -> str:
        s = summary[name]
        return f"{s['median']:g} ({s['min']:g}..{s['max']:g})"

    limit = "off" if throttle == THROTTLE_OFF else f"{throttle / BYTES_PER_MB:.1f} MB/s"
    return "\n".join(
        [
            f"throttle {variant} ({limit}): median (min..max)",
            f"  move                  {fmt('move_s')} s",
            f"  catch-up              {fmt('catch_up_mb_per_s')} MB/s",
            f"  probe acks/s          before {fmt('before_acked_per_s')}, "
            f"during {fmt('during_acked_per_s')}",
            f"  probe p50 ack         before {fmt('before_p50_ms')} ms, "
            f"during {fmt('during_p50_ms')} ms",
            f"  probe p99 ack         before {fmt('before_p99_ms')} ms, "
            f"during {fmt('during_p99_ms')} ms",
            f"  probe failures        during {fmt('during_failed')}",
        ]
    )


def _machine(nats_server_version: str) -> JsonObject:
    return {**describe_machine(nats_server_version), "loadavg_at_start": loadavg()}


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="partition size to move (MB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--rate",
        type=int,
        default=DEFAULT_PROBE_RATE_PER_S,
        help="probe publisher rate (records/s, 1 KB each, acks=all)",
    )
    parser.add_argument(
        "--baseline-s",
        type=float,
        default=DEFAULT_BASELINE_S,
        help="seconds the probe runs before the move",
    )
    parser.add_argument("--throttle", choices=[*VARIANTS, "both"], default="both")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    variants = list(VARIANTS) if args.throttle == "both" else [args.throttle]
    with tempfile.TemporaryDirectory(prefix="liftlog-bench-reassign-") as tmp:
        result: JsonObject = {
            "machine": {},
            "settings": {
                "size_mb": args.size_mb,
                "runs": args.runs,
                "probe_rate_per_s": args.rate,
                "probe_record_bytes": PROBE_RECORD_BYTES,
                "fill_record_bytes": FILL_RECORD_BYTES,
                "baseline_s": args.baseline_s,
                "topology": "Standalone(nodes=3), lake off, RF=2",
            },
            "variants": {},
        }
        for variant in variants:
            throttle = VARIANTS[variant]
            runs = []
            for i in range(args.runs):
                print(
                    f"{variant}: run {i + 1}/{args.runs}, filling {args.size_mb} MB ...", flush=True
                )
                run = await one_run(args, throttle, Path(tmp) / f"{variant}-{i}")
                print(f"  {json.dumps(run)}", flush=True)
                runs.append(run)
            summary = summarize(runs)
            result["variants"][variant] = {
                "throttle_bytes_per_s": throttle,
                "runs": runs,
                "summary": summary,
            }
            print(render(variant, throttle, summary), flush=True)
        result["machine"] = _machine(runs[0]["nats_server"] if runs else "unknown")
        print(f"machine: {result['machine']['summary']}", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
