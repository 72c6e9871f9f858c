"""The stream spec: what a stream records, how it is partitioned, acked, retained and compacted.

A spec is stored in ZooKeeper as versioned JSON and compared field by field, so that creating
an identical stream twice is idempotent and a conflicting create is refused.

Each field is declared once, in the three bases of ``StreamSpec``, with a ``SpecField`` where a
request needs more than its type and default: the REST answers that repeat the fields inherit
them, and the create and alter request models are built from them.

Validation messages name fields as JSON (``"load_balance": true``), the words of the REST API;
the CLI rewrites such references into its flags (``--load-balance``) in one place.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from spark_log.errors import ConfigError, ImmutableFieldError, InvalidRequestError
from spark_log.spec_field import SpecField, declared_fields
from spark_log.typed_config import from_mapping
from spark_log.value_schema import ValueSchema, default_subject

AckPolicy = Literal["none", "leader", "all"]
ACK_POLICIES: tuple[str, ...] = ("none", "leader", "all")
# Kafka's message.timestamp.type: LogAppendTime (the leader's clock) or CreateTime (the
# producer's ``Liftlog-Timestamp`` header, within the node's ingest.max_timestamp_skew_ms)
TimestampType = Literal["log_append", "create"]
TIMESTAMP_TYPES: tuple[str, ...] = ("log_append", "create")
DEFAULT_TIMESTAMP_TYPE: TimestampType = "log_append"

DEFAULT_PARTITIONS = 1
DEFAULT_REPLICATION_FACTOR = 1
DEFAULT_ACK_POLICY: AckPolicy = "all"
DEFAULT_MAX_RECORD_BYTES = 1024 * 1024
MAX_PARTITIONS = 1024
MAX_STREAM_NAME_LENGTH = 200
# NATS refuses a protocol line over max_control_line (4 KiB by default) and drops the connection:
# a subscription to a longer subject would cut the node off NATS, every reconnect again
MAX_SUBJECT_LENGTH = 1024
# counts, bytes and ms are int64 wherever they are stored or computed on (Arrow, the log)
MAX_SPEC_INT = 2**63 - 1
_BOUNDED_INTS = (
    "replication_factor",
    "retention_ms",
    "retention_bytes",
    "retention_messages",
    "max_record_bytes",
    "delete_retention_ms",
    "auto_pause_ms",
)
# Kafka's delete.retention.ms default: a tombstone stays readable for a day after it could be
# compacted away, so a consumer that is less than a day behind still sees the delete.
DEFAULT_DELETE_RETENTION_MS = 24 * 60 * 60 * 1000

CURSORS_STREAM = "__cursors"
"""Where cursors and consumer-group offsets live (Kafka's ``__consumer_offsets``)."""
ACTIVITY_STREAM = "__activity"
"""Every admin operation, in order, when the cluster records them (Liftbridge's activity)."""
INTERNAL_STREAMS: tuple[str, ...] = (CURSORS_STREAM, ACTIVITY_STREAM)

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TOKEN_RE = re.compile(r"^[^\s.*>]+$")


@dataclass(frozen=True)
class StreamSubject:
    """A stream's name and the NATS subject it records: the first fields of a spec and of every
    answer that repeats one."""

    name: str = field(
        metadata=SpecField(
            description="Stream name: letters, digits, '.', '_' and '-'",
            alter_description="immutable",
            immutable="a stream cannot be renamed",
        ).as_metadata()
    )
    subject: str = field(
        metadata=SpecField(
            description="NATS subject to record; wildcards allowed",
            alter_description="immutable",
            immutable="create another stream on the new subject",
        ).as_metadata()
    )


@dataclass(frozen=True)
class PartitionCount(StreamSubject):
    """A spec's partition count, declared apart from its settings: in a describe that place
    holds the partitions themselves."""

    partitions: int = field(
        default=DEFAULT_PARTITIONS,
        metadata=SpecField(
            alter_description="grow only: new partitions get leaders and start empty",
            grow_only=True,
            ge=1,
        ).as_metadata(),
    )


@dataclass(frozen=True)
class StreamSettings(StreamSubject):
    """Every other field of a spec: how it is replicated, acked, retained, compacted, stored
    and paused."""

    replication_factor: int = field(
        default=DEFAULT_REPLICATION_FACTOR,
        metadata=SpecField(
            alter_description="immutable: use reassign",
            immutable="move replicas with `liftlog stream reassign` instead",
            ge=1,
        ).as_metadata(),
    )
    min_isr: int | None = field(
        default=None,
        metadata=SpecField(
            description="Default: a majority of replication_factor",
            alter_description="1..replication_factor; null: majority",
            ge=1,
        ).as_metadata(),
    )
    ack_policy: AckPolicy = DEFAULT_ACK_POLICY
    retention_ms: int | None = field(default=None, metadata=SpecField(gt=0).as_metadata())
    retention_bytes: int | None = field(default=None, metadata=SpecField(gt=0).as_metadata())
    retention_messages: int | None = field(default=None, metadata=SpecField(gt=0).as_metadata())
    max_record_bytes: int = field(
        default=DEFAULT_MAX_RECORD_BYTES, metadata=SpecField(gt=0).as_metadata()
    )
    load_balance: bool = field(
        default=False,
        metadata=SpecField(
            description="All partitions share the subject (queue group)",
            alter_description="immutable",
            immutable="it decides which subject each partition listens on",
        ).as_metadata(),
    )
    compaction: bool = field(
        default=False,
        metadata=SpecField(
            description="Keep the latest record per key in the lake (cleanup.policy=compact)"
        ).as_metadata(),
    )
    """Kafka's ``cleanup.policy=compact``: ``liftlog compact`` keeps the latest record per key
    in the lake (streams without it are compacted only with ``--force``)."""
    compaction_interval_s: float | None = field(
        default=None,
        metadata=SpecField(
            description="How often `liftlog compact --watch` compacts (needs compaction)", gt=0
        ).as_metadata(),
    )
    """How often ``liftlog compact --watch`` compacts this stream (None: only on demand)."""
    delete_retention_ms: int = field(
        default=DEFAULT_DELETE_RETENTION_MS,
        metadata=SpecField(
            description="How long a tombstone (key, empty value) survives compaction", ge=0
        ).as_metadata(),
    )
    """Kafka's ``delete.retention.ms``: how long a tombstone (a key with an empty value)
    outlives the records it deletes before compaction removes it too."""
    encryption: bool = field(
        default=False,
        metadata=SpecField(
            description="Encrypt values at rest (needs a master key on every node; "
            "refused with encryption_unavailable otherwise)",
            alter_description="immutable",
            immutable="records already stored keep the form they were written in",
        ).as_metadata(),
    )
    """Encryption at rest: values are stored AES-GCM encrypted under a per-partition data key
    (keys, headers, timestamps and subjects stay clear; docs/security.md). Needs a master key
    on every node."""
    timestamp_type: TimestampType = field(
        default=DEFAULT_TIMESTAMP_TYPE,
        metadata=SpecField(
            description="log_append: the leader's append time; create: the producer's "
            "Liftlog-Timestamp header (ms), within the nodes' ingest.max_timestamp_skew_ms"
        ).as_metadata(),
    )
    """``log_append``: a record's timestamp is the leader's append time. ``create``: the
    producer's ``Liftlog-Timestamp`` header (ms) when present, refused outside the node's
    ``ingest.max_timestamp_skew_ms`` of the leader's clock; append time without it."""
    auto_pause_ms: int | None = field(
        default=None,
        metadata=SpecField(
            description="Pause a partition after this long without appends; the next publish "
            "or consumer fetch resumes it (null: never)",
            alter_description="null: never auto-pause",
            gt=0,
        ).as_metadata(),
    )
    """Liftbridge's ``autoPauseTime``: a partition whose leader has appended nothing for this
    long is paused until the next publish or consumer fetch resumes it (None: never)."""
    auto_pause_disable_if_subscribers: bool = field(
        default=False,
        metadata=SpecField(
            description="A waiting or recent consumer fetch keeps a partition from pausing"
        ).as_metadata(),
    )
    """Liftbridge's ``autoPauseDisableIfSubscribers``: a consumer fetch waiting or made within
    ``auto_pause_ms`` keeps the partition from pausing."""
    optimistic_concurrency_control: bool = field(
        default=False,
        metadata=SpecField(
            description="Liftbridge's optimistic concurrency control: a Liftbridge publish's "
            "expectedOffset (not -1) must be the offset the record gets",
            alter_description="immutable",
            immutable="publishers rely on it for their writes' order",
        ).as_metadata(),
    )
    """Liftbridge's ``optimisticConcurrencyControl``: a publish through the Liftbridge API
    or envelope whose ``expectedOffset`` is not -1 is stored only at that offset, and acks
    ``none`` are refused. A NATS ``Liftlog-Expected-Offset`` is checked on every stream."""
    value_schema: ValueSchema | None = field(
        default=None,
        metadata=SpecField(
            description="Bind the values to a registered schema: {subject (default "
            '<stream>-value), format ("avro" | "json"), on_invalid ("refuse" | '
            '"dead_letter"), dead_letter_stream, keep_raw_value (keep the value\'s bytes '
            "in the typed lake table)}; the leader validates every record"
        ).as_metadata(),
    )
    """A typed stream: every value must match the subject's schema (Confluent's wire format
    with a schema id registered under the subject, or plain JSON checked against its latest
    version), checked by the leader before the record gets an offset (docs/schemas.md)."""
    internal: bool = field(
        default=False,
        metadata=SpecField(
            immutable="the nodes decide which streams are their own", requested=False
        ).as_metadata(),
    )
    """A stream the nodes keep for themselves (``__cursors``): no NATS subscription, no lake
    export, hidden from the stream list, and never deleted or altered through the API."""


# A dataclass orders inherited fields from its last base to its first: a spec's fields run
# name, subject, partitions, then the settings, as they always have in its JSON.
@dataclass(frozen=True)
class StreamSpec(StreamSettings, PartitionCount):
    """Everything a user chooses when creating a stream (its identity for idempotency)."""

    def __post_init__(self) -> None:
        if self.internal:
            _validate_internal(self)
        else:
            if is_internal_stream(self.name):
                raise InvalidRequestError(f"stream name {self.name!r} is reserved for the nodes")
            validate_stream_name(self.name)
            validate_subject(self.subject)
        if not 1 <= self.partitions <= MAX_PARTITIONS:
            raise InvalidRequestError(f'"partitions" must be in 1..{MAX_PARTITIONS}')
        if self.replication_factor < 1:
            raise InvalidRequestError('"replication_factor" must be >= 1')
        if self.min_isr is not None and not 1 <= self.min_isr <= self.replication_factor:
            raise InvalidRequestError('"min_isr" must be between 1 and "replication_factor"')
        for name in ("retention_ms", "retention_bytes", "retention_messages", "auto_pause_ms"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InvalidRequestError(f'"{name}" must be > 0 when set')
        if self.max_record_bytes <= 0:
            raise InvalidRequestError('"max_record_bytes" must be > 0')
        for name in _BOUNDED_INTS:
            value = getattr(self, name)
            if value is not None and value > MAX_SPEC_INT:
                raise InvalidRequestError(f'"{name}" must be at most {MAX_SPEC_INT}')
        _validate_compaction(self)
        _bind_value_schema(self)
        if self.partitions > 1 and not self.load_balance and self.subject.endswith(">"):
            raise InvalidRequestError(
                "a subject ending in '>' cannot take per-partition suffixes; "
                "use \"load_balance\": true or a subject without '>'"
            )

    @property
    def effective_min_isr(self) -> int:
        """Default min ISR: a majority of the replication factor."""
        return self.min_isr if self.min_isr is not None else self.replication_factor // 2 + 1

    def partition_subject(self, partition: int) -> str:
        """Partition 0 listens on the subject, partition p on ``<subject>.<p>`` (Liftbridge)."""
        if self.load_balance or partition == 0:
            return self.subject
        return f"{self.subject}.{partition}"

    @property
    def queue_group(self) -> str | None:
        """In load-balanced mode all partitions share the subject through one queue group."""
        return f"liftlog.{self.name}" if self.load_balance else None

    def to_json(self) -> dict[str, Any]:
        """``timestamp_type`` is written only when it is not the default, so a spec that
        does not use it reads the same as before the field existed (on every node)."""
        data = dataclasses.asdict(self)
        if self.timestamp_type == DEFAULT_TIMESTAMP_TYPE:
            del data["timestamp_type"]
        for name in ("auto_pause_ms", "auto_pause_disable_if_subscribers"):
            if not data[name]:
                del data[name]  # likewise for the auto-pause fields (off by default)
        if not self.internal:
            del data["internal"]
        if self.value_schema is None:
            del data["value_schema"]  # an untyped stream's spec reads as it always has
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StreamSpec:
        try:
            return from_mapping(cls, data, "stream")
        except InvalidRequestError:
            raise
        except ConfigError as exc:
            raise InvalidRequestError(str(exc)) from exc


# What ``PATCH /v1/streams/{stream}`` may change: settings every node applies to the logs it
# already holds, and the partition count (grow only). Everything else fixes where records go or
# how they are stored.
ALTERABLE_FIELDS: tuple[str, ...] = tuple(
    f.name for f, declared in declared_fields(StreamSpec) if declared.alterable
)
IMMUTABLE_FIELD_REASONS: dict[str, str] = {
    f.name: declared.immutable
    for f, declared in declared_fields(StreamSpec)
    if declared.immutable is not None
}


def altered_spec(spec: StreamSpec, changes: Mapping[str, Any]) -> StreamSpec:
    """``spec`` with ``changes`` applied, validated by the same rules as a create.

    A field given with the value it already has is no change (so a client may send back what
    describe showed); an immutable field with another value is ImmutableFieldError naming it;
    a field that is not in the spec at all is InvalidRequestError. ``null`` clears an optional
    limit (``"retention_ms": null``) or restores a default (``"min_isr": null``).
    """
    current = dataclasses.asdict(spec)
    unknown = sorted(set(changes) - set(current))
    if unknown:
        raise InvalidRequestError(f"unknown stream field(s): {', '.join(unknown)}")
    for name in changes:
        if name in IMMUTABLE_FIELD_REASONS and changes[name] != current[name]:
            raise ImmutableFieldError(
                f'"{name}" cannot be altered ({IMMUTABLE_FIELD_REASONS[name]}); '
                f"stream {spec.name!r} has {current[name]!r}"
            )
    _refuse_shrink(spec, changes.get("partitions"))
    return StreamSpec.from_json({**current, **changes})


def _refuse_shrink(spec: StreamSpec, partitions: Any) -> None:
    """Partitions may only grow (Kafka's rule): removing one would drop its records."""
    if isinstance(partitions, int) and partitions < spec.partitions:
        raise ImmutableFieldError(
            f'"partitions" can only grow: stream {spec.name!r} has {spec.partitions}, '
            f"{partitions} would drop the records of the partitions removed"
        )


def _validate_compaction(spec: StreamSpec) -> None:
    if spec.compaction_interval_s is not None:
        if not spec.compaction:
            raise InvalidRequestError(
                '"compaction_interval_s" needs compaction: set "compaction": true'
            )
        if not 0 < spec.compaction_interval_s < math.inf:
            raise InvalidRequestError('"compaction_interval_s" must be > 0 and finite when set')
    if spec.delete_retention_ms < 0:
        raise InvalidRequestError('"delete_retention_ms" must be >= 0')


def _bind_value_schema(spec: StreamSpec) -> None:
    """Fill in the default subject (``<stream>-value``); a stream cannot be its own dead
    letter stream (an invalid record would loop)."""
    binding = spec.value_schema
    if binding is None:
        return
    if not binding.subject:
        binding = dataclasses.replace(binding, subject=default_subject(spec.name))
        object.__setattr__(spec, "value_schema", binding)  # a frozen spec completing itself
    if binding.dead_letter_stream == spec.name:
        raise InvalidRequestError(
            '"value_schema.dead_letter_stream" must name another stream than this one'
        )
    if binding.dead_letter_stream is not None:
        validate_stream_name(binding.dead_letter_stream)


def internal_subject(name: str) -> str:
    """The subject an internal stream's spec names: under ``_LIFTLOG``, which no user stream
    may record, and never subscribed to (internal records come from the nodes themselves)."""
    return f"_LIFTLOG.internal.{name}"


def is_internal_stream(name: str) -> bool:
    """User stream names start with a letter or digit, so ``__`` names cannot collide."""
    return name in INTERNAL_STREAMS


def _validate_internal(spec: StreamSpec) -> None:
    if not is_internal_stream(spec.name) or spec.subject != internal_subject(spec.name):
        raise InvalidRequestError(f"{spec.name!r} is not an internal stream")


def validate_stream_name(name: str) -> None:
    """A user stream's name, or one of the internal streams' (safe in paths and znodes)."""
    if is_internal_stream(name):
        return
    if not name or len(name) > MAX_STREAM_NAME_LENGTH or not _NAME_RE.match(name):
        raise InvalidRequestError(
            f"invalid stream name {name!r}: use letters, digits, '.', '_' and '-' "
            f"(at most {MAX_STREAM_NAME_LENGTH} characters)"
        )


def validate_subject(subject: str) -> None:
    """A NATS subject: dot-separated tokens; '*' a whole token, '>' only the last token."""
    if not subject.isprintable() or len(subject.encode()) > MAX_SUBJECT_LENGTH:
        raise InvalidRequestError(
            f"invalid NATS subject {subject[:60]!r}: at most {MAX_SUBJECT_LENGTH} bytes, "
            "no control characters"
        )
    tokens = subject.split(".") if subject else [""]
    for i, token in enumerate(tokens):
        if token == "*" or (token == ">" and i == len(tokens) - 1):
            continue
        if not _TOKEN_RE.match(token):
            raise InvalidRequestError(f"invalid NATS subject {subject!r}")
    _refuse_internal_subject(subject, tokens[0])


_INTERNAL_FIRST_TOKENS = ("_LIFTLOG", "_INBOX")


def _refuse_internal_subject(subject: str, first: str) -> None:
    """A stream records every message on its subject, so a subject that can match Liftlog's
    control traffic (``_LIFTLOG``), request replies (``_INBOX``) or nats-server's own subjects
    (``$SYS``, ``$JS``...) would let whoever creates the stream read that traffic. A wildcard
    first token (``>``, ``*.x``) matches those prefixes too, so it is refused as well."""
    if first in ("*", ">") or first.startswith("$") or first in _INTERNAL_FIRST_TOKENS:
        raise InvalidRequestError(
            f"NATS subject {subject!r} could match internal traffic: a stream subject cannot "
            "start with a wildcard, '$', '_LIFTLOG' or '_INBOX'"
        )
