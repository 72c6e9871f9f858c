"""Replacing files of a stream's Delta table in one commit, through delta-rs (the adapter of key
compaction and small-file packing: every deltalake error becomes a typed LakeError here;
blocking calls).

A compaction reads the files of one snapshot, writes their compacted rows as new files, and
commits once: remove exactly the files it read, add the new ones. Two things keep that safe:

- **The snapshot is held from planning to commit.** The commit is written against the version
  the files were listed from, so delta-rs's conflict checker sees every commit since. Exports
  are blind appends of other files; they commit before or after a compaction without
  conflict, and their app transactions are untouched.
- **Every compaction commit carries the stream's compaction app transaction**
  (``compaction_state.compaction_app_id``). delta-rs does not check two removes of the same
  file against each other, so two compactions of one snapshot could otherwise both commit
  (and duplicate the rows they both rewrote); with the app id, the second commit fails with
  ``CommitFailedError`` (LakeCommitConflictError here) and the loser retries from the new
  snapshot. The same check made fresh right before the commit (``changed_since``) also
  catches a remover outside Liftlog (an optimize run by hand) in all but a tiny window.

delta-rs's own ``optimize.compact`` cannot take part in this: it drops the app transactions it
is given (verified with deltalake 1.6.6), and a compaction planned before it would then remove
the files it packed a second time and re-add their rows. Small files are therefore packed by
``packing.pack_small_files`` through this same commit, with the same app id.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction
from deltalake.exceptions import CommitFailedError, TableNotFoundError
from deltalake.transaction import AddAction, RemoveAction

from spark_log.errors import LakeError
from spark_log.json_types import JsonMapping
from spark_log.lake.errors import LakeCommitConflictError
from spark_log.lake.layout import (
    FILE_SCHEMA,
    LAKE_SCHEMA,
    PARTITION_COLUMN,
    ArrowRow,
    app_id,
    file_location,
)
from spark_log.lake.new_file import NewFile
from spark_log.lake.storage import LakeStorage
from spark_log.lake.table import FOREIGN_ERRORS, MAX_COMMIT_RETRIES


@dataclass(frozen=True)
class TableFile:
    """One data file of a snapshot, with what its add action says about it."""

    path: str
    """As the add action names it (relative to the table root): what a remove must name."""
    location: str
    """Where to open it: an absolute path, or a URI for remote tables."""
    partition: int
    size_bytes: int
    records: int | None
    min_offset: int | None
    max_offset: int | None


class RewriteSnapshot:
    """One loaded version of a stream's table: list its files, read its app transactions,
    and commit a replacement of files against exactly this version."""

    def __init__(self, table: DeltaTable, storage: LakeStorage, stream: str) -> None:
        self._table = table
        self.storage = storage
        self.uri = storage.uri
        self.stream = stream

    @classmethod
    def open(cls, storage: LakeStorage, stream: str) -> RewriteSnapshot | None:
        """The table's latest version; None when the table does not exist (nothing exported).
        ``storage`` is the table's URI with the lake's store options."""
        uri = storage.uri
        try:
            options = storage.delta_options()
            if not DeltaTable.is_deltatable(uri, storage_options=options):
                return None
            return cls(DeltaTable(uri, storage_options=options), storage, stream)
        except TableNotFoundError:
            return None
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read the lake table {uri}: {exc}") from exc

    @property
    def version(self) -> int:
        return self._table.version()

    def schema(self) -> pa.Schema:
        """The table's columns in this version (a typed stream's grow with its schema)."""
        try:
            return pa.schema(self._table.schema().to_arrow())
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read the columns of {self.uri}: {exc}") from exc

    def file_schema(self) -> pa.Schema:
        """What a file rewritten into this version holds: every column but the partition's
        (``FILE_SCHEMA``, or a typed table's own columns, which a rewrite must keep)."""
        schema = self.schema()
        if set(schema.names) == set(LAKE_SCHEMA.names):
            return FILE_SCHEMA  # an untyped table's files: exactly as they always were
        return schema.remove(schema.get_field_index(PARTITION_COLUMN))

    def files(self) -> list[TableFile]:
        """Every data file of this version, with partition, size, record count and offsets."""
        try:
            actions = pa.table(self._table.get_add_actions(flatten=True)).to_pylist()
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot list the files of {self.uri}: {exc}") from exc
        return [self._table_file(row) for row in actions]

    def transaction_version(self, app: str) -> int | None:
        try:
            return self._table.transaction_version(app)
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot read app transaction {app} of {self.uri}: {exc}") from exc

    def exported_offset(self, partition: int) -> int | None:
        """The partition's lake offset in this version (None: never exported)."""
        return self.transaction_version(app_id(self.stream, partition))

    def commit_replace(
        self,
        removed: Sequence[TableFile],
        added: Sequence[NewFile],
        transactions: Mapping[str, int],
        metadata: JsonMapping,
        *,
        data_change: bool = True,
    ) -> int:
        """Remove ``removed``, add ``added`` and set ``transactions`` in one commit against this
        version; return the committed table version.

        A key compaction deletes records, so its actions are data changes (Delta streaming
        readers of the table see an update); packing small files only moves rows
        (``data_change=False``, as Delta's OPTIMIZE). A lost race is LakeCommitConflictError:
        nothing was committed, and the new files may be deleted. Any other failure is
        LakeError, and then it is unknown whether the commit landed."""
        now_ms = int(time.time() * 1000)
        actions: list[AddAction | RemoveAction] = [
            RemoveAction(f.path, data_change, now_ms, f.size_bytes, _partition_values(f.partition))
            for f in removed
        ]
        actions.extend(
            AddAction(
                f.path,
                f.size_bytes,
                _partition_values(f.partition),
                f.modification_time_ms,
                data_change,
                f.stats_json,
            )
            for f in added
        )
        properties = CommitProperties(
            custom_metadata=dict(metadata),
            max_commit_retries=MAX_COMMIT_RETRIES,
            app_transactions=[Transaction(app, v) for app, v in transactions.items()],
        )
        try:
            self._table.create_write_transaction(
                actions,
                mode="append",
                schema=self.schema(),  # a typed table's own: never narrowed to LAKE_SCHEMA
                partition_by=[PARTITION_COLUMN],
                commit_properties=properties,
            )
        except CommitFailedError as exc:
            raise LakeCommitConflictError(
                f"the rewrite of {self.stream}'s files lost a commit race: {exc}"
            ) from exc
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"cannot commit the rewrite of {self.stream}'s files: {exc}") from exc
        return self._committed_version(metadata)

    def _committed_version(self, metadata: JsonMapping) -> int:
        """The version the commit got: delta-rs does not return it, and other commits may
        have landed before it, so find it in the history by its metadata."""
        read_version = self._table.version()
        try:
            self._table.update_incremental()
            for entry in self._table.history(self._table.version() - read_version + 1):
                if all(entry.get(k) == v for k, v in metadata.items()):
                    return int(entry["version"])
        except FOREIGN_ERRORS as exc:
            raise LakeError(f"committed, but cannot re-read {self.uri}: {exc}") from exc
        raise LakeError(f"committed, but the commit is not in the history of {self.uri}")

    def _table_file(self, row: ArrowRow) -> TableFile:
        return TableFile(
            path=row["path"],
            location=file_location(self.uri, row["path"]),
            partition=int(row[f"partition.{PARTITION_COLUMN}"]),
            size_bytes=int(row["size_bytes"]),
            records=_int_or_none(row.get("num_records")),
            min_offset=_int_or_none(row.get("min.offset")),
            max_offset=_int_or_none(row.get("max.offset")),
        )


def changed_since(
    storage: LakeStorage, app: str, expected_version: int | None, paths: Sequence[str]
) -> str | None:
    """Why a compaction planned on an older version must not commit, judged on the latest
    version (None: it may). Cheap, and it catches removers that do not carry the app id."""
    uri = storage.uri
    try:
        latest = DeltaTable(uri, storage_options=storage.delta_options())
        version = latest.transaction_version(app)
        present = set(pa.table(latest.get_add_actions(flatten=False)).column("path").to_pylist())
    except FOREIGN_ERRORS as exc:
        raise LakeError(f"cannot re-read the lake table {uri}: {exc}") from exc
    if version != expected_version:
        return f"another compaction committed (run {version}; this one read run {expected_version})"
    gone = [p for p in paths if p not in present]
    if gone:
        return f"{len(gone)} of the files read were removed meanwhile (e.g. {gone[0]})"
    return None


def _partition_values(partition: int) -> dict[str, str | None]:
    return {PARTITION_COLUMN: str(partition)}


def _int_or_none(value: int | None) -> int | None:
    return None if value is None else int(value)
