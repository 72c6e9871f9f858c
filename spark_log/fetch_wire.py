"""The replication wire: follower fetches and leader-epoch queries over NATS request/reply.

Followers pull from the leader (Liftbridge's transport, Kafka's protocol): a fetch carries the
follower's log end offset, which is also its acknowledgement; the response carries the
leader's bytes unchanged plus the HW and leader epoch. Metadata travels in a NATS header so the
payload is exactly the batch bytes a follower appends.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from spark_log.errors import InvalidRequestError

HEADER_FETCH_META = "Liftlog-Fetch"
SUBJECT_PREFIX = "_LIFTLOG"
NO_EPOCH = -1

# Error codes a fetch or epoch query answers with (Kafka's names where they exist).
FENCED_LEADER_EPOCH = "fenced_leader_epoch"  # the follower's epoch is older than the leader's
UNKNOWN_LEADER_EPOCH = "unknown_leader_epoch"  # the follower knows a newer epoch: leader is stale
NOT_LEADER = "not_leader"
OFFSET_OUT_OF_RANGE = "offset_out_of_range"
UNKNOWN_REPLICA = "unknown_replica"


def cluster_token(zk_root: str) -> str:
    """A subject-safe token naming the cluster, so clusters sharing one NATS never mix."""
    return hashlib.sha1(zk_root.encode()).hexdigest()[:12]


def node_inbox_prefix(cluster: str) -> str:
    """The inbox prefix a node's NATS connection uses for its requests (``inbox_prefix``).

    Fetch and epoch responses carry raw batches of every stream. On nats-py's default
    ``_INBOX.`` prefix any user allowed to subscribe to ``_INBOX.>`` (every publisher, to get
    its acks) could read them; under ``_LIFTLOG.`` only node users may subscribe.
    """
    return f"{SUBJECT_PREFIX}.{cluster}.inbox"


def is_internal_reply(reply: str) -> bool:
    """Whether a reply subject lies in Liftlog's namespace (``_LIFTLOG.``) or nats-server's
    (``$...``): no publisher may ask a node to publish there, since the node would then
    write on the replication wire (or a server API) in its own name."""
    return reply.startswith("$") or reply.split(".", 1)[0] == SUBJECT_PREFIX


def fetch_subject(cluster: str, stream: str, partition: int, leader: int) -> str:
    """Served only by ``leader``: a deposed leader of the same partition listens elsewhere."""
    return f"{SUBJECT_PREFIX}.{cluster}.fetch.{stream}.{partition}.{leader}"


def epoch_subject(cluster: str, stream: str, partition: int, leader: int) -> str:
    return f"{SUBJECT_PREFIX}.{cluster}.epoch.{stream}.{partition}.{leader}"


@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    leader_epoch: int
    fetch_offset: int
    max_bytes: int
    wait_ms: int

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> FetchRequest:
        return cls(
            **_ints(data, ("replica_id", "leader_epoch", "fetch_offset", "max_bytes", "wait_ms"))
        )


@dataclass(frozen=True, slots=True)
class FetchMeta:
    """Everything of a fetch response but the bytes."""

    leader_epoch: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    error: str | None = None
    message: str | None = None

    def encode(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def decode(cls, text: str) -> FetchMeta:
        try:
            data = json.loads(text)
            return cls(**data)
        except (ValueError, TypeError) as exc:
            raise InvalidRequestError(f"malformed fetch response metadata: {text[:200]!r}") from exc


@dataclass(frozen=True, slots=True)
class EpochRequest:
    replica_id: int
    leader_epoch: int  # the querying follower's current leader epoch (fencing)
    epoch: int  # the epoch whose end offset is wanted (the follower's latest)

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> EpochRequest:
        return cls(**_ints(data, ("replica_id", "leader_epoch", "epoch")))


@dataclass(frozen=True, slots=True)
class EpochResponse:
    """KIP-279: the largest epoch <= the requested one and its end offset (-1, -1 if none)."""

    epoch: int
    end_offset: int
    error: str | None = None
    message: str | None = None

    def encode(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> EpochResponse:
        try:
            return cls(**json.loads(data))
        except (ValueError, TypeError) as exc:
            raise InvalidRequestError(f"malformed epoch response: {data[:200]!r}") from exc


def _ints(data: bytes, names: tuple[str, ...]) -> dict[str, int]:
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise InvalidRequestError(f"malformed replication request: {data[:200]!r}") from exc
    if not isinstance(raw, dict) or set(raw) != set(names):
        raise InvalidRequestError(f"replication request must have exactly {', '.join(names)}")
    if not all(isinstance(raw[n], int) and not isinstance(raw[n], bool) for n in names):
        raise InvalidRequestError("replication request fields must be integers")
    return raw
