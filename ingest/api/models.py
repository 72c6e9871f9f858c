"""Request and response bodies of the REST API (snake_case JSON; unknown fields refused)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ingest.api.stream_fields import alter_fields, create_fields


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


_ALTER_DOC = """``PATCH /v1/streams/{stream}``: only the fields sent change (``null`` clears an
optional limit or restores a default). ``partitions`` may only grow. The immutable fields
are accepted only with the stream's current value (a client may send back what describe
showed); another value, or fewer partitions, is 409 ``immutable_field``."""

if TYPE_CHECKING:
    # to mypy a strict model without fields of its own: the routes only validate and dump it
    StreamCreate = _Strict
    StreamAlter = _Strict
else:
    # the stream spec's fields, as a create and an alter take them (ingest.api.stream_fields)
    StreamCreate = create_model("StreamCreate", __base__=_Strict, **create_fields())
    StreamAlter = create_model(
        "StreamAlter", __base__=_Strict, __doc__=_ALTER_DOC, **alter_fields()
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
    client_id: str | None = Field(
        None, min_length=1, max_length=256, description="the client's name (Kafka's client.id)"
    )
    client_host: str | None = Field(
        None,
        max_length=256,
        description="the member's address as the node taking the join saw it (Kafka's "
        "client.host); that node sets it, replacing what a client sends",
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
