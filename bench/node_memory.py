"""A node's memory under producer batches with the lake exporting, with its default settings
beside the settings before the memory bounds (or any other), in one run.

Run from the repository root (``make bench-memory`` does this)::

    .venv/bin/python bench/node_memory.py --runs 3 --json bench/results/node-memory.json
    .venv/bin/python bench/node_memory.py --mb 20 --runs 1          # a quicker run

Each run of each variant starts ``Standalone(nodes=1)`` with the variant's node settings,
creates a stream of two partitions, publishes ``--mb`` MB of 1 KiB records as producer
batches of 1,000 (both partitions at once, acks=all), then waits ``--settle-s`` seconds while
the exporter catches up. Reported: VmRSS before the load (idle, one stream), VmHWM (the peak
through load and export) and VmRSS after settling, in MiB. Variants alternate within a run.
The ``before`` variant is this code with the settings it had before the memory bounds: Arrow's
mimalloc pool and two exports at once of 32 MiB each. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from liftlog.bench.toolkit.json_object import JsonObject
from liftlog.bench.toolkit.machine import describe_lake_machine
from liftlog.bench.toolkit.node_probe import proc_status_kib
from liftlog.bench.toolkit.payload import payload
from liftlog.bench.toolkit.plumbing import loadavg
from liftlog.bench.toolkit.spread import Spread
from liftlog.embedded.ports import free_port, free_port_block
from liftlog.embedded.standalone import Standalone
from spark_log.client import Client

STREAM = "memory"
PARTITIONS = 2
RECORD_BYTES = 1024
BATCH_RECORDS = 1000
BYTES_PER_MB = 1024 * 1024
KIB_PER_MIB = 1024
FIGURES = ("idle_mb", "peak_mb", "settled_mb")
IDLE_S = 2.0
VARIANTS: dict[str, Mapping[str, object]] = {
    "default": {},
    "before": {
        "memory": {"arrow_pool": "mimalloc"},
        "lake": {"max_bytes_per_file": 32 * BYTES_PER_MB, "concurrent_exports": 2},
    },
}


def _status_mib(pid: int, key: str) -> float:
    return round(proc_status_kib(pid, key) / KIB_PER_MIB, 1)


async def _load(servers: str, nats_url: str, megabytes: int) -> None:
    """``megabytes`` of 1 KiB records in producer batches, both partitions at once."""
    value = payload(RECORD_BYTES)
    rounds = max(1, megabytes * BYTES_PER_MB // (RECORD_BYTES * BATCH_RECORDS * PARTITIONS))
    async with Client(servers, nats_url=nats_url) as client:
        await client.create_stream(STREAM, f"{STREAM}.in", partitions=PARTITIONS)
        for _ in range(rounds):
            await asyncio.gather(
                *(
                    client.publish_batch(STREAM, [value] * BATCH_RECORDS, partition=p)
                    for p in range(PARTITIONS)
                )
            )


def measure(overrides: Mapping[str, object], megabytes: int, settle_s: float) -> JsonObject:
    """One stack, one load: idle, peak and settled RSS of the node, in MB."""
    with tempfile.TemporaryDirectory(prefix="liftlog-memory-bench-") as tmp:
        stack = Standalone(
            nodes=1,
            data_dir=Path(tmp),
            nats_port=free_port(),
            zk_port=free_port(),
            api_port=free_port_block(1),
            liftbridge_port=free_port_block(1),
            node_overrides=overrides,
        )
        with stack:
            pid = stack.node(1).pid
            time.sleep(IDLE_S)
            idle = _status_mib(pid, "VmRSS")
            started = time.monotonic()
            asyncio.run(_load(stack.servers, stack.nats.url, megabytes))
            load_s = time.monotonic() - started
            time.sleep(settle_s)
            return {
                "idle_mb": idle,
                "peak_mb": _status_mib(pid, "VmHWM"),
                "settled_mb": _status_mib(pid, "VmRSS"),
                "load_s": round(load_s, 2),
            }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    load_start = loadavg()
    runs: dict[str, list[JsonObject]] = {name: [] for name in VARIANTS}
    for run in range(args.runs):
        for name, overrides in VARIANTS.items():
            figures = measure(overrides, args.mb, args.settle_s)
            runs[name].append(figures)
            print(f"run {run + 1} {name:<8} {json.dumps(figures)}", flush=True)
    result: JsonObject = {
        "machine": describe_lake_machine(("pyarrow", "deltalake")),
        "loadavg": {"start": load_start, "end": loadavg()},
        "settings": {"mb": args.mb, "settle_s": args.settle_s, "runs": args.runs},
        "variants": {name: dict(overrides) for name, overrides in VARIANTS.items()},
        "runs": runs,
        "summary": {
            name: {key: _spread(figures, key).to_json(1) for key in FIGURES}
            for name, figures in runs.items()
        },
    }
    _print(runs)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _spread(runs: list[JsonObject], key: str) -> Spread:
    return Spread.of([run[key] for run in runs])


def _print(runs: dict[str, list[JsonObject]]) -> None:
    print(f"\n{'variant':<10}{'idle MiB':>22}{'peak MiB':>22}{'settled MiB':>22}")
    for name, figures in runs.items():
        cells = "".join(f"{_spread(figures, key).render(1):>22}" for key in FIGURES)
        print(f"{name:<10}{cells}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="MB published (default: 200)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant (default: 3)")
    parser.add_argument(
        "--settle-s", type=float, default=30.0, help="wait after the load (default: 30)"
    )
    parser.add_argument("--json", help="also write the results to this file")
    return parser


if __name__ == "__main__":
    sys.exit(main())
