"""The versioned znode layout and the JSON each znode holds (see docs/znodes.md).

Paths here are relative to the configured root (``NodeConfig.zk_root``); ``ZkSession`` puts
the root in front, so several clusters (or tests) can share one ZooKeeper ensemble. Every JSON
value carries ``"version": 1``: a reader refuses versions it does not know instead of
misreading them, so a future layout change is a visible error during a rolling upgrade.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.errors import ZNodeFormatError
from spark_log.errors import LiftlogError
from spark_log.json_types import JsonMapping, JsonObject
from spark_log.stream_spec import StreamSpec
from spark_log.typed_config import DataclassInstance, DataclassT, from_mapping

SCHEMA_VERSION = 1
NO_LEADER = -1
INITIAL_LEADER_EPOCH = 0
INITIAL_CONTROLLER_EPOCH = 0

V1 = "/v1"
BROKER_IDS_PATH = f"{V1}/brokers/ids"
# Brokers in the middle of a clean shutdown (ephemeral notices): never elected leader.
SHUTTING_DOWN_PATH = f"{V1}/brokers/shutting_down"
STREAMS_PATH = f"{V1}/streams"
# The elected controller (ephemeral) and the controller generation (persistent, fencing).
CONTROLLER_PATH = f"{V1}/controller"
CONTROLLER_EPOCH_PATH = f"{V1}/controller_epoch"
# Which lake the cluster exports to (persistent): every node's lake must carry this id.
LAKE_PATH = f"{V1}/lake"
# Pending partition reassignments (persistent): one znode per partition, ``<stream>~<p>``
# ('~' never occurs in a stream name), deleted by the controller when the move completes.
REASSIGNMENTS_PATH = f"{V1}/reassignments"
REASSIGNMENT_SEPARATOR = "~"
# Bearer tokens (persistent, one znode per token: principal and SHA-256 of the secret) and
# ACL entries (persistent, one znode per entry); every node caches both through watches.
AUTH_TOKENS_PATH = f"{V1}/auth/tokens"
ACLS_PATH = f"{V1}/acls"
ACTIVITY_PATH = f"{V1}/activity"
"""``{"version": 1, "enabled": bool}``: whether admin operations are recorded (opt-in)."""
ACTIVITY_QUEUE_PATH = f"{V1}/activity_queue"
"""Sequential children ``e-<10 digits>``, one per operation, until ``__activity`` holds them."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def shutdown_notice_path(broker_id: int) -> str:
    return f"{SHUTTING_DOWN_PATH}/{broker_id}"


def reassignment_path(name: str, partition: int) -> str:
    return f"{REASSIGNMENTS_PATH}/{name}{REASSIGNMENT_SEPARATOR}{partition}"


def stream_path(name: str) -> str:
    return f"{STREAMS_PATH}/{name}"


def partitions_path(name: str) -> str:
    return f"{stream_path(name)}/partitions"


def partition_path(name: str, partition: int) -> str:
    return f"{partitions_path(name)}/{partition}"


def partition_state_path(name: str, partition: int) -> str:
    return f"{partition_path(name, partition)}/state"


def partition_key_path(name: str, partition: int) -> str:
    """An encrypted stream's wrapped data key for the partition (coordinator.partition_keys)."""
    return f"{partition_path(name, partition)}/key"


@dataclass(frozen=True)
class BrokerInfo:
    """A live broker's registration (ephemeral: it lives exactly as long as the session)."""

    broker_id: int
    host: str
    api_url: str
    nats_url: str
    started_at_ms: int
    liftbridge_address: str = ""
    """``host:port`` of the broker's Liftbridge gRPC API; empty when it serves none (or
    registered before it could)."""

    def to_json(self) -> JsonObject:
        return _versioned(self)

    @classmethod
    def from_json(cls, data: JsonMapping) -> BrokerInfo:
        return _from_versioned(cls, data, "broker registration")


@dataclass(frozen=True)
class LakeRecord:
    """The cluster's lake: the id its identity file holds, where the first exporter saw it,
    and which broker claimed it. Claimed in two steps: created with ``file_written`` false,
    set true once the claimant wrote (or found) the file. Only while it is false may the
    claimant write a missing file; after that a missing file means other storage."""

    lake_id: str
    uri: str
    claimed_by: int
    claimed_at_ms: int
    file_written: bool = False

    def to_json(self) -> JsonObject:
        return _versioned(self)

    @classmethod
    def from_json(cls, data: JsonMapping) -> LakeRecord:
        return _from_versioned(cls, data, "lake record")


@dataclass(frozen=True)
class ShutdownNotice:
    """A broker announcing its clean shutdown (ephemeral, on the broker's own session).

    ``broker_epoch`` is the czxid of the registration it was written under, so a notice left
    by a previous incarnation (its session not yet expired) never marks the new one.
    """

    broker_id: int
    broker_epoch: int

    def to_json(self) -> JsonObject:
        return _versioned(self)

    @classmethod
    def from_json(cls, data: JsonMapping) -> ShutdownNotice:
        return _from_versioned(cls, data, "shutdown notice")


@dataclass(frozen=True)
class PartitionReassignment:
    """A pending move of one partition's replicas (Kafka's ``/admin/reassign_partitions``,
    one znode per partition so reassignments start and finish independently).

    ``target_replicas`` is the assignment wanted, in order (its first is the new preferred
    leader); ``original_replicas`` is the assignment when it was submitted (for the record and
    for a cancel). ``cancelling``: a cancel was requested, the controller reverts the partition
    to ``original_replicas`` instead. The controller resumes it from this znode after a failover.
    """

    stream: str
    partition: int
    target_replicas: tuple[int, ...]
    original_replicas: tuple[int, ...]
    submitted_at_ms: int
    cancelling: bool = False

    def __post_init__(self) -> None:
        for what, brokers in (
            ("target", self.target_replicas),
            ("original", self.original_replicas),
        ):
            if not brokers or len(set(brokers)) != len(brokers) or min(brokers) < 0:
                raise ZNodeFormatError(
                    f"{what} replicas {list(brokers)} must be distinct broker ids, non-empty"
                )

    def to_json(self) -> JsonObject:
        """``cancelling`` is written only once true, so a znode that is not being cancelled
        reads the same as before the field existed (nodes without it still parse it)."""
        data = _versioned(self)
        if not self.cancelling:
            del data["cancelling"]
        return data

    @classmethod
    def from_json(cls, data: JsonMapping) -> PartitionReassignment:
        return _from_versioned(cls, data, "partition reassignment")


@dataclass(frozen=True)
class StreamRecord:
    """A stream as stored: the user's spec plus the state an operator changes (paused,
    read-only). ``read_only`` is state, not spec, so that an idempotent create of the same
    spec still matches a stream that was set read-only. ``idle_paused_partitions`` are the
    partitions their leaders paused for idleness (``auto_pause_ms``), kept apart from the
    operator's ``paused``: the next publish or consumer fetch resumes them."""

    spec: StreamSpec
    paused: bool
    created_at_ms: int
    read_only: bool = False
    idle_paused_partitions: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    def to_json(self) -> JsonObject:
        """``read_only`` is written only once true, so a writable stream's znode reads the
        same as before the field existed (a node without it still parses it)."""
        data = {
            "version": SCHEMA_VERSION,
            "spec": self.spec.to_json(),
            "paused": self.paused,
            "created_at_ms": self.created_at_ms,
        }
        if self.read_only:
            data["read_only"] = True
        if self.idle_paused_partitions:  # likewise: written only while a partition is idle
            data["idle_paused_partitions"] = sorted(self.idle_paused_partitions)
        return data

    @classmethod
    def from_json(cls, data: JsonMapping) -> StreamRecord:
        return _from_versioned(cls, data, "stream")


@dataclass(frozen=True)
class PartitionState:
    """Leader, leader epoch and ISR of one partition (Kafka's LeaderAndIsr).

    ``replicas`` is the assignment, ordered: the first replica is the preferred leader.
    ``controller_epoch`` records which controller generation wrote this state.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    controller_epoch: int

    def __post_init__(self) -> None:
        if not self.replicas or len(set(self.replicas)) != len(self.replicas):
            raise ZNodeFormatError(f"replicas {list(self.replicas)} must be distinct, non-empty")
        if not set(self.isr) <= set(self.replicas):
            raise ZNodeFormatError(f"isr {list(self.isr)} not within {list(self.replicas)}")
        if self.leader != NO_LEADER and self.leader not in self.replicas:
            raise ZNodeFormatError(f"leader {self.leader} is not a replica")
        if self.leader_epoch < 0 or self.controller_epoch < 0:
            raise ZNodeFormatError("leader_epoch and controller_epoch must be >= 0")

    @property
    def offline(self) -> bool:
        """No leader can serve the partition (no leader, or nobody left in sync)."""
        return self.leader == NO_LEADER or not self.isr

    @classmethod
    def initial(cls, replicas: list[int]) -> PartitionState:
        """A new partition: the preferred replica leads, every replica is in sync."""
        return cls(
            leader=replicas[0],
            leader_epoch=INITIAL_LEADER_EPOCH,
            isr=tuple(replicas),
            replicas=tuple(replicas),
            controller_epoch=INITIAL_CONTROLLER_EPOCH,
        )

    def to_json(self) -> JsonObject:
        return _versioned(self)

    @classmethod
    def from_json(cls, data: JsonMapping) -> PartitionState:
        return _from_versioned(cls, data, "partition state")


@dataclass(frozen=True)
class ControllerInfo:
    """Who controls the cluster, and in which generation (the ephemeral ``/v1/controller``).

    Ephemeral so that the controller's death (session expiry) frees the seat by itself.
    """

    broker_id: int
    controller_epoch: int

    def to_json(self) -> JsonObject:
        return _versioned(self)

    @classmethod
    def from_json(cls, data: JsonMapping) -> ControllerInfo:
        return _from_versioned(cls, data, "controller")


@dataclass(frozen=True)
class ControllerEpoch:
    """The latest controller generation (the persistent ``/v1/controller_epoch``).

    Persistent, unlike the controller znode, so that generations only ever increase; its znode
    version is what every controller write checks (the fence).
    """

    controller_epoch: int

    def to_json(self) -> JsonObject:
        return _versioned(self)

    @classmethod
    def from_json(cls, data: JsonMapping) -> ControllerEpoch:
        return _from_versioned(cls, data, "controller epoch")


def _versioned(obj: DataclassInstance) -> JsonObject:
    data = dataclasses.asdict(obj)
    for key, value in data.items():
        if isinstance(value, tuple):
            data[key] = list(value)
    return {"version": SCHEMA_VERSION, **data}


def _from_versioned(cls: type[DataclassT], data: JsonMapping, what: str) -> DataclassT:
    """Check the schema version, then every field (unknown keys and wrong types refused)."""
    if not isinstance(data, Mapping):
        raise ZNodeFormatError(f"{what}: expected a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if version != SCHEMA_VERSION:
        raise ZNodeFormatError(
            f"{what}: unsupported schema version {version!r} "
            f"(this Liftlog reads version {SCHEMA_VERSION})"
        )
    fields = {k: v for k, v in data.items() if k != "version"}
    try:
        return from_mapping(cls, fields, what)
    except ZNodeFormatError:
        raise
    except LiftlogError as exc:  # ConfigError, InvalidRequestError from the field checks
        raise ZNodeFormatError(f"{what}: {exc.message}") from exc
