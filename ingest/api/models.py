"""Request and response bodies of the REST API (snake_case JSON; unknown fields refused)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from spark_log.stream_spec import (
    DEFAULT_ACK_POLICY,
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_PARTITIONS,
    DEFAULT_REPLICATION_FACTOR,
    DEFAULT_TIMESTAMP_TYPE,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StreamCreate(_Strict):
    name: str = Field(description="Stream name: letters, digits, '.', '_' and '-'")
    subject: str = Field(description="NATS subject to record; wildcards allowed")
    partitions: int = Field(DEFAULT_PARTITIONS, ge=1)
    replication_factor: int = Field(DEFAULT_REPLICATION_FACTOR, ge=1)
    min_isr: int | None = Field(None, ge=1, description="Default: a majority of replication_factor")
    ack_policy: Literal["none", "leader", "all"] = DEFAULT_ACK_POLICY
    retention_ms: int | None = Field(None, gt=0)
    retention_bytes: int | None = Field(None, gt=0)
    retention_messages: int | None = Field(None, gt=0)
    max_record_bytes: int = Field(DEFAULT_MAX_RECORD_BYTES, gt=0)
    load_balance: bool = Field(False, description="All partitions share the subject (queue group)")
    compaction: bool = Field(
        False, description="Keep the latest record per key in the lake (cleanup.policy=compact)"
    )
    compaction_interval_s: float | None = Field(
        None, gt=0, description="How often `liftlog compact --watch` compacts (needs compaction)"
    )
    delete_retention_ms: int = Field(
        DEFAULT_DELETE_RETENTION_MS,
        ge=0,
        description="How long a tombstone (key, empty value) survives compaction",
    )
    encryption: bool = Field(
        False,
        description="Encrypt values at rest (needs a master key on every node; "
        "refused with encryption_unavailable otherwise)",
    )
    timestamp_type: Literal["log_append", "create"] = Field(
        DEFAULT_TIMESTAMP_TYPE,
        description="log_append: the leader's append time; create: the producer's "
        "Liftlog-Timestamp header (ms), within the nodes' ingest.max_timestamp_skew_ms",
    )
    auto_pause_ms: int | None = Field(
        None,
        gt=0,
        description="Pause a partition after this long without appends; the next publish "
        "or consumer fetch resumes it (null: never)",
    )
    auto_pause_disable_if_subscribers: bool = Field(
        False, description="A waiting or recent consumer fetch keeps a partition from pausing"
    )


class PublishRecord(_Strict):
    key: str | None = None
    value: str
    headers: dict[str, str] | None = None


class PublishBody(_Strict):
    records: list[PublishRecord] = Field(min_length=1)


class ControlledShutdown(_Strict):
    broker_id: int = Field(ge=0)


class PartitionTarget(_Strict):
    partition: int = Field(ge=0)
    replicas: list[int] = Field(
        min_length=1, description="The new assignment in order; the first is the preferred leader"
    )


class ReassignPlan(_Strict):
    """Kafka's reassignment JSON: the target replicas of some partitions of one stream."""

    partitions: list[PartitionTarget] = Field(min_length=1)


class Decommission(_Strict):
    broker_id: int = Field(ge=0)
    dry_run: bool = Field(False, description="Only show the plan")


class StreamAlter(_Strict):
    """``PATCH /v1/streams/{stream}``: only the fields sent change (``null`` clears an
    optional limit or restores a default). ``partitions`` may only grow. The immutable fields
    are accepted only with the stream's current value (a client may send back what describe
    showed); another value, or fewer partitions, is 409 ``immutable_field``."""

    min_isr: int | None = Field(None, ge=1, description="1..replication_factor; null: majority")
    ack_policy: Literal["none", "leader", "all"] | None = None
    retention_ms: int | None = Field(None, gt=0)
    retention_bytes: int | None = Field(None, gt=0)
    retention_messages: int | None = Field(None, gt=0)
    max_record_bytes: int | None = Field(None, gt=0)
    compaction: bool | None = None
    compaction_interval_s: float | None = Field(None, gt=0)
    delete_retention_ms: int | None = Field(None, ge=0)
    timestamp_type: Literal["log_append", "create"] | None = None
    auto_pause_ms: int | None = Field(None, gt=0, description="null: never auto-pause")
    auto_pause_disable_if_subscribers: bool | None = None
    name: str | None = Field(None, description="immutable")
    subject: str | None = Field(None, description="immutable")
    partitions: int | None = Field(
        None, ge=1, description="grow only: new partitions get leaders and start empty"
    )
    replication_factor: int | None = Field(None, description="immutable: use reassign")
    load_balance: bool | None = Field(None, description="immutable")
    encryption: bool | None = Field(None, description="immutable")


class CursorSet(_Strict):
    """``PUT .../cursors/{cursor_id}``: the offset of the last record processed (-1: none)."""

    offset: int = Field(ge=-1, le=2**63 - 1)


class GroupJoin(_Strict):
    """``POST /v1/groups/{group}/members``: join (member_id null) or rejoin a consumer group."""

    member_id: str | None = Field(None, min_length=1, max_length=256)
    instance_id: str | None = Field(
        None, min_length=1, max_length=256, description="static membership (KIP-345)"
    )
    streams: list[str] = Field(min_length=1, description="the streams the member subscribes to")
    session_timeout_ms: int | None = Field(
        None, gt=0, description="null: the nodes' groups.session_timeout_ms"
    )


class GroupHeartbeat(_Strict):
    """``POST /v1/groups/{group}/members/{member_id}/heartbeat``: what the member holds now."""

    member_epoch: int = Field(ge=0)
    owned: dict[str, list[int]] = Field(default_factory=dict)


class GroupOffsetEntry(_Strict):
    stream: str
    partition: int = Field(ge=0)
    offset: int = Field(ge=-1, le=2**63 - 1, description="the last offset processed")


class GroupCommit(_Strict):
    """``POST /v1/groups/{group}/offsets``: a member commits what it processed."""

    member_id: str = Field(min_length=1)
    member_epoch: int = Field(ge=0)
    offsets: list[GroupOffsetEntry] = Field(min_length=1)


class GroupOffsetsReset(_Strict):
    """``POST /v1/groups/{group}/offsets/reset``: move an empty group's offsets of a stream."""

    stream: str
    to: Literal["earliest", "latest", "offset", "timestamp", "shift"]
    value: int | None = Field(
        None, description="offset: the next offset to read; timestamp: ms; shift: +/- records"
    )
    partitions: list[int] | None = Field(None, description="null: every partition")
    execute: bool = Field(False, description="false: only the plan")


class ActivitySwitch(_Strict):
    """``PUT /v1/cluster/activity``: record admin operations in ``__activity``, or stop."""

    enabled: bool
