"""The copy of the schema registry each node answers from, kept current by one watch.

Every registry write touches ``/v1/schemas/changes``; its data watch only wakes a refresher
thread (kazoo's thread must not block), which re-reads the subjects and the global level and
swaps in a new immutable snapshot, so every node answers the same within moments and a
request never sees half an update. Schemas by id never change, so each is read once and
kept, parsed, for as long as the node runs: the publish path validates against them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from coordinator.errors import ZNodeFormatError
from coordinator.refresher import Refresher
from coordinator.schemas import store
from coordinator.schemas.znodes import CHANGES_PATH, StoredSchema, SubjectRecord
from coordinator.zk import WatchHandle, ZkSession
from spark_log.errors import UnavailableError
from spark_log.json_types import JsonObject
from spark_log.schemas import CompatibilityLevel, ParsedSchema, parse_schema

log = logging.getLogger("liftlog.schemas")

RESYNC_INTERVAL_S = 30.0
REFRESH_RETRY_S = 1.0
DEFAULT_COMPATIBILITY = CompatibilityLevel.BACKWARD


@dataclass(frozen=True)
class RegistrySnapshot:
    """Subjects by name and the global level (None: never set), as of one read."""

    subjects: Mapping[str, SubjectRecord] = field(default_factory=dict)
    global_level: CompatibilityLevel | None = None
    global_version: int = -1

    @property
    def default_level(self) -> CompatibilityLevel:
        return self.global_level or DEFAULT_COMPATIBILITY


@dataclass(frozen=True)
class LoadedSchema:
    """A schema as stored and as parsed (parsing Avro costs more than a lookup)."""

    stored: StoredSchema
    parsed: ParsedSchema


class SchemaCache:
    """This node's view of the registry, and its schemas by id."""

    def __init__(self, zk: ZkSession) -> None:
        self._zk = zk
        self._snapshot: RegistrySnapshot | None = None
        self._schemas: dict[int, LoadedSchema] = {}
        self._schemas_lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._handle: WatchHandle | None = None
        self._refresher = Refresher(
            "schema-cache", self.refresh, RESYNC_INTERVAL_S, REFRESH_RETRY_S
        )

    @property
    def snapshot(self) -> RegistrySnapshot:
        """The registry as last read; UnavailableError until the first read completed (an
        empty registry would answer 404s and let unvalidated records through)."""
        snapshot = self._snapshot
        if snapshot is None:
            raise UnavailableError("the schema registry is still loading; retry shortly")
        return snapshot

    def start(self) -> None:
        """Read everything once (blocking), then watch; call from a thread, not the loop."""
        store.ensure_layout(self._zk)
        self.refresh()
        self._handle = self._zk.watch_data(CHANGES_PATH, self._on_change)
        self._refresher.start()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._refresher.stop()

    def cached(self, schema_id: int) -> LoadedSchema | None:
        """The schema if this node has read it already (never blocks)."""
        return self._schemas.get(schema_id)

    def schema(self, schema_id: int) -> LoadedSchema:
        """The schema with this id (SchemaNotFoundError if none); read once, then kept."""
        loaded = self._schemas.get(schema_id)
        if loaded is not None:
            return loaded
        stored = store.read_schema(self._zk, schema_id)
        loaded = LoadedSchema(stored, parse_schema(stored.schema_type, stored.schema))
        with self._schemas_lock:
            return self._schemas.setdefault(schema_id, loaded)

    def refresh(self) -> None:
        with self._refresh_lock:
            self._snapshot = self._read()

    def remember(self, record: SubjectRecord | None, subject: str) -> None:
        """Apply a write this node just made (so it reads its own writes at once); the
        refresher's next read is authoritative either way."""
        with self._refresh_lock:
            before = self.snapshot
            subjects = dict(before.subjects)
            if record is None:
                subjects.pop(subject, None)
            else:
                subjects[subject] = record
            self._snapshot = RegistrySnapshot(subjects, before.global_level, before.global_version)

    def _read(self) -> RegistrySnapshot:
        subjects: dict[str, SubjectRecord] = {}
        for name in store.subject_names(self._zk):
            try:
                record = store.read_subject(self._zk, name)
            except ZNodeFormatError as exc:
                log.error("ignoring unreadable schema subject %r: %s", name, exc.message)
                continue
            if record is not None:
                subjects[name] = record
        level, version = store.read_global_level(self._zk)
        return RegistrySnapshot(subjects, level, version)

    def _on_change(self, _data: JsonObject | None, _version: int | None) -> bool:
        """kazoo's thread: only wake the refresher."""
        self._refresher.wake()
        return not self._refresher.stopped
