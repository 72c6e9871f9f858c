"""Typed errors of the Liftlog core.

Every error carries a stable machine-readable ``code`` (snake_case). The REST layer maps codes
to HTTP statuses in one place (``ingest.api.errors``) and NATS acks carry the same code, so a
client sees the same word for the same failure whichever path it used.
"""

from __future__ import annotations


class LiftlogError(Exception):
    """Base of every error raised by Liftlog code."""

    code: str = "internal_error"
    status: int | None = None
    """The HTTP status of the response that carried this error (None: not from a REST call)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_json(self) -> dict[str, dict[str, str]]:
        """The wire shape shared by REST errors and NATS error acks."""
        return {"error": {"code": self.code, "message": self.message}}


class ConfigError(LiftlogError):
    """A configuration file or value is invalid (unknown key, wrong type, out of range)."""

    code = "invalid_config"


class InvalidRequestError(LiftlogError):
    """A request is malformed or has an invalid argument."""

    code = "invalid_request"


class StreamNotFoundError(LiftlogError):
    code = "stream_not_found"


class PartitionNotFoundError(LiftlogError):
    code = "partition_not_found"


class NoReassignmentError(LiftlogError):
    """A cancel named a stream or partition with no pending reassignment (none was submitted,
    or it completed already): there is nothing to revert."""

    code = "no_reassignment"


class StreamExistsError(LiftlogError):
    """A stream with the same name but a different spec already exists."""

    code = "stream_exists"


class RecordTooLargeError(LiftlogError):
    code = "record_too_large"


class ExpectedOffsetMismatchError(LiftlogError):
    """``Liftlog-Expected-Offset`` did not match the offset the record would get."""

    code = "expected_offset_mismatch"


class NotLeaderError(LiftlogError):
    """This node does not lead the partition (or stopped leading it)."""

    code = "not_leader"


class NotEnoughReplicasError(LiftlogError):
    """An ``acks=all`` publish refused before the append: the in-sync replica set was smaller
    than the stream's min ISR, so nothing was stored and publishing again cannot duplicate."""

    code = "not_enough_replicas"


class NotEnoughReplicasAfterAppendError(LiftlogError):
    """An ``acks=all`` publish appended while the ISR was large enough, after which it fell
    below min ISR before the leader could route the ack: the record is in the leader's log
    and is committed if the ISR heals, so only a publish with a msg id may safely be sent
    again. Not a subclass of ``NotEnoughReplicasError``, which promises nothing was stored."""

    code = "not_enough_replicas_after_append"


class StreamPausedError(LiftlogError):
    code = "stream_paused"


class StreamReadOnlyError(LiftlogError):
    """A publish to a read-only stream: nothing is stored, reads go on (Liftbridge's
    ``SetStreamReadonly``). Distinct from ``stream_paused``: a read-only stream is still
    served and described as live, it only refuses writes until it is set read-write."""

    code = "stream_readonly"


class InvalidTimestampError(LiftlogError):
    """A ``Liftlog-Timestamp`` on a ``timestamp_type: create`` stream that is not a time in ms
    or lies further from the leader's clock than ``ingest.max_timestamp_skew_ms`` (Kafka's
    ``message.timestamp.before/after.max.ms``): nothing is stored."""

    code = "invalid_timestamp"


class InternalStreamError(LiftlogError):
    """A delete, alter, pause or read-only switch named one of the nodes' own streams
    (``__cursors``): they hold every cursor and group offset, so the API never changes them."""

    code = "internal_stream"


class CursorNotFoundError(LiftlogError):
    """No cursor of that id was ever set (or it was deleted) for the stream partition: a
    cursor never set is not offset 0, which means record 0 was processed."""

    code = "cursor_not_found"


class CoordinatorLoadingError(LiftlogError):
    """The ``__cursors`` partition's new leader is still reading its log into memory (Kafka's
    COORDINATOR_LOAD_IN_PROGRESS): retry shortly, nothing was changed."""

    code = "coordinator_loading"


class ImmutableFieldError(LiftlogError):
    """An alter tried to change what a stream cannot change in place (its name, subject,
    replication factor, load balancing or encryption), or to remove partitions."""

    code = "immutable_field"


class OffsetOutOfRangeError(LiftlogError):
    """A fetch asked for an offset below the log start or above the high watermark."""

    code = "offset_out_of_range"


class CorruptRecordError(LiftlogError):
    """A batch failed its CRC or framing check."""

    code = "corrupt_record"


class StorageError(LiftlogError):
    code = "storage_error"


class UnavailableError(LiftlogError):
    """A dependency (NATS, ZooKeeper, a node) cannot be reached right now; retry later."""

    code = "unavailable"


class UnauthenticatedError(LiftlogError):
    """No credential, or one no node knows (a wrong, unknown or revoked token): 401."""

    code = "unauthenticated"


class ForbiddenError(LiftlogError):
    """The caller is known but no ACL allows the action on the resource (or one denies
    it): 403, the message naming principal, action and resource."""

    code = "forbidden"


class AuthUnavailableError(UnavailableError):
    """The node cannot judge a request safely: its copy of the tokens and ACLs is too old
    (ZooKeeper unreachable) or holds an ACL it cannot read, which might be a deny. Refused
    (503) rather than judged on what might be stale or incomplete; super users still pass."""

    code = "auth_unavailable"


class TokenNotFoundError(LiftlogError):
    code = "token_not_found"


class AclNotFoundError(LiftlogError):
    code = "acl_not_found"


class NoRespondersError(UnavailableError):
    """Nothing subscribes to the NATS subject a publish went to (nats-server's no-responders
    status): the stream does not record that subject, or its partition has no live leader."""

    code = "no_responders"


class NatsConnectError(UnavailableError):
    """A client could not connect to NATS: nothing answers at the URL, the server's TLS
    certificate is not trusted, or no connection came within the client's connect timeout.
    The message says what to check or set."""

    code = "nats_unavailable"


class NatsLoginError(UnauthenticatedError):
    """NATS refused a client's login (nats-server's ``Authorization Violation``): the message
    says what the client presented and where the credentials to present are kept."""


class RequestTimeoutError(LiftlogError):
    """A bounded wait (ack, fetch, readiness) ran out."""

    code = "timeout"


class ProcessStartError(LiftlogError):
    """An embedded component (nats-server, ZooKeeper, a node) failed to start."""

    code = "process_start_failed"


class LakeError(LiftlogError):
    """The Delta lake could not be read or committed to (deltalake's errors, converted at the
    adapter); exports retry with backoff, so this is transient unless it persists."""

    code = "lake_error"


class RequestTooLargeError(LiftlogError):
    """A request body is larger than ``limits.max_request_bytes``; refused before it is read
    whole, so no client can make a node buffer an unbounded body."""

    code = "request_too_large"


class LimitExceededError(LiftlogError):
    """Creating the stream would take the cluster over a ``[limits]`` bound (the number of
    streams or of partitions); the message names the key and its value."""

    code = "limit_exceeded"


class EncryptionUnavailableError(LiftlogError):
    """An encrypted stream was asked of a node (or cluster) without a master key: refused
    before anything is stored, never silently created in clear."""

    code = "encryption_unavailable"


class KeyUnavailableError(LiftlogError):
    """A partition's data key cannot be had: its znode is missing, or no configured master key
    has the id that wrapped it (a node started without the key a rotation moved to)."""

    code = "key_unavailable"


class DecryptionError(LiftlogError):
    """An encrypted value failed AES-GCM authentication (tampered bytes or the wrong key):
    reported, never returned as garbage."""

    code = "decryption_failed"


class GroupNotFoundError(LiftlogError):
    """No consumer group of that name has members or committed offsets."""

    code = "group_not_found"


class GroupNotEmptyError(LiftlogError):
    """An offsets reset (or delete) of a group that still has members: as in Kafka, only an
    empty group's offsets may be moved, or a live member would overwrite them."""

    code = "group_not_empty"


class StaleMemberEpochError(LiftlogError):
    """A group request carried a member epoch the coordinator no longer accepts for what it
    names (KIP-848's STALE_MEMBER_EPOCH): heartbeat, take the new epoch, retry."""

    code = "stale_member_epoch"


class FencedMemberError(LiftlogError):
    """The group does not know this member (it left, expired or was replaced) or its claims
    are unsafe (KIP-848's UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH): drop every partition
    without committing and join again."""

    code = "fenced_member"


class GroupManagedError(LiftlogError):
    """A direct set or delete of a ``__group:<group>`` cursor while the group has members:
    its offsets are the members' commits; stop them, or use the group's offsets reset."""

    code = "group_managed"


class NoCommittedOffsetError(LiftlogError):
    """A group member was assigned a partition with no committed offset while its
    ``auto_offset_reset`` is ``"none"`` (Kafka's NoOffsetForPartitionException). Raised by
    the client only."""

    code = "no_committed_offset"


class SchemaViolationError(LiftlogError):
    """A record does not match its stream's schema. ``field`` is a JSON-pointer-like path to
    the value that failed ("/items/2/price"; "" for the whole value) and ``reason`` says why.
    A core error (not the registry's) so that every ack and REST body rebuilds it typed."""

    code = "schema_violation"

    def __init__(self, field: str, reason: str | None = None) -> None:
        if reason is None:  # rebuilt from its message (an ack, a REST body)
            head, sep, rest = field.partition(": ")
            named = sep and head.startswith("field ")
            field, reason = (head.removeprefix("field "), rest) if named else ("", field)
        self.field = "" if field == "/" else field
        self.reason = reason
        super().__init__(f"field {self.field or '/'}: {reason}")
