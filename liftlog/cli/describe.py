"""Human-readable output of stream descriptions (``stream create``, ``describe``, ``flush``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

from liftlog.cli.common import num, print_table
from spark_log.api_models import (
    BrokerInfo,
    FlushResult,
    LakeRef,
    PartitionState,
    StreamDescription,
    StreamSummary,
)
from spark_log.value_schema import ValueSchema

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
    "LAKE START",
    "LAKE",
    "",
]


def print_stream_list(streams: Iterable[StreamSummary]) -> None:
    rows = [
        [
            s.name,
            s.subject,
            s.partitions,
            s.replication_factor,
            _state(s),
        ]
        for s in streams
    ]
    print_table(["NAME", "SUBJECT", "PARTITIONS", "RF", "STATE"], rows)


def print_describe(body: StreamDescription, brokers: Iterable[BrokerInfo] = ()) -> None:
    """The stream's line, its lake table, compaction, then one row per partition: LOG START
    (first offset in the local log) is where reads switch from the lake to the nodes; LAKE
    START (first offset in the lake, ``-`` when it holds none) is where the lake's history
    begins, and LAKE the first offset not yet in the lake. Last, the live ``brokers`` with
    the Liftbridge gRPC address a Liftbridge client reaches each leader on."""
    state = _state(body)
    print(
        f"{body.name}  subject={body.subject}  partitions={len(body.partitions)}  "
        f"rf={body.replication_factor}  ack_policy={body.ack_policy}  {state}"
    )
    print(f"lake table: {_lake_uri(body.lake)}")
    print(compaction_line(body))
    compacted = lake_compaction_line(body)
    if compacted is not None:
        print(compacted)
    if body.encryption:
        print("encryption: on (values encrypted at rest)")
    if body.timestamp_type == "create":
        print("timestamps: create time (the producer's Liftlog-Timestamp header)")
    if body.auto_pause_ms is not None:
        unless = ", unless consumers fetch" if body.auto_pause_disable_if_subscribers else ""
        print(f"auto-pause: after {body.auto_pause_ms} ms without appends{unless}")
    if body.spec.value_schema is not None:
        print(value_schema_line(body.spec.value_schema))
    print_table(DESCRIBE_HEADERS, [_partition_row(p) for p in body.partitions])
    for p in body.partitions:
        if p.lake_error is not None:
            print(f"partition {p.partition}: lake export stalled: {p.lake_error.message}")
    if brokers:
        print(f"brokers (Liftbridge gRPC): {grpc_addresses(brokers)}")


def value_schema_line(binding: ValueSchema) -> str:
    """``value schema: orders-value (avro), invalid records refused``."""
    if binding.dead_letter_stream is not None:
        invalid = f"invalid records to {binding.dead_letter_stream}"
    else:
        invalid = "invalid records refused"
    return f"value schema: {binding.subject} ({binding.format}), {invalid}"


def grpc_addresses(brokers: Iterable[BrokerInfo]) -> str:
    """``1=host:9292 2=host:9293``, ``-`` for a broker that serves no gRPC API."""
    ordered = sorted(brokers, key=lambda b: b.broker_id)
    return "  ".join(f"{b.broker_id}={b.liftbridge_address or '-'}" for b in ordered)


def print_flush(name: str, body: FlushResult) -> None:
    print(f"stream {name}: sealed and flushed; lake table {_lake_uri(body.lake)}")
    rows = [[p.partition, num(p.high_watermark), num(p.lake_offset)] for p in body.partitions]
    print_table(["PARTITION", "HW", "LAKE"], rows)


def _lake_uri(lake: LakeRef | None) -> str:
    return lake.uri if lake else "disabled"


def _partition_row(p: PartitionState) -> list[object]:
    return [
        p.partition,
        "none" if p.leader < 0 else str(p.leader),
        p.leader_epoch,
        _ids(p.replicas),
        _ids(p.isr),
        num(p.high_watermark),
        num(p.log_end_offset),
        _leos(p.replica_log_end_offsets or {}),
        num(p.log_start_offset),
        num(p.lake_start_offset),
        num(p.lake_offset),
        "OFFLINE" if p.offline else "",
    ]


def _state(stream: StreamSummary | StreamDescription) -> str:
    """``active``, ``paused``, ``read-only``, ``idle-paused[0,2]`` (the partitions paused
    for idleness), or several of them joined by commas."""
    words = ["paused"] if stream.paused else []
    if stream.read_only:
        words.append("read-only")
    if stream.idle_paused_partitions:
        words.append(f"idle-paused[{_ids(stream.idle_paused_partitions)}]")
    return ",".join(words) or "active"


def compaction_line(body: StreamDescription) -> str:
    if not body.compaction:
        return "compaction: off"
    interval = body.compaction_interval_s
    every = f"every {interval:g}s" if interval else "on demand"
    return f"compaction: on ({every}), delete retention {body.delete_retention_ms} ms"


def lake_compaction_line(body: StreamDescription, partitions: Iterable[int] = ()) -> str | None:
    """Which offsets key compaction cleaned in the lake, of ``partitions`` (default: all), and
    that the log is not compacted; None when none of them was compacted. Said wherever the
    log's records and the lake's (what Spark reads) can differ."""
    chosen = set(partitions)
    cleaned = [
        (p.partition, p.lake_compacted_offset)
        for p in body.partitions
        if p.lake_compacted_offset is not None and (not chosen or p.partition in chosen)
    ]
    if not cleaned:
        return None
    first_p, first_offset = cleaned[0]
    ranges = [f"partition {first_p} compacted by key below offset {first_offset}"]
    ranges += [f"partition {p} below offset {offset}" for p, offset in cleaned[1:]]
    when = body.lake.compacted_at_ms if body.lake else None
    at = "" if when is None else f" (last run {_utc(when)})"
    return f"lake: {', '.join(ranges)}{at}; the log keeps every record until its retention"


def _utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="seconds")


def _leos(leos: Mapping[str, int]) -> str:
    return ",".join(f"{b}:{o}" for b, o in sorted(leos.items(), key=lambda kv: int(kv[0])))


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)
