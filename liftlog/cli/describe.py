"""Human-readable output of stream descriptions (``stream create``, ``describe``, ``flush``)."""

from __future__ import annotations

from typing import Any

from liftlog.cli.common import num, print_table

DESCRIBE_HEADERS = [
    "PARTITION",
    "LEADER",
    "EPOCH",
    "REPLICAS",
    "ISR",
    "HW",
    "LEO",
    "REPLICA LEOS",
    "LOG START",
    "LAKE",
    "",
]


def print_stream_list(streams: list[dict[str, Any]]) -> None:
    rows = [
        [
            s["name"],
            s["subject"],
            s["partitions"],
            s["replication_factor"],
            "paused" if s["paused"] else "active",
        ]
        for s in streams
    ]
    print_table(["NAME", "SUBJECT", "PARTITIONS", "RF", "STATE"], rows)


def print_describe(body: dict[str, Any]) -> None:
    """The stream's line, its lake table, compaction, then one row per partition: LOG START
    (first offset in the local log) beside LAKE (first offset not yet in the lake) shows
    where reads switch from the lake to the nodes."""
    state = "paused" if body.get("paused") else "active"
    print(
        f"{body['name']}  subject={body['subject']}  partitions={len(body['partitions'])}  "
        f"rf={body['replication_factor']}  ack_policy={body['ack_policy']}  {state}"
    )
    print(f"lake table: {_lake_uri(body)}")
    print(compaction_line(body))
    print_table(DESCRIBE_HEADERS, [_partition_row(p) for p in body.get("partitions", [])])


def print_flush(name: str, body: dict[str, Any]) -> None:
    print(f"stream {name}: sealed and flushed; lake table {_lake_uri(body)}")
    rows = [
        [p["partition"], num(p["high_watermark"]), num(p.get("lake_offset"))]
        for p in body.get("partitions", [])
    ]
    print_table(["PARTITION", "HW", "LAKE"], rows)


def _lake_uri(body: dict[str, Any]) -> str:
    lake = body.get("lake")
    return str(lake["uri"]) if lake else "disabled"


def _partition_row(p: dict[str, Any]) -> list[Any]:
    return [
        p["partition"],
        "none" if p["leader"] < 0 else str(p["leader"]),
        p["leader_epoch"],
        _ids(p["replicas"]),
        _ids(p["isr"]),
        num(p["high_watermark"]),
        num(p["log_end_offset"]),
        _leos(p.get("replica_log_end_offsets") or {}),
        num(p.get("log_start_offset")),
        num(p.get("lake_offset")),
        "OFFLINE" if p["offline"] else "",
    ]


def compaction_line(body: dict[str, Any]) -> str:
    if not body.get("compaction"):
        return "compaction: off"
    interval = body.get("compaction_interval_s")
    every = f"every {interval:g}s" if interval else "on demand"
    return f"compaction: on ({every}), delete retention {body.get('delete_retention_ms')} ms"


def _leos(leos: dict[str, int]) -> str:
    return ",".join(f"{b}:{o}" for b, o in sorted(leos.items(), key=lambda kv: int(kv[0])))


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)
