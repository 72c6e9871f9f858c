"""Streams in ZooKeeper: create (idempotent), read, pause, delete, partition leader/ISR state.

A stream's znode, its partitions and their initial leader/ISR state are written in one
ZooKeeper transaction, so nobody ever sees a stream without its partitions, and two racing
creates of the same stream cannot both win. Every later change is a conditional write on the
znode version (the fencing rule of docs/znodes.md).
"""

from __future__ import annotations

import builtins
import dataclasses
import time
import zlib
from collections.abc import Callable

from coordinator.activity import ActivityLog
from coordinator.assignment import assign_replicas
from coordinator.brokers import live_brokers
from coordinator.errors import (
    CoordinatorError,
    VersionConflictError,
    ZNodeExistsError,
    ZNodeNotFoundError,
)
from coordinator.partition_keys import add_new_keys
from coordinator.stream_watch import StreamWatch
from coordinator.zk import ZkSession
from coordinator.znodes import (
    STREAMS_PATH,
    PartitionState,
    StreamRecord,
    partition_path,
    partition_state_path,
    partitions_path,
    stream_path,
)
from spark_log.crypto import KeyProvider
from spark_log.errors import (
    EncryptionUnavailableError,
    PartitionNotFoundError,
    StreamExistsError,
    StreamNotFoundError,
)
from spark_log.json_types import JsonMapping, JsonObject
from spark_log.stream_spec import StreamSpec, altered_spec, validate_stream_name

CREATE_MAX_ATTEMPTS = 3
Event = tuple[str, JsonObject]
"""An activity event: its op and its fields (``coordinator.activity``)."""
SET_PAUSED_MAX_ATTEMPTS = 5


class StreamStore:
    """Stream records and partition states under ``{root}/v1/streams``."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self.activity = ActivityLog(session)

    def create(
        self, spec: StreamSpec, key_provider: KeyProvider | None = None
    ) -> tuple[bool, StreamRecord]:
        """Create the stream; (True, record) if created, (False, existing) if identical.

        A different spec under the same name is StreamExistsError naming the fields that
        differ. Replicas are assigned over the brokers live right now. An encrypted stream
        needs ``key_provider`` (the node's master key): its partitions' wrapped data keys are
        created in the same transaction.
        """
        if spec.encryption and key_provider is None:
            raise EncryptionUnavailableError(
                f"stream {spec.name!r} asks for encryption but this node has no master key: "
                "set [encryption] master_key, master_key_file or master_key_env on every node"
            )
        last_race: ZNodeExistsError | None = None
        for _attempt in range(CREATE_MAX_ATTEMPTS):
            existing = self._find(spec.name)
            if existing is not None:
                _require_same_spec(existing.spec, spec)
                return False, existing
            try:
                return True, self._create_new(spec, key_provider)
            except ZNodeExistsError as exc:  # lost a race with another create: compare again
                last_race = exc
        raise CoordinatorError(
            f"stream {spec.name!r} could not be created after {CREATE_MAX_ATTEMPTS} attempts "
            f"racing other writers: {last_race}"
        )

    def _create_new(self, spec: StreamSpec, key_provider: KeyProvider | None) -> StreamRecord:
        replicas = self._placement(spec)
        record = StreamRecord(spec=spec, paused=False, created_at_ms=int(time.time() * 1000))
        self._session.ensure_path(STREAMS_PATH)
        txn = self._session.transaction()
        txn.create_json(stream_path(spec.name), record.to_json())
        txn.create(partitions_path(spec.name))
        for partition, partition_replicas in enumerate(replicas):
            txn.create(partition_path(spec.name, partition))
            state = PartitionState.initial(partition_replicas)
            txn.create_json(partition_state_path(spec.name, partition), state.to_json())
        if not spec.internal:
            self.activity.add_to(txn, "create_stream", stream=spec.name, partitions=spec.partitions)
        if spec.encryption and key_provider is not None:
            add_new_keys(txn, spec, key_provider)
        txn.commit()
        return record

    def get(self, name: str) -> StreamRecord:
        """The stream's record; StreamNotFoundError if there is none."""
        record, _version = self._read(name)
        return record

    def delete(self, name: str) -> None:
        """Delete the stream and its partition states atomically."""
        validate_stream_name(name)
        try:
            self._session.delete_recursive(
                stream_path(name),
                also=lambda txn: self.activity.add_to(txn, "delete_stream", stream=name),
            )
        except ZNodeNotFoundError as exc:
            raise StreamNotFoundError(f"stream {name!r} not found") from exc

    def set_paused(self, name: str, paused: bool) -> StreamRecord:
        """Pause or resume (idempotent). A resume also clears the partitions paused for
        idleness: the operator asked for the whole stream to run."""

        def change(record: StreamRecord) -> StreamRecord:
            idle = record.idle_paused_partitions if paused else ()
            return dataclasses.replace(record, paused=paused, idle_paused_partitions=idle)

        op = "pause_stream" if paused else "resume_stream"
        return self.update(name, change, event=(op, {"stream": name}))

    def set_idle_paused(self, name: str, partition: int, idle: bool) -> StreamRecord:
        """Mark a partition paused for idleness, or resumed (idempotent; the leader's CAS
        on the stream znode, retried like ``set_paused`` when another writer got in)."""

        def change(record: StreamRecord) -> StreamRecord:
            marks = set(record.idle_paused_partitions)
            if idle:
                marks.add(partition)
            else:
                marks.discard(partition)
            return dataclasses.replace(record, idle_paused_partitions=tuple(sorted(marks)))

        return self.update(name, change)

    def set_read_only(self, name: str, read_only: bool) -> StreamRecord:
        """Make the stream refuse every publish, or accept them again (idempotent)."""
        return self.update(
            name,
            lambda record: dataclasses.replace(record, read_only=read_only),
            event=("set_read_only", {"stream": name, "read_only": read_only}),
        )

    def alter(
        self, name: str, changes: JsonMapping, key_provider: KeyProvider | None = None
    ) -> StreamRecord:
        """Change the spec's alterable fields (``spark_log.stream_spec.altered_spec``
        validates them against the spec as stored at the moment of the write), as ``update``
        does. More partitions are created in the same transaction as the spec naming them
        (``_grow``); an encrypted stream's new data keys need ``key_provider``."""

        event = ("alter_stream", {"stream": name, "changes": dict(changes)})

        def write(record: StreamRecord, updated: StreamRecord, version: int) -> None:
            if updated.spec.partitions == record.spec.partitions:
                self._write_record(updated, version, event)
            else:
                self._grow(record.spec.partitions, updated, version, key_provider, event)

        return self._read_modify_write(
            name,
            lambda record: dataclasses.replace(record, spec=altered_spec(record.spec, changes)),
            write,
        )

    def _placement(self, spec: StreamSpec) -> list[list[int]]:
        """Every partition's replicas over the brokers live now, round robin from a start
        derived from the name (a create and a growth continue the same sequence)."""
        broker_ids = [broker.broker_id for broker in live_brokers(self._session)]
        return assign_replicas(
            spec.partitions,
            spec.replication_factor,
            broker_ids,
            start_index=_start_index(spec.name, len(broker_ids)),
        )

    def _grow(
        self,
        old: int,
        updated: StreamRecord,
        version: int,
        key_provider: KeyProvider | None,
        event: Event,
    ) -> None:
        """One transaction: the spec with the new count (conditional on the version read),
        and each new partition with its state (and data key on an encrypted stream). New
        partitions are placed by the same round robin as a create, continued (Kafka's
        ``createPartitions``), over the brokers live now."""
        spec = updated.spec
        if spec.encryption and key_provider is None:
            raise EncryptionUnavailableError(
                f"stream {spec.name!r} is encrypted but this node has no master key: "
                "grow it through a node that has one"
            )
        replicas = self._placement(spec)
        txn = self._session.transaction()
        txn.set_json(stream_path(spec.name), updated.to_json(), version)
        for partition in range(old, spec.partitions):
            txn.create(partition_path(spec.name, partition))
            state = PartitionState.initial(replicas[partition])
            txn.create_json(partition_state_path(spec.name, partition), state.to_json())
        if spec.encryption and key_provider is not None:
            add_new_keys(txn, spec, key_provider, first_partition=old)
        self.activity.add_to(txn, event[0], **event[1])
        txn.commit()

    def update(
        self,
        name: str,
        change: Callable[[StreamRecord], StreamRecord],
        event: Event | None = None,
    ) -> StreamRecord:
        """Write ``change(record)``: a read-modify-write on the znode version, retried when
        another writer got in between (so two operators' changes never overwrite each other).
        No write when nothing changes; ``event`` is queued with the write (``ActivityLog``)."""

        def write(_record: StreamRecord, updated: StreamRecord, version: int) -> None:
            self._write_record(updated, version, event)

        return self._read_modify_write(name, change, write)

    def _write_record(self, updated: StreamRecord, version: int, event: Event | None) -> None:
        path = stream_path(updated.spec.name)
        if event is None:
            self._session.set_json(path, updated.to_json(), version)
            return
        txn = self._session.transaction()
        txn.set_json(path, updated.to_json(), version)
        self.activity.add_to(txn, event[0], **event[1])
        txn.commit()

    def _read_modify_write(
        self,
        name: str,
        change: Callable[[StreamRecord], StreamRecord],
        write: Callable[[StreamRecord, StreamRecord, int], None],
    ) -> StreamRecord:
        """``write(record, change(record), version)`` conditional on the version read, again
        from a fresh read when another writer got in between; no write when nothing changes."""
        for _attempt in range(SET_PAUSED_MAX_ATTEMPTS):
            record, version = self._read(name)
            updated = change(record)
            if updated == record:
                return record
            try:
                write(record, updated, version)
                return updated
            except VersionConflictError:
                continue
            except ZNodeNotFoundError as exc:
                raise StreamNotFoundError(f"stream {name!r} not found") from exc
        raise VersionConflictError(
            f"stream {name!r} kept changing; gave up after {SET_PAUSED_MAX_ATTEMPTS} attempts"
        )

    def partition_states(self, name: str) -> dict[int, tuple[PartitionState, int]]:
        """Every partition's state and the znode version a conditional write must quote."""
        validate_stream_name(name)
        try:
            partitions = sorted(int(p) for p in self._session.children(partitions_path(name)))
            states = {}
            for partition in partitions:
                data, version = self._session.get_json(partition_state_path(name, partition))
                states[partition] = (PartitionState.from_json(data), version)
        except ZNodeNotFoundError as exc:  # partitions are created with the stream, so: gone
            raise StreamNotFoundError(f"stream {name!r} not found") from exc
        return states

    def set_partition_state(
        self, name: str, partition: int, state: PartitionState, expected_version: int
    ) -> int:
        """Write a partition's state only if it is still at ``expected_version``.

        Returns the new version. VersionConflictError means someone else (another controller,
        a newer leader) changed it: re-read, never retry blindly.
        """
        validate_stream_name(name)
        try:
            return self._session.set_json(
                partition_state_path(name, partition), state.to_json(), expected_version
            )
        except VersionConflictError as exc:
            raise VersionConflictError(
                f"partition {partition} of stream {name!r} changed since version "
                f"{expected_version}; re-read its state"
            ) from exc
        except ZNodeNotFoundError as exc:
            if self._find(name) is None:
                raise StreamNotFoundError(f"stream {name!r} not found") from exc
            raise PartitionNotFoundError(f"stream {name!r} has no partition {partition}") from exc

    def watch(self, callback: Callable[[], None]) -> StreamWatch:
        """Call ``callback()`` now and whenever streams, a stream or a partition state change.

        Level-triggered: the callback says "something changed", the caller re-reads. It runs on
        kazoo's thread and must not block (hop onto your own loop or queue).
        """
        watch = StreamWatch(self._session, callback)
        watch.start()
        return watch

    def list(self) -> builtins.list[StreamRecord]:
        """Every stream, sorted by name."""
        try:
            names = self._session.children(STREAMS_PATH)
        except ZNodeNotFoundError:
            return []
        records = []
        for name in names:
            found = self._find(name)
            if found is not None:  # None: deleted between the listing and the read
                records.append(found)
        return records

    def _find(self, name: str) -> StreamRecord | None:
        try:
            return self.get(name)
        except StreamNotFoundError:
            return None

    def _read(self, name: str) -> tuple[StreamRecord, int]:
        validate_stream_name(name)
        try:
            data, version = self._session.get_json(stream_path(name))
        except ZNodeNotFoundError as exc:
            raise StreamNotFoundError(f"stream {name!r} not found") from exc
        return StreamRecord.from_json(data), version


def _require_same_spec(existing: StreamSpec, requested: StreamSpec) -> None:
    """Idempotent create: identical specs are fine, any difference is named."""
    differences = [
        f"{field.name} (existing {getattr(existing, field.name)!r}, "
        f"requested {getattr(requested, field.name)!r})"
        for field in dataclasses.fields(StreamSpec)
        if getattr(existing, field.name) != getattr(requested, field.name)
    ]
    if differences:
        raise StreamExistsError(
            f"stream {existing.name!r} already exists with a different spec: "
            + ", ".join(differences)
        )


def _start_index(name: str, broker_count: int) -> int:
    """Where the round-robin starts: spread by stream name, yet reproducible (Kafka: random)."""
    return zlib.crc32(name.encode()) % broker_count if broker_count else 0
