"""A stream's Delta table through delta-rs: the one module that imports deltalake, so every
deltalake error becomes a typed LakeError here (blocking calls: run them in an executor).

An export is a compare-and-set on the partition's Delta app transaction. The exporter loads a
snapshot, reads the partition's txn version (the first offset not yet in the lake) and
commits only if it equals the start of its range; the commit carries the new version. The
check alone would race, but delta-rs closes the race: a commit is written against the
snapshot it was prepared on, and if other commits landed since, its conflict checker rejects
it when any of them carries a txn for the same app id (``CommitFailedError: Concurrent
transaction failed``) while it lets blind appends of other partitions through. So between the
check and the commit nobody else can have moved the version unnoticed, and two exporters of
one partition (an old and a new leader) can never both commit the same range. This relies on
the store's atomic put-if-absent for ``_delta_log`` entries (local files, HDFS, Azure, GCS;
S3 with conditional puts or a locking provider configured for delta-rs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, RemoveAction

from spark_log.errors import LakeError, NotLeaderError
from spark_log.json_types import JsonMapping
from spark_log.lake.compaction_state import CompactionState, read_compaction_state
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.layout import LAKE_SCHEMA, PARTITION_COLUMN, app_id
from spark_log.lake.storage import LakeStorage

if TYPE_CHECKING:
    from spark_log.lake.new_file import NewFile

# Commits of other partitions that land first only make a commit retry at the next version;
# with many partitions exporting to one table at once that can take more than delta-rs's
# default of 15 attempts.
MAX_COMMIT_RETRIES = 100
MIN_OFFSET_STAT = "min.offset"
"""The flattened add-action column holding a file's smallest offset."""
FOREIGN_ERRORS = (DeltaError, OSError, ValueError, TypeError, pa.ArrowException)
"""What deltalake and pyarrow raise for an unreadable or uncommittable table."""


class LakeTable:
    """The Delta table of one stream incarnation (see ``layout.table_uri``)."""

    def __init__(self, uri: str, stream: str, storage: LakeStorage | None = None) -> None:
        """``storage``: the lake's store options (``lake_storage(config).at(uri)``); None for a
        local table."""
        self.uri = uri
        self.stream = stream
        self._options = (storage or LakeStorage(uri)).at(uri).delta_options()

    def ensure_exists(self, schema: pa.Schema = LAKE_SCHEMA) -> None:
        """Create the table (``schema``: LAKE_SCHEMA, or a typed stream's base columns;
        partitioned by ``partition``) unless it exists.

        Several leaders may try at once: a creator that loses the race finds the table made."""
        try:
            if _is_table(self.uri, self._options):
                return
            DeltaTable.create(
                self.uri,
                schema,
                partition_by=[PARTITION_COLUMN],
                mode="ignore",
                name=self.stream,
                description=f"Liftlog stream {self.stream}",
                storage_options=self._options,
            )
        except CommitFailedError as exc:
            if not _is_table(self.uri, self._options):
                raise LakeError(f"cannot create the lake table {self.uri}: {exc}") from exc
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot create the lake table {self.uri}: {exc}") from exc

    def snapshot(self) -> LakeSnapshot:
        """The table's latest version."""
        try:
            return LakeSnapshot(DeltaTable(self.uri, storage_options=self._options), self.stream)
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read the lake table {self.uri}: {exc}") from exc

    def exported_offsets(self, partitions: int) -> dict[int, int | None]:
        """Each partition's lake offset per the table (None: never exported, or no table)."""
        snapshot = self._existing()
        if snapshot is None:
            return dict.fromkeys(range(partitions))
        return {p: snapshot.exported_offset(p) for p in range(partitions)}

    def first_offsets(self, partitions: int) -> dict[int, int | None]:
        """Each partition's smallest offset in the table (None: no file, or no table)."""
        snapshot = self._existing()
        if snapshot is None:
            return dict.fromkeys(range(partitions))
        return {p: snapshot.first_offset(p) for p in range(partitions)}

    def compaction_state(self, partitions: int) -> CompactionState | None:
        """What the key compactions of the table left (None: no table): how far each
        partition is compacted, and when the last run committed."""
        snapshot = self._existing()
        if snapshot is None:
            return None
        return read_compaction_state(snapshot.transaction_version, self.stream, partitions)

    def _existing(self) -> LakeSnapshot | None:
        """The latest version, or None when there is no table (opened once: see
        ``_is_table`` for why a table is found by opening it)."""
        try:
            return LakeSnapshot(DeltaTable(self.uri, storage_options=self._options), self.stream)
        except TableNotFoundError:
            return None
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read the lake table {self.uri}: {exc}") from exc


class LakeSnapshot:
    """One loaded version of the table: read a partition's lake offset, commit against it."""

    def __init__(self, table: DeltaTable, stream: str) -> None:
        self._table = table
        self.stream = stream

    @property
    def version(self) -> int:
        return self._table.version()

    def arrow_schema(self) -> pa.Schema:
        """The table's columns in this version (a typed stream's grow with its schema)."""
        try:
            return pa.schema(self._table.schema().to_arrow())
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read the columns of {self.stream}'s table: {exc}") from exc

    def exported_offset(self, partition: int) -> int | None:
        """The partition's app-transaction version: the first offset not in the lake."""
        try:
            return self._table.transaction_version(app_id(self.stream, partition))
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read the lake offset of partition {partition}: {exc}") from exc

    def transaction_version(self, app: str) -> int | None:
        """The version of app transaction ``app`` in this snapshot (None: never committed)."""
        try:
            return self._table.transaction_version(app)
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read app transaction {app} of {self.stream}: {exc}") from exc

    def first_offset(self, partition: int) -> int | None:
        """The smallest offset the partition's files hold (None: no file), from the add
        actions' statistics; a file without statistics counts from offset 0."""
        try:
            actions = pa.table(self._table.get_add_actions(flatten=True))
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot list the lake files of partition {partition}: {exc}") from exc
        if actions.num_rows == 0 or MIN_OFFSET_STAT not in actions.column_names:
            return None if actions.num_rows == 0 else 0
        parts = pc.cast(actions[f"{PARTITION_COLUMN}.{PARTITION_COLUMN}"], pa.int64())
        mins = pc.fill_null(actions[MIN_OFFSET_STAT], 0).filter(pc.equal(parts, partition))
        smallest = pc.min(mins).as_py()
        return None if smallest is None else int(smallest)

    def append(
        self,
        data: pa.Table,
        partition: int,
        end_offset: int,
        still_allowed: Callable[[], bool],
        metadata: JsonMapping,
        *,
        merge_schema: bool = False,
    ) -> int:
        """Append ``data`` and move the partition's txn version to ``end_offset`` in one commit,
        against this snapshot (whose version the caller checked); return the new table version.
        ``merge_schema``: ``data`` brings new columns (a typed stream's schema change), which
        the same commit appends to the table's schema.

        ``still_allowed`` is asked last, immediately before the write: a deposed leader stops
        here. A concurrent commit of the same partition since this snapshot fails the commit
        (LakeCommitConflictError), and the version is read back from the committed snapshot.
        """
        properties = self._export_properties(partition, end_offset, still_allowed, metadata)
        with self._committing(partition, end_offset):
            write_deltalake(
                self._table,
                data,
                mode="append",
                schema_mode="merge" if merge_schema else None,
                commit_properties=properties,
            )
        return self._committed(partition, end_offset)

    def append_files(
        self,
        files: Sequence[NewFile],
        partition: int,
        end_offset: int,
        still_allowed: Callable[[], bool],
        metadata: JsonMapping,
    ) -> int:
        """As ``append``, for files already written into the table's directory (an encrypted
        stream's, which delta-rs cannot write): one commit adds them and moves the txn version,
        with the same checks, so the exporter's compare-and-set is the same for both."""
        properties = self._export_properties(partition, end_offset, still_allowed, metadata)
        actions: list[AddAction | RemoveAction] = [
            AddAction(
                f.path,
                f.size_bytes,
                {PARTITION_COLUMN: str(f.partition)},
                f.modification_time_ms,
                True,
                f.stats_json,
            )
            for f in files
        ]
        with self._committing(partition, end_offset):
            self._table.create_write_transaction(
                actions,
                mode="append",
                schema=LAKE_SCHEMA,
                partition_by=[PARTITION_COLUMN],
                commit_properties=properties,
            )
            self._table.update_incremental()  # unlike write_deltalake, not done by the commit
        return self._committed(partition, end_offset)

    def _export_properties(
        self,
        partition: int,
        end_offset: int,
        still_allowed: Callable[[], bool],
        metadata: JsonMapping,
    ) -> CommitProperties:
        """The commit's txn and metadata; asked last before the commit, so a deposed leader
        (``still_allowed`` false) stops here."""
        if not still_allowed():
            raise NotLeaderError(f"no longer allowed to export {self.stream}/{partition}")
        return CommitProperties(
            custom_metadata={"liftlog": dict(metadata)},
            max_commit_retries=MAX_COMMIT_RETRIES,
            app_transactions=[Transaction(app_id(self.stream, partition), end_offset)],
        )

    @contextmanager
    def _committing(self, partition: int, end_offset: int) -> Iterator[None]:
        """deltalake's errors of an export commit as typed ones."""
        app = app_id(self.stream, partition)
        try:
            yield
        except CommitFailedError as exc:
            raise LakeCommitConflictError(
                f"commit of {app} up to {end_offset} lost: {exc}"
            ) from exc
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot commit {app} up to {end_offset}: {exc}") from exc

    def _committed(self, partition: int, end_offset: int) -> int:
        """The table version after an export commit, once the txn version says it landed."""
        committed = self.exported_offset(partition)
        if committed != end_offset:
            raise LakeCommitConflictError(
                f"after committing {app_id(self.stream, partition)} up to {end_offset} "
                f"the table says {committed}"
            )
        return self.version


def _is_table(uri: str, options: dict[str, str]) -> bool:
    """Whether the table exists, found by opening it: ``DeltaTable.is_deltatable`` holds the
    GIL while it waits on the store, so an object store that stops answering (SIGSTOP, a
    partition) would freeze every thread of the process (a node's event loop included)
    until the store's own timeouts; opening the table waits without it."""
    try:
        DeltaTable(uri, storage_options=options)
    except TableNotFoundError:
        return False
    except FOREIGN_ERRORS as exc:
        raise LakeError(f"cannot reach the lake table {uri}: {exc}") from exc
    return True
