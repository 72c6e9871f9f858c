"""Where the schema registry keeps its state in ZooKeeper, and the JSON of each znode.

``/v1/schemas/ids/<id>`` holds one schema (written once, never changed or removed, so a
record framed with an id stays readable); ``/v1/schemas/fingerprints/<sha256>`` maps a
schema's canonical form to its id (identical schemas share one id); ``/v1/schemas/next_id``
is the id counter (compare-and-set, so ids only grow); ``/v1/schemas/subjects/<subject>``
holds a subject's versions and its compatibility level; ``/v1/schemas/config`` the global
level; ``/v1/schemas/changes`` is touched by every write so one watch tells a node to re-read.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from coordinator.errors import ZNodeFormatError
from coordinator.znodes import SCHEMA_VERSION, V1
from spark_log.json_types import JsonObject
from spark_log.schemas import CompatibilityLevel, SchemaType

SCHEMAS_PATH = f"{V1}/schemas"
SCHEMA_IDS_PATH = f"{SCHEMAS_PATH}/ids"
FINGERPRINTS_PATH = f"{SCHEMAS_PATH}/fingerprints"
SUBJECTS_PATH = f"{SCHEMAS_PATH}/subjects"
NEXT_ID_PATH = f"{SCHEMAS_PATH}/next_id"
GLOBAL_CONFIG_PATH = f"{SCHEMAS_PATH}/config"
CHANGES_PATH = f"{SCHEMAS_PATH}/changes"
DIRECTORIES = (SCHEMAS_PATH, SCHEMA_IDS_PATH, FINGERPRINTS_PATH, SUBJECTS_PATH)


def subject_znode_name(subject: str) -> str:
    """A subject as one znode name: percent-encoded, so ``/`` and non-ASCII cannot escape
    the directory, and ``.``/``..`` (which ZooKeeper refuses) are encoded too."""
    name = quote(subject, safe="")
    return name.replace(".", "%2E") if name in (".", "..") else name


def subject_from_znode_name(name: str) -> str:
    return unquote(name)


def subject_path(subject: str) -> str:
    return f"{SUBJECTS_PATH}/{subject_znode_name(subject)}"


def schema_id_path(schema_id: int) -> str:
    return f"{SCHEMA_IDS_PATH}/{schema_id}"


def fingerprint(schema_type: SchemaType, canonical: str) -> str:
    """The identity of a schema: its type and canonical form."""
    return hashlib.sha256(f"{schema_type}\n{canonical}".encode()).hexdigest()


def fingerprint_path(print_: str) -> str:
    return f"{FINGERPRINTS_PATH}/{print_}"


@dataclass(frozen=True)
class StoredSchema:
    """One registered schema: its text as first registered and its type."""

    schema_id: int
    schema_type: SchemaType
    schema: str

    def to_json(self) -> JsonObject:
        return {
            "version": SCHEMA_VERSION,
            "schema_type": str(self.schema_type),
            "schema": self.schema,
        }

    @classmethod
    def from_json(cls, schema_id: int, data: Mapping[str, object]) -> StoredSchema:
        _check_version(data, f"schema {schema_id}")
        kind, text = data.get("schema_type"), data.get("schema")
        if (
            not isinstance(kind, str)
            or kind not in SchemaType.__members__
            or not isinstance(text, str)
        ):
            raise ZNodeFormatError(f"schema {schema_id}: needs schema_type and schema strings")
        return cls(schema_id, SchemaType(kind), text)


@dataclass(frozen=True)
class SubjectVersion:
    """A version of a subject: which schema id it is, and whether it was soft-deleted."""

    version: int
    schema_id: int
    deleted: bool = False

    def to_json(self) -> JsonObject:
        return {"version": self.version, "id": self.schema_id, "deleted": self.deleted}


@dataclass(frozen=True)
class SubjectRecord:
    """A subject's versions (oldest first, soft-deleted ones kept until deleted for good)
    and its own compatibility level (None: the global one applies)."""

    subject: str
    versions: tuple[SubjectVersion, ...] = ()
    compatibility: CompatibilityLevel | None = None
    znode_version: int = field(default=-1, compare=False)

    @functools.cached_property
    def live(self) -> tuple[SubjectVersion, ...]:
        return tuple(v for v in self.versions if not v.deleted)

    @functools.cached_property
    def schema_ids(self) -> frozenset[int]:
        """Every id registered under the subject (soft-deleted versions included): the
        leader asks for each framed record of a bound stream."""
        return frozenset(v.schema_id for v in self.versions)

    def next_version(self) -> int:
        """Version numbers only grow, past soft-deleted ones too (as Confluent's)."""
        return max((v.version for v in self.versions), default=0) + 1

    def to_json(self) -> JsonObject:
        return {
            "version": SCHEMA_VERSION,
            "subject": self.subject,
            "versions": [v.to_json() for v in self.versions],
            "compatibility": None if self.compatibility is None else str(self.compatibility),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object], znode_version: int) -> SubjectRecord:
        _check_version(data, "subject")
        subject, raw_versions = data.get("subject"), data.get("versions")
        level = data.get("compatibility")
        if not isinstance(subject, str) or not isinstance(raw_versions, list):
            raise ZNodeFormatError("subject: needs a subject string and a versions list")
        if level is not None and (
            not isinstance(level, str) or level not in CompatibilityLevel.__members__
        ):
            raise ZNodeFormatError(f"subject {subject!r}: unknown compatibility {level!r}")
        versions = tuple(_version_from_json(subject, item) for item in raw_versions)
        compatibility = None if level is None else CompatibilityLevel(level)
        return cls(subject, versions, compatibility, znode_version)


def _version_from_json(subject: str, item: object) -> SubjectVersion:
    if not isinstance(item, Mapping):
        raise ZNodeFormatError(f"subject {subject!r}: a version must be an object")
    version, schema_id, deleted = item.get("version"), item.get("id"), item.get("deleted")
    if not _is_int(version) or not _is_int(schema_id) or not isinstance(deleted, bool):
        raise ZNodeFormatError(f"subject {subject!r}: version entries need version, id, deleted")
    return SubjectVersion(int(version), int(schema_id), deleted)  # type: ignore[arg-type]


def level_to_json(level: CompatibilityLevel) -> JsonObject:
    return {"version": SCHEMA_VERSION, "compatibility": str(level)}


def level_from_json(data: Mapping[str, object]) -> CompatibilityLevel:
    _check_version(data, "schema config")
    level = data.get("compatibility")
    if not isinstance(level, str) or level not in CompatibilityLevel.__members__:
        raise ZNodeFormatError(f"schema config: unknown compatibility {level!r}")
    return CompatibilityLevel(level)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_version(data: Mapping[str, object], what: str) -> None:
    if data.get("version") != SCHEMA_VERSION:
        raise ZNodeFormatError(f"{what}: unsupported znode version {data.get('version')!r}")
