"""Writing Parquet files into a stream's table directory through pyarrow's filesystem of the
lake (local disk, S3, GCS, Azure alike), in the lake's file format, split at a row bound.

Compaction tasks and small-file packing write their files with this, never through Spark's
Hadoop file system (whose object-store connectors come from Maven and cannot be assumed).
The format is what delta-rs writes for the exporter: the table's columns (``FILE_SCHEMA``, or
a typed table's own; the partition is only in the directory name), ``timestamp`` as
``TIMESTAMP(MICROS, UTC)``, snappy, column statistics on. An encrypted stream's files are
written with Parquet modular encryption (``crypto``: the ``value`` column under a column key,
the footer plaintext and signed; see ``spark_log.crypto.parquet_kms``), so a rewrite never
turns encrypted values into clear ones.
Each finished file is described for a Delta ``add`` action from what
the writer knows (bytes written, footer), so the store is not asked again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from spark_log.crypto.parquet_kms import ENCRYPTED_COLUMNS, PartitionFileCrypto
from spark_log.errors import LakeError
from spark_log.lake.layout import FILE_SCHEMA, PARTITION_COLUMN
from spark_log.lake.new_file import NewFile, written_file
from spark_log.lake.storage import LakeStorage

COMPRESSION = "snappy"
ROW_GROUP_ROWS = 128 * 1024
"""Rows per Parquet row group: pyarrow's default of 1 Mi rows makes one group per file, and
readers that skip row groups by offset statistics could then skip nothing."""


def conform(rows: pa.Table, schema: pa.Schema = FILE_SCHEMA) -> pa.Table:
    """Lake rows in the table's file ``schema`` (chunks kept): files written by Spark and by
    delta-rs differ in nullability and field metadata only, and a typed table's older files
    lack the columns (and struct fields) later schema versions added, which read as null."""
    columns = [_column(rows, field) for field in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _column(rows: pa.Table, field: pa.Field) -> pa.ChunkedArray:
    if field.name not in rows.column_names:
        return pa.chunked_array([pa.nulls(rows.num_rows, field.type)], field.type)
    return rows.column(field.name).cast(field.type)


class PartitionFileWriter:
    """Writes batches of one partition as files ``partition=<p>/<name>``, starting a new file
    every ``max_rows`` rows; ``name_of(n)`` names the n-th file. ``crypto``: the partition's
    file encryption, for an encrypted stream (None: clear files). ``schema``: the table's
    file columns now (a typed table's are its own, see ``typed_layout``)."""

    def __init__(
        self,
        storage: LakeStorage,
        partition: int,
        name_of: Callable[[int], str],
        max_rows: int,
        crypto: PartitionFileCrypto | None = None,
        schema: pa.Schema = FILE_SCHEMA,
    ) -> None:
        self._schema = schema
        self._fs, root = storage.filesystem()
        self._root = root.rstrip("/")
        self._uri = storage.uri
        self._partition = partition
        self._name_of = name_of
        self._max_rows = max_rows
        self._crypto = crypto
        self._written: list[NewFile] = []
        self._open: tuple[str, pa.NativeFile, pq.ParquetWriter] | None = None
        self._rows_in_file = 0

    @property
    def files(self) -> list[NewFile]:
        """The files finished so far (all of them after ``close``)."""
        return list(self._written)

    def write_all(self, batches: Iterable[pa.RecordBatch]) -> None:
        for batch in batches:
            self.write(batch)

    def write(self, batch: pa.RecordBatch) -> None:
        """Append rows (in the order given), splitting across files at ``max_rows``."""
        self.write_table(pa.Table.from_batches([batch]))

    def write_table(self, rows: pa.Table) -> None:
        """As ``write``, for a table of any chunking: its row groups are ``ROW_GROUP_ROWS``
        rows across chunks (an export's table has a chunk per stored batch, which may hold a
        single record, and a row group per chunk would make the file unreadably slow)."""
        start = 0
        while start < rows.num_rows:
            if self._open is None:
                self._start_file()
            room = self._max_rows - self._rows_in_file
            part = rows.slice(start, room)
            self._writer().write_table(conform(part, self._schema), row_group_size=ROW_GROUP_ROWS)
            self._rows_in_file += part.num_rows
            start += part.num_rows
            if self._rows_in_file >= self._max_rows:
                self._finish_file()

    def close(self) -> list[NewFile]:
        if self._open is not None:
            self._finish_file()
        return self.files

    def relative_paths_started(self) -> list[str]:
        """Every file begun, finished or not (what to delete when the work is dropped)."""
        paths = [f.path for f in self._written]
        if self._open is not None:
            paths.append(self._open[0])
        return paths

    def _writer(self) -> pq.ParquetWriter:
        if self._open is None:
            raise LakeError(f"no file of {self._uri} is open for writing")
        return self._open[2]

    def _start_file(self) -> None:
        relative = f"{PARTITION_COLUMN}={self._partition}/{self._name_of(len(self._written))}"
        try:
            self._make_directory(f"{self._root}/{PARTITION_COLUMN}={self._partition}")
            sink = self._fs.open_output_stream(f"{self._root}/{relative}")
            writer = pq.ParquetWriter(
                sink,
                self._schema,
                compression=COMPRESSION,
                encryption_properties=self._encryption(),
            )
        except (OSError, pa.ArrowException) as exc:
            raise LakeError(f"cannot write {relative} into {self._uri}: {exc}") from exc
        self._open = (relative, sink, writer)
        self._rows_in_file = 0

    def _make_directory(self, path: str) -> None:
        """A local lake needs the partition's directory before its first file (an export's);
        object stores have no directories, and a marker object there would only be litter."""
        if self._fs.type_name == "local":
            self._fs.create_dir(path, recursive=True)

    def _encryption(self) -> pe.FileEncryptionProperties | None:
        """Fresh properties per file: each file gets its own random Parquet data keys."""
        return None if self._crypto is None else self._crypto.encryption_properties()

    def _finish_file(self) -> None:
        if self._open is None:
            return
        relative, sink, writer = self._open
        try:
            writer.close()
            footer = writer.writer.metadata
            size = sink.tell()
            sink.close()
        except (OSError, pa.ArrowException) as exc:
            raise LakeError(f"cannot finish {relative} in {self._uri}: {exc}") from exc
        self._open = None
        encrypted = () if self._crypto is None else ENCRYPTED_COLUMNS
        self._written.append(written_file(relative, self._partition, size, footer, encrypted))
