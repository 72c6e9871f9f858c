"""Executor side: a typed read's source rows (lake or tail) as output batches.

Lake rows of a typed table already have the columns; tail rows (and lake rows written before
the stream was bound) still carry the raw value, and go through ``typed_rows``, the function
the lake export types its rows with, against the read's planned layout: so a tail row and the
same record exported later come out identical. A value of a schema version registered after
the query was planned is decoded too; columns that version added are left out (the query keeps
its schema), and a version that would change a column's type fails the task clearly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from datasource.errors import CorruptRecordsError, SchemaChangedError
from datasource.tasks import ReadSettings
from datasource.typed_lookup import RegistrySchemas, process_registry
from datasource.typed_plan import TypedRead
from datasource.typed_schema import typed_arrow_schema
from spark_log.lake.layout import LAKE_SCHEMA
from spark_log.lake.typed_export import typed_rows
from spark_log.lake.typed_layout import SCHEMA_ID_COLUMN
from spark_log.log.batch import HEADERS_TYPE
from spark_log.schemas.layout_errors import IncompatibleLayoutError, UnsupportedSchemaError

PARTITION = "partition"


def typed_output(
    source: Iterable[pa.RecordBatch], settings: ReadSettings, typed: TypedRead, partition: int
) -> Iterator[pa.RecordBatch]:
    """Every non-empty source batch in the read's typed columns, the row filter applied."""
    schema = typed_arrow_schema(typed, settings.include_headers)
    lookup = RegistrySchemas(
        process_registry(settings.servers, settings.credentials), typed.schema_ids
    )
    for rows in source:
        if rows.num_rows == 0:
            continue
        table = _typed_table(rows, typed, partition, lookup)
        batch = settings.rows.apply(project(table, schema))
        if batch.num_rows:
            yield batch


def _typed_table(
    rows: pa.RecordBatch, typed: TypedRead, partition: int, lookup: RegistrySchemas
) -> pa.Table:
    """``rows`` with the typed columns: as they are when a typed lake file gave them (its
    partition is in the file's directory)."""
    if SCHEMA_ID_COLUMN in rows.schema.names:
        table = pa.Table.from_batches([rows])
        if PARTITION not in table.column_names:
            table = table.append_column(PARTITION, _partition_column(partition, rows.num_rows))
        return table
    try:
        return typed_rows(
            lake_rows(rows, partition),
            typed.table_schema,
            typed.subject,
            typed.keep_raw_value,
            lookup,
        ).table
    except (IncompatibleLayoutError, UnsupportedSchemaError) as exc:
        raise SchemaChangedError(
            f"records of subject {typed.subject!r} no longer fit this query's columns: "
            f"{exc.message}; start a new query (a new checkpoint for a streaming one), or read "
            "with valueFormat=binary"
        ) from exc


def lake_rows(rows: pa.RecordBatch, partition: int) -> pa.Table:
    """Fetched (or untyped lake) rows in the lake's own columns and types."""
    count = rows.num_rows
    names = rows.schema.names
    columns: list[pa.Array] = []
    for field in LAKE_SCHEMA:
        if field.name == PARTITION:
            columns.append(_partition_column(partition, count))
        elif field.name in names:
            columns.append(rows.column(field.name).cast(field.type))
        elif field.name == "headers":
            columns.append(pa.nulls(count, HEADERS_TYPE))
        else:
            raise CorruptRecordsError(f"records of partition {partition} lack {field.name!r}")
    return pa.Table.from_arrays(columns, schema=LAKE_SCHEMA)


def _partition_column(partition: int, count: int) -> pa.Array:
    return pa.array(np.full(count, partition, dtype=np.int32))


def project(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    """``table`` as one batch of exactly ``schema``: its columns cast by name, those it lacks
    (a file older than a column) null; a null in a column every record has is corruption."""
    arrays: list[pa.Array] = []
    for field in schema:
        index = table.schema.get_field_index(field.name)
        if index < 0:
            column: pa.Array = pa.nulls(table.num_rows, field.type)
        else:
            column = table.column(index).combine_chunks()
            if column.type != field.type:
                column = column.cast(field.type)
        if not field.nullable and column.null_count:
            raise CorruptRecordsError(
                f"column {field.name!r} has {column.null_count} null(s) but every record has one"
            )
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
