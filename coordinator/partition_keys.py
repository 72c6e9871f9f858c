"""Encrypted streams' data keys in ZooKeeper: one wrapped key per partition.

The node that creates an encrypted stream generates each partition's data key and writes it,
wrapped by the master key, in the same transaction as the partitions, so a partition never
exists without its key. Every replica and every later leader reads the znode and unwraps the
key itself: data keys are never sent between nodes. Rotating the master key rewrites only
these znodes (conditional writes), never a byte of data.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.errors import VersionConflictError, ZNodeFormatError, ZNodeNotFoundError
from coordinator.zk import ZkSession, ZkTransaction
from coordinator.znodes import SCHEMA_VERSION, STREAMS_PATH, partition_key_path, partitions_path
from spark_log.crypto import KeyProvider, ValueCipher, WrappedKey, new_data_key
from spark_log.errors import KeyUnavailableError
from spark_log.json_types import JsonMapping, JsonObject
from spark_log.stream_spec import StreamSpec

REWRAP_MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class PartitionKeyRecord:
    """``{"version": 1, "key_id": ..., "wrapped": <base64>}``: the master key id that wrapped
    the data key, and the wrapped bytes (nonce || ciphertext || tag)."""

    key_id: str
    wrapped: str

    @classmethod
    def of(cls, wrapped: WrappedKey) -> PartitionKeyRecord:
        return cls(wrapped.key_id, base64.b64encode(wrapped.blob).decode("ascii"))

    def wrapped_key(self) -> WrappedKey:
        try:
            blob = base64.b64decode(self.wrapped, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ZNodeFormatError(f"partition key: wrapped is not base64: {exc}") from exc
        return WrappedKey(self.key_id, blob)

    def to_json(self) -> JsonObject:
        return {"version": SCHEMA_VERSION, "key_id": self.key_id, "wrapped": self.wrapped}

    @classmethod
    def from_json(cls, data: JsonMapping) -> PartitionKeyRecord:
        if not isinstance(data, Mapping):
            raise ZNodeFormatError("partition key: expected a JSON object")
        if data.get("version") != SCHEMA_VERSION:
            raise ZNodeFormatError(
                f"partition key: unsupported schema version {data.get('version')!r}"
            )
        key_id, wrapped = data.get("key_id"), data.get("wrapped")
        if set(data) != {"version", "key_id", "wrapped"} or not isinstance(key_id, str):
            raise ZNodeFormatError("partition key: expected exactly version, key_id, wrapped")
        if not isinstance(wrapped, str):
            raise ZNodeFormatError("partition key: wrapped must be a string")
        return cls(key_id, wrapped)


def key_context(stream: str, partition: int) -> bytes:
    """What a wrapped key is bound to: a key copied to another partition does not unwrap."""
    return f"{stream}/{partition}".encode()


def add_new_keys(
    txn: ZkTransaction, spec: StreamSpec, provider: KeyProvider, first_partition: int = 0
) -> None:
    """Create the wrapped data key of every partition from ``first_partition`` on, in the
    transaction that creates the partitions (a stream's create, or its growth)."""
    for partition in range(first_partition, spec.partitions):
        wrapped = provider.wrap(new_data_key(), key_context(spec.name, partition))
        record = PartitionKeyRecord.of(wrapped)
        txn.create_json(partition_key_path(spec.name, partition), record.to_json())


def read_key(session: ZkSession, stream: str, partition: int) -> tuple[PartitionKeyRecord, int]:
    try:
        data, version = session.get_json(partition_key_path(stream, partition))
    except ZNodeNotFoundError as exc:
        raise KeyUnavailableError(
            f"stream {stream!r} partition {partition} is encrypted but has no data key znode"
        ) from exc
    return PartitionKeyRecord.from_json(data), version


def load_cipher(
    session: ZkSession, provider: KeyProvider | None, stream: str, partition: int
) -> ValueCipher:
    """The partition's value cipher: its data key read from ZooKeeper and unwrapped here."""
    if provider is None:
        raise KeyUnavailableError(
            f"stream {stream!r} is encrypted and this node has no master key "
            "(set [encryption] master_key, master_key_file or master_key_env)"
        )
    record, _version = read_key(session, stream, partition)
    data_key = provider.unwrap(record.wrapped_key(), key_context(stream, partition))
    return ValueCipher(data_key)


@dataclass(frozen=True)
class RotationResult:
    """What a rotation did: keys re-wrapped, keys already under the current master key."""

    key_id: str
    rewrapped: int
    unchanged: int


def rewrap_all(session: ZkSession, provider: KeyProvider) -> RotationResult:
    """Re-wrap every partition data key not yet under the provider's current master key.

    Each rewrite is a conditional write on the znode version (a racing rotation re-reads);
    the data key itself is unchanged, so no segment or lake file is touched. A key wrapped by
    a master key the provider does not know fails the whole rotation loudly."""
    rewrapped = unchanged = 0
    for stream in _streams(session):
        for partition in _partitions(session, stream):
            done = _rewrap_one(session, provider, stream, partition)
            if done is None:
                continue
            rewrapped += done
            unchanged += 1 - done
    return RotationResult(provider.current_key_id, rewrapped, unchanged)


def _rewrap_one(
    session: ZkSession, provider: KeyProvider, stream: str, partition: int
) -> int | None:
    """1 if re-wrapped, 0 if already current, None if the partition has no key (clear)."""
    path = partition_key_path(stream, partition)
    context = key_context(stream, partition)
    for _attempt in range(REWRAP_MAX_ATTEMPTS):
        try:
            data, version = session.get_json(path)
        except ZNodeNotFoundError:
            return None
        record = PartitionKeyRecord.from_json(data)
        if record.key_id == provider.current_key_id:
            return 0
        data_key = provider.unwrap(record.wrapped_key(), context)
        fresh = PartitionKeyRecord.of(provider.wrap(data_key, context))
        try:
            session.set_json(path, fresh.to_json(), version)
            return 1
        except VersionConflictError:
            continue
        except ZNodeNotFoundError:
            return None
    raise VersionConflictError(f"the data key of {stream}/{partition} kept changing")


def _streams(session: ZkSession) -> list[str]:
    try:
        return sorted(session.children(STREAMS_PATH))
    except ZNodeNotFoundError:
        return []


def _partitions(session: ZkSession, stream: str) -> list[int]:
    try:
        return sorted(int(p) for p in session.children(partitions_path(stream)))
    except ZNodeNotFoundError:
        return []
