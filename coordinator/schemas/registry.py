"""The schema registry's rules, Confluent's: subjects, versions, ids, soft and permanent
deletes, compatibility levels and the compatibility check made at registration.

Reads answer from the node's watched cache (every node answers the same); writes are
compare-and-set transactions on ZooKeeper retried on fresh state when another node wrote
first, so two registrations racing through two nodes never share a version number nor skip
the compatibility check against each other. All methods block: call them in a thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from coordinator.errors import VersionConflictError
from coordinator.schemas import store
from coordinator.schemas.cache import LoadedSchema, SchemaCache
from coordinator.schemas.znodes import StoredSchema, SubjectRecord, SubjectVersion
from coordinator.zk import ZkSession
from spark_log.schemas import (
    CompatibilityLevel,
    IncompatibleSchemaError,
    InvalidSchemaError,
    InvalidVersionError,
    ParsedSchema,
    SchemaNotFoundError,
    SchemaType,
    SchemaVersionNotSoftDeletedError,
    SchemaVersionSoftDeletedError,
    SubjectNotFoundError,
    SubjectNotSoftDeletedError,
    SubjectSoftDeletedError,
    VersionNotFoundError,
    check_compatibility,
    parse_schema,
)

WRITE_ATTEMPTS = 20
MAX_VERSION = 2**31 - 1
LATEST = "latest"

T = TypeVar("T")


@dataclass(frozen=True)
class RegisteredVersion:
    """A subject's version with its schema: what GET .../versions/{v} answers."""

    subject: str
    version: int
    schema: StoredSchema

    @property
    def schema_id(self) -> int:
        return self.schema.schema_id


class SchemaRegistry:
    """Confluent's registry semantics over the znodes of ``coordinator.schemas.store``."""

    def __init__(self, zk: ZkSession, cache: SchemaCache) -> None:
        self._zk = zk
        self._cache = cache

    @property
    def cache(self) -> SchemaCache:
        return self._cache

    # -- reads -----------------------------------------------------------------------------

    def subjects(self, *, deleted: bool = False, prefix: str = "") -> list[str]:
        """Subjects with a live version (with ``deleted``: soft-deleted ones too)."""
        return sorted(
            name
            for name, record in self._cache.snapshot.subjects.items()
            if name.startswith(prefix) and (record.live or (deleted and record.versions))
        )

    def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        record = self._existing(subject, deleted=deleted)
        return [v.version for v in (record.versions if deleted else record.live)]

    def soft_deleted_versions(self, subject: str) -> list[int]:
        record = self._existing(subject, deleted=True)
        return [v.version for v in record.versions if v.deleted]

    def version(
        self, subject: str, version: str | int, *, deleted: bool = False
    ) -> RegisteredVersion:
        record = self._existing(subject, deleted=deleted)
        entry = _pick(record, parse_version(version), deleted=deleted)
        return self._registered(subject, entry)

    def schema_by_id(self, schema_id: int) -> StoredSchema:
        return self._cache.schema(schema_id).stored

    def loaded(self, schema_id: int) -> LoadedSchema:
        return self._cache.schema(schema_id)

    def subject_versions_of_id(self, schema_id: int) -> list[tuple[str, SubjectVersion]]:
        """Where an id is registered: (subject, version) pairs, soft-deleted versions
        included (``deleted`` says which)."""
        self._cache.schema(schema_id)  # SchemaNotFoundError for an unknown id
        return sorted(
            (
                (name, v)
                for name, record in self._cache.snapshot.subjects.items()
                for v in record.versions
                if v.schema_id == schema_id
            ),
            key=lambda place: (place[0], place[1].version),
        )

    def lookup(
        self, subject: str, schema_type: str, text: str, *, deleted: bool = False
    ) -> RegisteredVersion:
        """The version of ``subject`` that holds this schema (identical canonical form)."""
        record = self._existing(subject, deleted=deleted)
        parsed = parse_schema(schema_type, text)
        for entry in reversed(record.versions if deleted else record.live):
            if self._same(entry.schema_id, parsed):
                return self._registered(subject, entry)
        raise SchemaNotFoundError("Schema not found")

    def latest_id(self, subject: str) -> int | None:
        """The schema id of the subject's latest live version, from the cache (no I/O)."""
        record = self._cache.snapshot.subjects.get(subject)
        return record.live[-1].schema_id if record is not None and record.live else None

    def registered_under(self, subject: str, schema_id: int) -> bool:
        """Whether ``schema_id`` is a version of ``subject`` (soft-deleted ones count: records
        framed with them were valid when written and stay readable)."""
        record = self._cache.snapshot.subjects.get(subject)
        return record is not None and schema_id in record.schema_ids

    # -- compatibility ---------------------------------------------------------------------

    def level(self, subject: str | None = None) -> CompatibilityLevel:
        """The level that applies to ``subject``: its own, else the global one."""
        snapshot = self._cache.snapshot
        record = snapshot.subjects.get(subject) if subject is not None else None
        if record is not None and record.compatibility is not None:
            return record.compatibility
        return snapshot.default_level

    def subject_level(self, subject: str) -> CompatibilityLevel | None:
        record = self._cache.snapshot.subjects.get(subject)
        return None if record is None else record.compatibility

    def check(
        self, subject: str, schema_type: str, text: str, version: str | int | None = None
    ) -> list[str]:
        """Why ``text`` could not be registered under ``subject``: against one version (in
        the direction the subject's level asks), or, with ``version`` None, against the
        versions its level names. Empty: compatible."""
        parsed = parse_schema(schema_type, text)
        level = self.level(subject)
        record = self._cache.snapshot.subjects.get(subject)
        if version is None:
            return self._problems(level, parsed, record.live if record else ())
        existing = self._existing(subject, deleted=False)
        entry = _pick(existing, parse_version(version), deleted=False)
        return check_compatibility(
            _non_transitive(level), parsed, [self._cache.schema(entry.schema_id).parsed]
        )

    # -- writes ----------------------------------------------------------------------------

    def register(
        self, subject: str, schema_type: str, text: str, references: list[object] | None = None
    ) -> RegisteredVersion:
        """Register ``text`` under ``subject``: the existing version when it is already
        there, else a new version after the compatibility check (IncompatibleSchemaError
        with the reasons)."""
        if references:
            raise InvalidSchemaError("schema references are not supported")
        parsed = parse_schema(schema_type, text)
        return self._retried(lambda: self._register_once(subject, parsed, text))

    def delete_version(self, subject: str, version: str | int, *, permanent: bool) -> int:
        return self._retried(lambda: self._delete_version_once(subject, version, permanent))

    def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        return self._retried(lambda: self._delete_subject_once(subject, permanent))

    def set_level(self, subject: str | None, level: CompatibilityLevel | None) -> None:
        """Set (or, with None, remove) the global level or a subject's own level."""
        if subject is None:
            self._retried(lambda: self._set_global_once(level))
        else:
            self._retried(lambda: self._set_subject_level_once(subject, level))

    # -- internals -------------------------------------------------------------------------

    def _register_once(self, subject: str, parsed: ParsedSchema, text: str) -> RegisteredVersion:
        record = store.read_subject(self._zk, subject) or SubjectRecord(subject)
        for entry in reversed(record.live):
            if self._same(entry.schema_id, parsed):
                return self._registered(subject, entry)
        problems = self._problems(self._level_of(record), parsed, record.live)
        if problems:
            raise IncompatibleSchemaError(problems)
        schema_id = store.schema_id_for(self._zk, parsed.schema_type, parsed.canonical(), text)
        entry = SubjectVersion(record.next_version(), schema_id)
        self._write(dataclasses.replace(record, versions=(*record.versions, entry)))
        return self._registered(subject, entry)

    def _delete_version_once(self, subject: str, version: str | int, permanent: bool) -> int:
        record = self._fresh(subject)
        number = parse_version(version)
        # a named version may be a soft-deleted one (to delete for good, or to say it is);
        # "latest" is the latest live one
        entry = _pick(record, number, deleted=number is not None or permanent)
        if permanent and not entry.deleted:
            raise SchemaVersionNotSoftDeletedError(
                f"Subject '{subject}' Version {entry.version} was not deleted first before "
                "being permanently deleted"
            )
        if not permanent and entry.deleted:
            raise SchemaVersionSoftDeletedError(
                f"Subject '{subject}' Version {entry.version} was soft deleted. Set "
                "permanent=true to delete permanently"
            )
        kept = tuple(
            dataclasses.replace(v, deleted=True) if v == entry and not permanent else v
            for v in record.versions
            if not (permanent and v == entry)
        )
        self._write(dataclasses.replace(record, versions=kept))
        return entry.version

    def _delete_subject_once(self, subject: str, permanent: bool) -> list[int]:
        record = self._fresh(subject)
        if not record.versions:
            raise SubjectNotFoundError(f"Subject '{subject}' not found.")
        if permanent:
            if record.live:
                raise SubjectNotSoftDeletedError(
                    f"Subject '{subject}' was not deleted first before being permanently deleted"
                )
            store.delete_subject(self._zk, record)
            self._cache.remember(None, subject)
            return [v.version for v in record.versions]
        if not record.live:
            raise SubjectSoftDeletedError(
                f"Subject '{subject}' was soft deleted. Set permanent=true to delete permanently"
            )
        versions = tuple(dataclasses.replace(v, deleted=True) for v in record.versions)
        self._write(dataclasses.replace(record, versions=versions))
        return [v.version for v in record.live]

    def _set_global_once(self, level: CompatibilityLevel | None) -> None:
        current, version = store.read_global_level(self._zk)
        if level is None and current is None:
            return
        store.write_global_level(self._zk, level, version)
        self._cache.refresh()

    def _set_subject_level_once(self, subject: str, level: CompatibilityLevel | None) -> None:
        record = store.read_subject(self._zk, subject) or SubjectRecord(subject)
        if level is None and record.compatibility is None:
            return
        self._write(dataclasses.replace(record, compatibility=level))

    def _write(self, record: SubjectRecord) -> None:
        self._cache.remember(store.write_subject(self._zk, record), record.subject)

    def _fresh(self, subject: str) -> SubjectRecord:
        record = store.read_subject(self._zk, subject)
        if record is None:
            raise SubjectNotFoundError(f"Subject '{subject}' not found.")
        return record

    def _existing(self, subject: str, *, deleted: bool) -> SubjectRecord:
        record = self._cache.snapshot.subjects.get(subject)
        if record is None or not (record.versions if deleted else record.live):
            raise SubjectNotFoundError(f"Subject '{subject}' not found.")
        return record

    def _level_of(self, record: SubjectRecord) -> CompatibilityLevel:
        return record.compatibility or self._cache.snapshot.default_level

    def _problems(
        self, level: CompatibilityLevel, parsed: ParsedSchema, live: tuple[SubjectVersion, ...]
    ) -> list[str]:
        existing = [self._cache.schema(v.schema_id).parsed for v in live]
        return check_compatibility(level, parsed, existing) if existing else []

    def _same(self, schema_id: int, parsed: ParsedSchema) -> bool:
        other = self._cache.schema(schema_id).parsed
        return other.schema_type == parsed.schema_type and other.canonical() == parsed.canonical()

    def _registered(self, subject: str, entry: SubjectVersion) -> RegisteredVersion:
        return RegisteredVersion(subject, entry.version, self._cache.schema(entry.schema_id).stored)

    def _retried(self, write: Callable[[], T]) -> T:
        """Run a read-check-write on fresh state until no other node wrote in between
        (the last attempt's VersionConflictError propagates)."""
        for _attempt in range(WRITE_ATTEMPTS - 1):
            try:
                return write()
            except VersionConflictError:
                continue
        return write()


def parse_version(version: str | int) -> int | None:
    """A version number, or None for the latest (``latest`` or -1); InvalidVersionError
    (42202) for anything else, as Confluent's registry answers."""
    text = str(version).strip()
    if text in (LATEST, "-1"):
        return None
    if text.isdigit() and 1 <= int(text) <= MAX_VERSION:
        return int(text)
    raise InvalidVersionError(
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        f'between [1, {MAX_VERSION}] and the string "{LATEST}"'
    )


def _pick(record: SubjectRecord, version: int | None, *, deleted: bool) -> SubjectVersion:
    candidates = record.versions if deleted else record.live
    if version is None:
        if not candidates:
            raise VersionNotFoundError(f"Subject '{record.subject}' has no live version")
        return candidates[-1]
    for entry in candidates:
        if entry.version == version:
            return entry
    raise VersionNotFoundError(f"Version {version} not found.")


def _non_transitive(level: CompatibilityLevel) -> CompatibilityLevel:
    """Checking against one named version: the level's direction, not its reach."""
    return CompatibilityLevel(level.removesuffix("_TRANSITIVE"))


__all__ = ["RegisteredVersion", "SchemaRegistry", "SchemaType", "parse_version"]
