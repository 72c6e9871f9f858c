"""The JSON documents of the REST API and of NATS acks, as typed models.

One definition serves three readers: the node's FastAPI app (``response_model``, so
``/openapi.json`` describes every response), ``spark_log.Client`` (which returns these) and
the Spark source (which plans from ``StreamDescription`` and ``ClusterInfo``). Field names are
the JSON keys, snake_case, unchanged from the dicts they replace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_log.json_model import JsonModel
from spark_log.stream_spec import (
    PartitionCount,
    StreamSettings,
    StreamSpec,
    StreamSubject,
)

# ----------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class ErrorDetail(JsonModel):
    code: str
    """Stable machine-readable word (``stream_not_found``, ``stream_paused``, ...)."""
    message: str


@dataclass(frozen=True)
class ErrorBody(JsonModel):
    """Every refusal, on every REST route and in NATS error acks."""

    error: ErrorDetail


# ----------------------------------------------------------------------------- streams
# A stream answer inherits the spec's fields from the bases that declare them (stream_spec),
# so a new spec field appears in it without an edit here. A dataclass orders inherited
# fields from its last base to its first.


@dataclass(frozen=True)
class StreamSummary(StreamSettings, PartitionCount, JsonModel):
    """One stream in ``GET /v1/streams``: its spec, flattened, plus its state."""

    paused: bool = False
    read_only: bool = False
    """Publishes are refused with ``stream_readonly``; reads go on."""
    idle_paused_partitions: tuple[int, ...] = ()
    """Partitions paused for idleness (``auto_pause_ms``): the next publish or consumer
    fetch resumes them. Apart from ``paused``, which only an operator's resume lifts."""
    created_at_ms: int = 0


@dataclass(frozen=True)
class StreamList(JsonModel):
    streams: tuple[StreamSummary, ...] = ()


@dataclass(frozen=True)
class StorageErrorView(JsonModel):
    """A replica refusing writes because its disk is full; it retries with backoff and takes
    writes again by itself once the disk has space."""

    message: str
    """The last out-of-space error."""
    since_ms: int
    """When the first write failed (ms since the epoch)."""
    retries: int
    """Retries that found the disk still full."""


@dataclass(frozen=True)
class PartitionState(JsonModel):
    """One partition in a describe. Offsets follow Kafka (``high_watermark`` and
    ``log_end_offset`` are the first offset not yet committed / written) and are null while
    the partition has no live leader to report them."""

    partition: int
    leader: int
    """Broker id of the leader (-1 while offline)."""
    leader_epoch: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    high_watermark: int | None = None
    log_end_offset: int | None = None
    log_start_offset: int | None = None
    lake_start_offset: int | None = None
    """First offset the lake holds (null when unknown or the lake is empty or disabled)."""
    lake_offset: int | None = None
    """First offset not yet in the lake (null when the lake is disabled)."""
    lake_compacted_offset: int | None = None
    """Key compaction's cleaned offset: below it the lake keeps only the latest record of each
    key (null: never compacted). The log itself keeps every record until its retention."""
    offline: bool = False
    storage_error: StorageErrorView | None = None
    """Set while the leader refuses writes because its disk is full (``offline`` then too)."""
    lake_error: ErrorDetail | None = None
    """Why the leader's lake export is stalled (null while it exports): a typed stream's schema
    change the table cannot follow, an unreachable store. Its records wait in the log."""
    replica_log_end_offsets: dict[str, int] = field(default_factory=dict)
    """Each replica's LEO as the leader last saw it, by broker id."""


@dataclass(frozen=True)
class LakeRef(JsonModel):
    uri: str
    """The stream's Delta table."""
    export_refused: str | None = None
    """Why the answering node refuses to export to this lake (``unsafe_lake_store: ...``), null
    when it does not. Never the lake's credentials: describe names only the URI."""
    compacted_at_ms: int | None = None
    """When the last ``liftlog compact`` run committed to the table (its run id, ms since the
    epoch); null when it was never compacted or the table could not be read in time."""


@dataclass(frozen=True)
class _DescribedPartitions(StreamSubject):
    """What a describe puts after the stream's subject, before the spec's settings: the spec
    itself, and the partitions where the spec has their count."""

    spec: StreamSpec
    partitions: tuple[PartitionState, ...] = ()


@dataclass(frozen=True)
class StreamDescription(StreamSettings, _DescribedPartitions, JsonModel):
    """``GET /v1/streams/{stream}`` (also the answer of create, alter, pause, resume,
    readonly and readwrite): the spec
    fields flattened, ``spec`` itself, and ``partitions`` as the per-partition list."""

    paused: bool = False
    read_only: bool = False
    """Publishes are refused with ``stream_readonly``; reads go on."""
    idle_paused_partitions: tuple[int, ...] = ()
    """Partitions paused for idleness (``auto_pause_ms``): the next publish or consumer
    fetch resumes them. Apart from ``paused``, which only an operator's resume lifts."""
    created_at_ms: int = 0
    lake: LakeRef | None = None

    def partition(self, p: int) -> PartitionState:
        """The partition numbered ``p`` (KeyError if the stream has none)."""
        for state in self.partitions:
            if state.partition == p:
                return state
        raise KeyError(p)


@dataclass(frozen=True)
class StreamDeleted(JsonModel):
    deleted: str


@dataclass(frozen=True)
class RecoveryLossView(JsonModel):
    first_lost_offset: int
    durable_end_offset: int


@dataclass(frozen=True)
class LeaderReportView(JsonModel):
    """The last HW a leader reported to this follower (uncapped by the follower's LEO)."""

    leader: int
    leader_epoch: int
    high_watermark: int
    age_ms: int
    """How long ago the report arrived."""


@dataclass(frozen=True)
class EpochEntryView(JsonModel):
    """Leader epoch ``epoch`` wrote this replica's records from ``start_offset`` on (to the
    next entry's start, or the log end offset)."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class ReplicaView(JsonModel):
    """``GET /v1/streams/{stream}/partitions/{p}``: one broker's own view of its replica."""

    partition: int
    broker: int
    role: str
    leader_epoch: int
    high_watermark: int | None = None
    log_end_offset: int | None = None
    log_start_offset: int | None = None
    offline: bool = False
    storage_error: StorageErrorView | None = None
    """Set while this replica refuses writes because its disk is full (``offline`` then too)."""
    fenced: bool = False
    lake_start_offset: int | None = None
    lake_offset: int | None = None
    lake_error: ErrorDetail | None = None
    """Why this leader's lake export is stalled (null while it exports or on a follower)."""
    recovery_loss: RecoveryLossView | None = None
    replica_log_end_offsets: dict[str, int] | None = None
    last_leader_report: LeaderReportView | None = None
    epoch_entries: tuple[EpochEntryView, ...] | None = None
    """Which leader epoch wrote which offsets (null when the log is not open): with them an
    unclean election's dry run finds where two replicas' logs diverge (KIP-279)."""


@dataclass(frozen=True)
class PartitionFlush(JsonModel):
    partition: int
    high_watermark: int
    log_start_offset: int
    lake_offset: int | None = None
    """Everything below it is in the lake (null when the lake is disabled)."""


@dataclass(frozen=True)
class FlushResult(JsonModel):
    """``POST /v1/streams/{stream}/flush``: each partition sealed, fsynced and exported."""

    stream: str
    flushed_partitions: tuple[int, ...] = ()
    partitions: tuple[PartitionFlush, ...] = ()
    lake: LakeRef | None = None


@dataclass(frozen=True)
class UncleanElection(JsonModel):
    """The dry run (``elected`` false) or the result of an unclean election."""

    stream: str
    partition: int
    candidate: int
    candidate_log_end_offset: int
    highest_known_high_watermark: int
    offsets_known_lost: int
    """A lower bound unless ``loss_bound`` is ``exact``: the largest known end of some
    replica's log minus the offset where the candidate's log stops matching that log (its
    divergence point by leader epoch, or the candidate's log end offset)."""
    loss_bound: str
    """``exact`` when every replica that can hold records beyond the candidate answered, none
    reports a recovery loss, each reported its leader epochs, none diverges from the
    candidate's log, and no figure exceeds the highest holder's log end offset; ``at_least``
    otherwise."""
    loss_known: bool
    loss_explanation: str
    """In plain words: where the figure comes from and why it is exact or only a bound."""
    last_isr: tuple[int, ...]
    unreachable_isr: tuple[int, ...]
    """Members of the last ISR (or the leader) that did not answer: what they held is unknown."""
    warning: str
    elected: bool = False
    leader: int | None = None
    leader_epoch: int | None = None


@dataclass(frozen=True)
class PreferredLeader(JsonModel):
    """One partition after a preferred-leader election."""

    partition: int
    preferred: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    elected: bool
    """True when this election moved the leadership to the preferred replica."""
    reason: str | None = None
    """Why the preferred replica does not lead (not live, not in the ISR yet, ...)."""


@dataclass(frozen=True)
class PreferredElection(JsonModel):
    """The answer of ``POST /v1/streams/{stream}/elect-preferred``."""

    stream: str
    partitions: tuple[PreferredLeader, ...] = ()


@dataclass(frozen=True)
class ReassignmentProgress(JsonModel):
    """One partition's pending reassignment and where it stands."""

    partition: int
    target_replicas: tuple[int, ...]
    original_replicas: tuple[int, ...]
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    phase: str
    """adding_replicas, catching_up, moving_leader, removing_replicas, cancelling or done"""


@dataclass(frozen=True)
class ReassignmentStatus(JsonModel):
    """The pending reassignments of a stream (``GET``/``POST``/``DELETE
    /v1/streams/{s}/reassign``)."""

    stream: str
    partitions: tuple[ReassignmentProgress, ...] = ()


@dataclass(frozen=True)
class PartitionMove(JsonModel):
    """One partition of a generated plan: its replicas now and the target."""

    stream: str
    partition: int
    replicas: tuple[int, ...]
    target_replicas: tuple[int, ...]


@dataclass(frozen=True)
class DecommissionPlan(JsonModel):
    """``POST /v1/cluster/decommission``: the moves that empty a broker (submitted unless a
    dry run)."""

    broker_id: int
    submitted: bool
    moves: tuple[PartitionMove, ...] = ()


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class RecordJson(JsonModel):
    """One record of a JSON fetch; key and value base64 unless ``encoding=utf-8``."""

    offset: int
    timestamp: int
    """Leader append time, ms since the epoch (UTC)."""
    key: str | None = None
    value: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    subject: str = ""


@dataclass(frozen=True)
class FetchResponse(JsonModel):
    """``GET .../records`` as JSON (Arrow IPC carries the same columns)."""

    records: tuple[RecordJson, ...] = ()
    high_watermark: int = 0
    log_start_offset: int = 0
    next_offset: int = 0
    """Where the next fetch starts."""
    end_reached: bool = False
    """The fetch's ``stop_offset`` or ``stop_timestamp`` is reached: the subscription is over."""


@dataclass(frozen=True)
class DeadLetter(JsonModel):
    """Where a record that did not match its stream's schema was stored instead (the
    binding's dead letter stream, ``on_invalid = "dead_letter"``), and why. ``index``: the
    record's place in a REST publish (None in a NATS ack)."""

    stream: str
    partition: int
    offset: int
    reason: str
    index: int | None = None


@dataclass(frozen=True)
class PublishResult(JsonModel):
    """``POST .../records``: the offsets the records got, in order (-1 for a record stored in
    the dead letter stream instead, which ``dead_letters`` describes)."""

    stream: str
    partition: int
    offsets: tuple[int, ...] = ()
    duplicate: bool = False
    """True when the records were already in the log (a repeated ``Nats-Msg-Id``)."""
    dead_letters: tuple[DeadLetter, ...] = ()


@dataclass(frozen=True, slots=True)
class Ack(JsonModel):
    """A NATS publish ack: the record's offset (a batch's first offset and its ``count``)."""

    stream: str
    partition: int
    offset: int
    count: int = 1
    duplicate: bool = False
    """True when the leader had the message already (same ``Nats-Msg-Id`` within the
    deduplication window): ``offset`` is where it was first written."""
    dead_letter: DeadLetter | None = None
    """Set when the record did not match the stream's schema and was stored in the dead
    letter stream instead (``offset`` is -1 then)."""


# ----------------------------------------------------------------------------- cluster


@dataclass(frozen=True)
class BrokerInfo(JsonModel):
    broker_id: int
    host: str
    api_url: str
    """This broker's REST base URL."""
    nats_url: str
    liftbridge_address: str = ""
    """``host:port`` of this broker's Liftbridge gRPC API ("" when it serves none)."""


@dataclass(frozen=True)
class ClusterInfo(JsonModel):
    """``GET /v1/cluster``: the live brokers and who is controller."""

    brokers: tuple[BrokerInfo, ...] = ()
    controller: int | None = None
    this_broker: int | None = None
    auth: str = "enabled"
    """``enabled``, or ``disabled`` when the node was configured to check no credentials."""

    def api_urls(self) -> dict[int, str]:
        """REST base URL by broker id."""
        return {b.broker_id: b.api_url for b in self.brokers}


@dataclass(frozen=True)
class ControlledShutdownResult(JsonModel):
    broker_id: int
    remaining_leaderships: int


@dataclass(frozen=True)
class HealthStatus(JsonModel):
    status: str


@dataclass(frozen=True)
class EncryptionRotation(JsonModel):
    """``POST /v1/encryption/rotate``: every data key is now wrapped by master key ``key_id``
    (``rewrapped`` were moved to it, ``unchanged`` were under it already); no data rewritten."""

    key_id: str
    rewrapped: int
    unchanged: int


@dataclass(frozen=True)
class PartitionDataKey(JsonModel):
    """``GET /v1/streams/{stream}/partitions/{p}/data-key``: an encrypted partition's data key
    (base64), unwrapped by the node for a consumer allowed to read the stream, so readers of
    the lake's encrypted values (the Spark source) never hold the master key."""

    stream: str
    partition: int
    data_key: str = field(repr=False)


@dataclass(frozen=True)
class CursorView(JsonModel):
    """``GET|PUT /v1/streams/{stream}/partitions/{partition}/cursors/{cursor_id}``: the offset
    of the last record the cursor's consumer processed (it resumes at ``offset + 1``; -1:
    nothing processed yet)."""

    stream: str
    partition: int
    cursor_id: str
    offset: int
    set_at_ms: int = 0
    """When the leader of its ``__cursors`` partition stored it (ms since the epoch)."""


@dataclass(frozen=True)
class CursorDeleted(JsonModel):
    stream: str
    partition: int
    cursor_id: str
    deleted: bool = True


# ----------------------------------------------------------------------------- groups


@dataclass(frozen=True)
class MemberAssignment(JsonModel):
    """A join or heartbeat answer: consume exactly ``assigned``; stop ``revoking``, commit
    it, and leave it out of the next heartbeat's ``owned``."""

    group: str
    member_id: str
    member_epoch: int
    group_epoch: int
    assigned: dict[str, list[int]] = field(default_factory=dict)
    revoking: dict[str, list[int]] = field(default_factory=dict)
    heartbeat_interval_ms: int = 5_000
    session_timeout_ms: int = 45_000


@dataclass(frozen=True)
class MemberLeft(JsonModel):
    group: str
    member_id: str
    left: bool = True


@dataclass(frozen=True)
class GroupOffset(JsonModel):
    """A committed offset: the last offset processed (``None``: never committed)."""

    stream: str
    partition: int
    offset: int | None = None


@dataclass(frozen=True)
class GroupCommitted(JsonModel):
    group: str
    committed: tuple[GroupOffset, ...] = ()


@dataclass(frozen=True)
class GroupOffsets(JsonModel):
    """``GET /v1/groups/{group}/offsets``: every partition of the group's streams."""

    group: str
    offsets: tuple[GroupOffset, ...] = ()


@dataclass(frozen=True)
class GroupSummary(JsonModel):
    group: str
    members: int
    group_epoch: int
    state: str
    """``stable`` (every member holds its target), ``reconciling`` or ``empty``."""


@dataclass(frozen=True)
class GroupList(JsonModel):
    groups: tuple[GroupSummary, ...] = ()


@dataclass(frozen=True)
class GroupMember(JsonModel):
    member_id: str
    instance_id: str | None
    member_epoch: int
    streams: tuple[str, ...] = ()
    assigned: dict[str, list[int]] = field(default_factory=dict)
    revoking: dict[str, list[int]] = field(default_factory=dict)
    client_id: str | None = None
    """The name the member's client gave itself (Kafka's ``client.id``)."""
    client_host: str | None = None
    """The address the member joined from, as the node that took the join saw it (Kafka's
    ``client.host``)."""


@dataclass(frozen=True)
class GroupPartition(JsonModel):
    """``lag`` = ``high_watermark - (committed + 1)``, or the records from the first readable
    offset when nothing is committed; null while the partition has no leader to report its
    offsets."""

    stream: str
    partition: int
    member_id: str | None = None
    committed: int | None = None
    high_watermark: int | None = None
    lag: int | None = None


@dataclass(frozen=True)
class GroupDescription(JsonModel):
    group: str
    group_epoch: int
    state: str
    coordinator: int
    """Broker id of the group's coordinator (the leader of its ``__cursors`` partition)."""
    members: tuple[GroupMember, ...] = ()
    partitions: tuple[GroupPartition, ...] = ()


@dataclass(frozen=True)
class OffsetResetEntry(JsonModel):
    """``new`` is the committed offset a reset writes: members resume at ``new + 1``."""

    stream: str
    partition: int
    current: int | None
    new: int


@dataclass(frozen=True)
class GroupOffsetsReset(JsonModel):
    group: str
    execute: bool
    offsets: tuple[OffsetResetEntry, ...] = ()


@dataclass(frozen=True)
class GroupDeleted(JsonModel):
    group: str
    deleted: bool = True


@dataclass(frozen=True)
class ActivityStatus(JsonModel):
    """``GET|PUT /v1/cluster/activity``: whether admin operations are recorded in the
    ``__activity`` stream, and how many wait in ZooKeeper to be appended to it."""

    enabled: bool
    stream: str
    pending: int = 0
