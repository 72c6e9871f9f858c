"""Blocking reads and writes of the schema registry's znodes (run in a worker thread).

Every write is conditional (compare-and-set on the znode version) and touches
``/v1/schemas/changes`` in the same transaction, so concurrent registrations through two
nodes cannot both take a version number, and every node's cache learns of each write from
one watch. A conflict raises VersionConflictError for the registry to retry on fresh state.
"""

from __future__ import annotations

import contextlib
import dataclasses

from coordinator.errors import VersionConflictError, ZNodeExistsError, ZNodeNotFoundError
from coordinator.schemas.znodes import (
    CHANGES_PATH,
    DIRECTORIES,
    GLOBAL_CONFIG_PATH,
    NEXT_ID_PATH,
    SUBJECTS_PATH,
    StoredSchema,
    SubjectRecord,
    fingerprint,
    fingerprint_path,
    level_from_json,
    level_to_json,
    schema_id_path,
    subject_from_znode_name,
    subject_path,
)
from coordinator.zk import ZkSession, ZkTransaction
from coordinator.znodes import SCHEMA_VERSION
from spark_log.schemas import CompatibilityLevel, SchemaNotFoundError, SchemaType

FIRST_SCHEMA_ID = 1


def ensure_layout(zk: ZkSession) -> None:
    """The directories and the two single znodes every write expects (idempotent)."""
    for path in DIRECTORIES:
        zk.ensure_path(path)
    for path, data in (
        (NEXT_ID_PATH, {"version": SCHEMA_VERSION, "next": FIRST_SCHEMA_ID}),
        (CHANGES_PATH, {"version": SCHEMA_VERSION}),
    ):
        with contextlib.suppress(ZNodeExistsError):
            zk.create_json(path, data)


def read_subject(zk: ZkSession, subject: str) -> SubjectRecord | None:
    try:
        data, version = zk.get_json(subject_path(subject))
    except ZNodeNotFoundError:
        return None
    return SubjectRecord.from_json(data, version)


def subject_names(zk: ZkSession) -> list[str]:
    return [subject_from_znode_name(name) for name in zk.children(SUBJECTS_PATH)]


def read_schema(zk: ZkSession, schema_id: int) -> StoredSchema:
    try:
        data, _version = zk.get_json(schema_id_path(schema_id))
    except ZNodeNotFoundError as exc:
        raise SchemaNotFoundError(f"Schema {schema_id} not found") from exc
    return StoredSchema.from_json(schema_id, data)


def schema_id_for(zk: ZkSession, schema_type: SchemaType, canonical: str, text: str) -> int:
    """The id of this schema: the one it already has (identical schemas share an id), or
    the next id of the counter, taken with the schema and its fingerprint in one
    transaction. VersionConflictError when another node took the id first (retry)."""
    print_path = fingerprint_path(fingerprint(schema_type, canonical))
    with contextlib.suppress(ZNodeNotFoundError):
        data, _version = zk.get_json(print_path)
        return int(data["id"])
    counter, version = zk.get_json(NEXT_ID_PATH)
    schema_id = int(counter["next"])
    txn = zk.transaction()
    txn.set_json(NEXT_ID_PATH, {"version": SCHEMA_VERSION, "next": schema_id + 1}, version)
    txn.create_json(schema_id_path(schema_id), StoredSchema(schema_id, schema_type, text).to_json())
    txn.create_json(print_path, {"version": SCHEMA_VERSION, "id": schema_id})
    _commit(txn)
    return schema_id


def write_subject(zk: ZkSession, record: SubjectRecord) -> SubjectRecord:
    """Create or replace the subject's znode, if nobody wrote it since ``record`` was read
    (``znode_version`` -1: it did not exist); ``record`` as now stored. The conditional
    write succeeded, so its new znode version is known without reading it back (a created
    znode is at 0, each write adds one)."""
    txn = zk.transaction()
    if record.znode_version < 0:
        txn.create_json(subject_path(record.subject), record.to_json())
    else:
        txn.set_json(subject_path(record.subject), record.to_json(), record.znode_version)
    _touch(txn)
    _commit(txn)
    return dataclasses.replace(record, znode_version=record.znode_version + 1)


def delete_subject(zk: ZkSession, record: SubjectRecord) -> None:
    txn = zk.transaction()
    txn.delete(subject_path(record.subject), record.znode_version)
    _touch(txn)
    _commit(txn)


def read_global_level(zk: ZkSession) -> tuple[CompatibilityLevel | None, int]:
    """The global level (None: never set, the default applies) and the znode version."""
    try:
        data, version = zk.get_json(GLOBAL_CONFIG_PATH)
    except ZNodeNotFoundError:
        return None, -1
    return level_from_json(data), version


def write_global_level(zk: ZkSession, level: CompatibilityLevel | None, version: int) -> None:
    txn = zk.transaction()
    if level is None:
        txn.delete(GLOBAL_CONFIG_PATH, version)
    elif version < 0:
        txn.create_json(GLOBAL_CONFIG_PATH, level_to_json(level))
    else:
        txn.set_json(GLOBAL_CONFIG_PATH, level_to_json(level), version)
    _touch(txn)
    _commit(txn)


def _touch(txn: ZkTransaction) -> None:
    txn.set_json(CHANGES_PATH, {"version": SCHEMA_VERSION}, -1)


def _commit(txn: ZkTransaction) -> None:
    """A create that found the znode, or a delete that did not, lost a race like a version
    conflict does: the caller re-reads and tries again."""
    try:
        txn.commit()
    except (ZNodeExistsError, ZNodeNotFoundError) as exc:
        raise VersionConflictError(exc.message) from exc
