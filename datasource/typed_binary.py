"""Executor side: a binary read's ``value`` for rows of a typed lake table.

A bound stream's lake table keeps the value as typed columns, and its raw bytes only when the
binding asks. A binary read (``valueFormat=binary``) of such rows serialises their typed
columns again with the schema id each row was decoded with, in Confluent's wire format: Avro's
binary encoding is deterministic, so an Avro value comes back as the bytes published, and a
value published as plain JSON comes back framed. A value that did not decode is its kept
bytes, a tombstone stays empty.
"""

from __future__ import annotations

import pyarrow as pa

from datasource.errors import CorruptRecordsError
from datasource.typed_datum import row_datums, value_columns
from spark_log.client.schema_registry import RegistryClient
from spark_log.errors import LiftlogError
from spark_log.lake.typed_layout import INVALID_VALUE_COLUMN, RAW_VALUE_COLUMN, SCHEMA_ID_COLUMN
from spark_log.schemas import frame


def with_raw_values(rows: pa.RecordBatch, registry: RegistryClient) -> pa.RecordBatch:
    """``rows`` of a typed lake file with their ``value`` column (as they are when the file
    has it)."""
    names = rows.schema.names
    if RAW_VALUE_COLUMN in names or SCHEMA_ID_COLUMN not in names:
        return rows
    schema_ids = rows.column(SCHEMA_ID_COLUMN).to_pylist()
    invalid = rows.column(INVALID_VALUE_COLUMN).to_pylist()
    datums = row_datums(rows, value_columns(rows.schema))
    values: list[bytes] = []
    for schema_id, kept, datum in zip(schema_ids, invalid, datums, strict=True):
        if schema_id is None:
            values.append(kept or b"")
            continue
        try:
            values.append(frame(schema_id, registry.parsed_by_id(schema_id).encode(datum)))
        except LiftlogError as exc:
            raise CorruptRecordsError(
                f"a typed lake row of schema id {schema_id} cannot be serialised again: "
                f"{exc.message}; read the stream with valueFormat=typed"
            ) from exc
    return rows.append_column(RAW_VALUE_COLUMN, pa.array(values, pa.binary()))
