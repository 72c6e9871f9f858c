"""Results of ``liftlog bench`` built by hand, one per line-up, with figures chosen so every
cell of the report is predictable: the report, the targets and the JSON are pure functions of
them, so they are tested without starting a stack."""

from __future__ import annotations

from liftlog.bench.compare.results import BenchResult, SizeResult
from liftlog.bench.publish.fire_forget import FireForget
from liftlog.bench.publish.replica_check import StoredCheck
from liftlog.bench.toolkit.stats import Latency, Throughput

MACHINE = {"summary": "2 CPUs", "loadavg_at_start": "1.00", "loadavg_at_end": "2.00"}
SETTINGS = {"ack_window": 256, "batches_in_flight": 4, "latency_rate_per_s": 1000}
SINGLE_CPU = {"publisher": 70.0, "nats-server": 20.0, "node": 60.0, "nats-server-sync": 5.0}
REPLICATED_CPU = {
    "publisher": 70.0,
    "nats-server": 20.0,
    "node-1": 60.0,
    "node-2": 15.0,
    "node-3": 14.0,
    "bench-r3-1": 30.0,
    "bench-r3-2": 10.0,
    "bench-r3-3": 11.0,
}
NODES = ["node-1", "node-2", "node-3"]
JS_SERVERS = ["bench-r3-1", "bench-r3-2", "bench-r3-3"]


def throughput(records: int, cpu: dict[str, float]) -> Throughput:
    return Throughput(records, 100, 1.0, 0, None, cpu)


def latency(cpu: dict[str, float], rate_per_s: int) -> Latency:
    return Latency.from_samples([0.001, 0.002, 0.004], 0, rate_per_s, cpu)


def single_node_result(sync_always: bool = True, notes: tuple[str, ...] = ()) -> BenchResult:
    """One node beside JetStream (and JetStream sync=always, unless it was dropped)."""
    sides = ["liftlog", "jetstream"] + (["jetstream_sync_always"] if sync_always else [])
    rounds = {
        side: [throughput(1000, SINGLE_CPU)] * (1 if side == "jetstream_sync_always" else 3)
        for side in sides
    }
    ff = FireForget(
        2000, 100, 0.1, 2000, 0.4, 2000, 0.2, 0, 0, 0, {**SINGLE_CPU, "subscriber": 40.0}
    )
    size = SizeResult(
        100,
        "liftlog",
        "jetstream",
        {side: r[0] for side, r in rounds.items()},
        rounds,
        throughput(40_000, SINGLE_CPU),
        1000,
        {side: latency(SINGLE_CPU, 1000) for side in sides},
        fire_forget=ff,
    )
    return BenchResult(
        MACHINE,
        SETTINGS,
        1,
        [size],
        {"node": 123.4},
        list(notes),
        {"liftlog": ["node"]},
    )


def replicated_result() -> BenchResult:
    """Three nodes beside a JetStream R3 cluster; node-2 and bench-r3-3 lead."""
    sides = ["liftlog_rf3", "jetstream_r3"]
    rounds = {side: [throughput(900, REPLICATED_CPU)] * 3 for side in sides}
    stored = {
        "liftlog_rf3": StoredCheck(5000, 5000, 3, 3, "node-2", tuple(NODES)),
        "jetstream_r3": StoredCheck(4000, 3990, 3, 2, "bench-r3-3", ("bench-r3-3",)),
    }
    size = SizeResult(
        100,
        "liftlog_rf3",
        "jetstream_r3",
        {side: r[0] for side, r in rounds.items()},
        rounds,
        throughput(27_000, REPLICATED_CPU),
        1000,
        {side: latency(REPLICATED_CPU, 500) for side in sides},
        stored=stored,
        leaders={"liftlog_rf3": "node-2", "jetstream_r3": "bench-r3-3"},
    )
    return BenchResult(
        MACHINE,
        {**SETTINGS, "latency_rate_per_s": 500},
        3,
        [size],
        {"node-1": 100.0, "node-2": 110.0, "node-3": 320.0},
        ["fewer records"],
        {"liftlog_rf3": NODES, "jetstream_r3": JS_SERVERS},
    )
